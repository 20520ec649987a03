"""Next token's API endpoints (labs.core.work.endpoints: app.py registers them, docs/api.md is written from them)."""

from __future__ import annotations

from labs.core.work.endpoints import Endpoint
from labs.next_token import beam_tree, compute, generation, inside, ngram
from labs.next_token.generation import GENERATING

ENDPOINTS = (
    # The API takes the full ranges (temperature up to 5), beyond the sliders' lecture range.
    Endpoint("next_token", compute.next_token_json,
             "next_token(prompt, model, temperature, top_k, top_p) -> {model, source, prompt_tokens, entropy, "
             "distribution: [{token, token_id, logit, prob, kept}]}"),
    # Generations share one limit with the tab's Generate and Compare buttons (concurrency id "generate").
    Endpoint("generate", generation.generate_json,
             "generate(prompt, model, strategy, max_new_tokens, temperature, top_k, top_p, num_beams, seed) -> "
             "{model, strategy, completions: [{text, score}], note}", concurrency_id="generate",
             concurrency_limit=GENERATING),
    Endpoint("score", inside.score_json, "score(text, model) -> {model, source, tokens, token_ids, logprobs, "
             "total_logprob, mean_loss, perplexity}"),
    Endpoint("logit_lens", inside.logit_lens_json, "logit_lens(text, model, top_k) -> {model, source, tokens, "
             "position, layers: [{layer, top: [{token, token_id, prob}], final_token_prob, final_token_rank}]}"),
    Endpoint("beam_tree", beam_tree.beam_tree_json, "beam_tree(prompt, model, num_beams, max_new_tokens) -> "
             "{model, nodes: [{id, parent, step, token, token_id, logprob, status}], beams: [{text, score}]}",
             concurrency_id="generate"),
    # Trains (cached) and scores both models' held-out reviews on the first call: a few seconds, then cached.
    Endpoint("ngram", ngram.ngram_json, "ngram(text) -> {corpus, model, train_reviews, held_out_reviews, "
             "perplexities: {ngram_per_word, smollm2_per_token, smollm2_per_word, ngram_per_known_word, "
             "smollm2_per_known_word}, words: [{word, ngram_p, smollm2_p, context_seen, backed_off_to, oov}]}"),
)
