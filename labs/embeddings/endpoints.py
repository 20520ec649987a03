"""Embeddings' API endpoints (labs.core.work.endpoints: app.py registers them, docs/api.md is written from them)."""

from __future__ import annotations

from labs.core.work.endpoints import Endpoint
from labs.embeddings import compute, pooling, probes, static

ENDPOINTS = (
    Endpoint("analogy", static.analogy_json,
             "analogy(a, b, c, expected, model, top_k) -> {model, source, a, b, c, token_ids, tokens, expected, "
             "expected_token_id, neighbours: [{token, token_id, cosine}], expected_rank, expected_cosine, "
             "rank_without_arithmetic, candidates, rows, dims, excluded}: the input embedding rows nearest to a − b + c"),
    Endpoint("pooling", pooling.pooling_json,
             "pooling(sentences, model) -> {model, source, trained_pooling, dims, sentences: [{text, label, tokens}], "
             "poolings: {cls, mean, max: {similarity, accuracy, mrr, queries, nearest, ranks}}}"),
    Endpoint("probe_layers", probes.probe_layers,
             "probe_layers(model, probe) -> {model, num_layers, bands, probes: [{id, name, question, kind, band, "
             "classes, examples, accuracy (per layer), baseline, best_layer, expected_layer}], picture_holds, reading}"),
    Endpoint("embeddings", compute.embeddings_json,
             "embeddings(sentences, word, model, layer) -> {model, source, family, vectors_from, reads, word, "
             "num_layers, layer, sentences, static_similarity, similarity_by_layer, projection, sentence_similarity}; "
             "an encoder-decoder (T5) gives its encoder's vectors"),
)
