"""Choosing a model's API endpoints (labs.core.work.endpoints: app.py registers them, docs/api.md is written
from them)."""

from __future__ import annotations

from labs.choosing import architectures, bias, cards, course, distillation, domains, features, few_shot, qa_check
from labs.choosing import t5_prefixes as t5
from labs.choosing import temperature as dt
from labs.core.work.endpoints import Endpoint

ENDPOINTS = (
    Endpoint("distillation", distillation.distillation_api,
             "distillation(text, teacher, student) -> {blanks: [{sentence, teacher_word, teacher_prob, student_word, "
             "student_prob, agree, kl}], agreement, mean_kl, speedup, size_ratio, ...}"),
    Endpoint("distill_temperature", dt.distill_temperature,
             "distill_temperature(text, temperatures, teacher, student, alpha, beta, gamma) -> {sentence, answer, "
             "measured, words, ce, cos, by_temperature: [{T, teacher, student, kl, distill, loss, ...}], stand_in, note}"),
    Endpoint("t5_text_to_text", t5.t5_text_to_text,
             "t5_text_to_text(prefix, text, model, max_new_tokens) -> {model, prefix, text, input_text, input_ids, "
             "input_tokens, output_ids, output_tokens, output_text, settings, stopped, note, call}"),
    Endpoint("check_course", course.check_course, "check_course(row) -> {rows: [{id, topic, document, where, quote, "
             "lab, verdict, measured, measured_with, note}], documents}: the course's examples quoted and checked"),
    Endpoint("model_card", cards.model_card, "model_card(names, measure) -> {online, latency_text, models: [{name, "
             "family, layers, hidden_size, heads, vocab_size, tokenizer, params, embedding_params, other_params, "
             "objective, latency_ms, ...}]}"),
    Endpoint("architecture_specs", architectures.architecture_specs,
             "architecture_specs(group, tokens) -> {group, label, tokens, rows: [{name, family, layers, hidden, "
             "params, params_by_part, course_params, course_ratio, flops, gflops_per_token, block_order, norm, "
             "matrices, with_bias, positions, layer_weights, layers_run, factorised}], quotes}"),
    Endpoint("few_shot", few_shot.few_shot_api, "few_shot(model, shots, labels, seeds) -> {labels, label_tokens, "
             "curve: [{shots, accuracy, by_seed, min, max}], example: {prompt, probs, predicted, gold}}"),
    Endpoint("bias_probe", bias.bias_probe, "bias_probe(model, template) -> {template, read_as, rows: [{occupation, "
             "p_he, p_she, p_they, log_ratio}], what_it_shows}"),
    Endpoint("domain_shift", domains.domain_shift_api, "domain_shift(model, text) -> {domains: [{domain, perplexity, "
             "tokens, texts}], yours}"),
    Endpoint("features", features.features_api, "features(text) -> {text, reviews, labels, folds, classifier, "
             "baseline, encoder, decoder, sizes, rows: [{key, model, pooling, what, width, accuracy, by_fold, verdict, "
             "p_positive}]}"),
    Endpoint("qa_span", qa_check.qa_api, "qa_span(question, context) -> {model, trained, tokens, parts, start_index, "
             "end_index, start_char, end_char, answer, score, p_start, p_end, course_start, course_end, "
             "course_tokens, note}"),
)
