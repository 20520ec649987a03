"""Masks' API endpoint (labs.core.work.endpoints: app.py registers it, docs/api.md is written from it)."""

from __future__ import annotations

from labs.core.work.endpoints import Endpoint
from labs.masks import cheating, compute

ENDPOINTS = (
    Endpoint("masks", compute.masks_result,
             "masks(text, encoder_model, causal_model) -> {tokens, bidirectional, causal, connections, real: {encoder, "
             "causal}}"),
    Endpoint("cheating", cheating.cheating_json,
             "cheating(prompt, corpus, steps, seed, new_chars) -> {corpus, model, steps, seed, training_seconds, "
             "unigram_loss, uniform_loss, prompt, prompt_characters, models: {masked, cheater: {mask, train_losses, "
             "train, held_out: {as_trained, causal_mask, future_cut}, attention: [[{next, future}]], generation, "
             "prompt_attention, future_change}}}"),
)
