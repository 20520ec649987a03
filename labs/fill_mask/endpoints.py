"""Fill in the blank's API endpoint (labs.core.work.endpoints: app.py registers it, docs/api.md is written from it)."""

from __future__ import annotations

from labs.core.work.endpoints import Endpoint
from labs.fill_mask import compute

ENDPOINTS = (
    Endpoint("fill_mask", compute.fill_mask_json,
             "fill_mask(text, model, top_k) -> {model, source, tokens, masks: [{index, predictions: [{token, "
             "token_id, prob}]}]}"),
)
