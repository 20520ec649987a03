"""Pre-training's API endpoints (labs.core.work.endpoints: app.py registers them, docs/api.md is written from them)."""

from __future__ import annotations

from labs.core.work.endpoints import Endpoint
from labs.pretraining import (
    bart_noise,
    c4_rules,
    curation,
    electra,
    lr_schedule,
    mask_rate,
    nsp,
    objectives,
    span_corruption,
)
from labs.pretraining import why_80_10_10 as why

ENDPOINTS = (
    Endpoint("pretraining_examples", objectives.pretraining_examples_json,
             "pretraining_examples(text, text_b, model_masked, model_causal, model_seq2seq, seed) -> {seed, gpt, mlm, "
             "nsp, t5, electra, notes}: each objective's training example (tokens, ids, targets/labels, positions, signal)"),
    Endpoint("replaced_token_detection", electra.replaced_token_detection_json,
             "replaced_token_detection(text, model_generator, model_discriminator, seed) -> {tokens, positions, "
             "generator_input_tokens, sampled_tokens, labels (1 = replaced), p_replaced, discriminator_accuracy, signal, "
             "notes}: ELECTRA's generator and discriminator on one text (null where not measured here)"),
    Endpoint("nsp", nsp.nsp_json, "nsp(sentence_a, sentence_b, model) -> {tokens, ids, segment_ids, p_is_next, logits}"),
    Endpoint("nsp_accuracy", nsp.nsp_accuracy_json,
             "nsp_accuracy(model, seed) -> {pairs, accuracy_random, accuracy_swapped, mean_p_is_next, examples}"),
    Endpoint("span_corruption", span_corruption.span_corruption_json,
             "span_corruption(text, model, noise_density, mean_span_length, seed) -> {input_tokens, target_tokens, "
             "spans: [{start, end, text, sentinel}], filled: [{sentinel, predicted, original, bert}]}"),
    Endpoint("mask_rate", mask_rate.mask_rate_json,
             "mask_rate(text, model, rates, span, seeds) -> {model, span, rates, points: [{rate, accuracy, loss, "
             "masked_tokens, by_seed}], passes, note, published}"),
    Endpoint("why_80_10_10", why.why_80_10_10_json,
             "why_80_10_10(text, model, seed) -> {model, measured, conditions: [{name, what, positions, loss, accuracy}], "
             "example, notes, why, course}: the same chosen tokens as [MASK], random, kept; and the rest with no [MASK]"),
    Endpoint("bart_noise", bart_noise.bart_noise,
             "bart_noise(text, transform, seed, model) -> {transform, tokenizer, original_tokens, noised_tokens, "
             "original_ids, noised_ids, fate, details, reconstruction: {model, text, loss, exact} or null, note}"),
    Endpoint("curate", curation.curate_json,
             "curate(documents, near_duplicate_threshold, perplexity_limit, perplexity_floor, model, language_filter, "
             "language_threshold, offensive_filter, offensive_threshold) -> {documents: [{number, text, words, kept, "
             "step, reason, perplexity, tokens, language, language_probability, offensive_probability}], "
             "near_duplicates: [{document, of, minhash_jaccard, exact_jaccard}], counts: [{step, in, removed, out}], "
             "kept, limits, language_threshold, offensive_threshold}: exact and MinHash near-duplicate removal, "
             "heuristic filters, py3langid's language identification and profanity-check's offensive-language "
             "classifier (each when its filter is true) and a perplexity filter on a corpus (\"\": the built-in one)"),
    Endpoint("c4", c4_rules.c4_clean_json,
             "c4(pages, rules, language_threshold, bad_word_probability) -> {pages: [{number, text, lines, kept, rule, "
             "reason, sentences, language, language_probability, cleaned}], removed: [{page, rule, text, of}], "
             "counts: [{rule, unit, pages_in, removed, pages_removed, pages_out}], kept, bad_words, limits}: C4's "
             "cleaning rules (Raffel et al. 2020) as named steps on web-like pages (\"\": LM Lab's own)"),
    Endpoint("lr_schedule", lr_schedule.lr_schedule_json,
             "lr_schedule(schedule, peak_lr, warmup_steps, total_steps) -> {schedule, scheduler, optimizer, "
             "optimizer_repr, steps, lr, stepped_steps, stepped_lr, parameter, notes}: BERT's or GPT-3's "
             "learning-rate schedule from transformers' own scheduler on a real torch AdamW"),
)
