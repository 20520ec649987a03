"""Tokens' API endpoints (labs.core.work.endpoints: app.py registers them, docs/api.md is written from them)."""

from __future__ import annotations

from labs.core.work.endpoints import Endpoint
from labs.tokens import bpe, compute

ENDPOINTS = (
    Endpoint("tokenize", compute.tokenize_json,
             "tokenize(text, models) -> {tokenizers: [{model, algorithm, marks, vocab_size, tokens, ids, special, "
             "chars_per_token}]}; models: a list of names, empty for every model offered here"),
    Endpoint("bpe", bpe.bpe_json,
             "bpe(corpus, merges, word) -> {merges: [{step, pair, count, token}], vocab, word, pieces}; corpus: "
             "'word count' lines, merges 0-200"),
)
