"""Masks' API endpoint (labs.core.work.endpoints: app.py registers it, docs/api.md is written from it)."""

from __future__ import annotations

from labs.core.work.endpoints import Endpoint
from labs.masks import compute

ENDPOINTS = (
    Endpoint("masks", compute.masks_result,
             "masks(text, encoder_model, causal_model) -> {tokens, bidirectional, causal, connections, real: {encoder, "
             "causal}}"),
)
