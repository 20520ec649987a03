"""Attention's API endpoints (labs.core.work.endpoints: app.py registers them, docs/api.md is written from them)."""

from __future__ import annotations

from labs.attention import compute, cost, long_document, steps
from labs.core.work.endpoints import Endpoint

ENDPOINTS = (
    Endpoint("forward_steps", steps.forward_steps_json,
             "forward_steps(text, model, layer, head, text_b, position) -> {model, architecture, tokens, ids, segments, "
             "layer, head, position, sizes, steps: [{key, name, formula, shape, row, check}], scores, scaled_scores, "
             "attention, attention_unscaled, predictions, prediction_check, prediction_note, notes}"),
    Endpoint("attention_cost", cost.attention_cost_json,
             "attention_cost(model) -> {model, architecture, layers, heads, hidden, intermediate, device, threads, "
             "points: [{tokens, forward_ms, projections_ms, attention_ms, ffn_ms, attention_bytes, ffn_bytes, "
             "attention_flops, ffn_flops}], limit: {positions, kind, tried_tokens, error, truncated_to, note}}",
             # One measurement at a time, with the tab's Measure button: timings that overlap would time each other.
             concurrency_id="attention_cost", concurrency_limit=1),
    Endpoint("long_document", long_document.long_document_json,
             "long_document(text, model, strategy) -> {model, tokens, limit, whole_error, readings: [{strategy, spans, "
             "tokens_read, verdict: {cos_positive, cos_negative, margin, label}, chunks}], classifier, course}"),
    Endpoint("attention", compute.attention_result,
             "Attention of one layer and head for a text (or pair), with every head's entropy and pattern label; "
             "for an encoder-decoder, part = encoder, decoder or cross, and the decoder's tokens and attention."),
)
