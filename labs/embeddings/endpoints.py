"""Embeddings' API endpoints (labs.core.work.endpoints: app.py registers them, docs/api.md is written from them)."""

from __future__ import annotations

from labs.core.work.endpoints import Endpoint
from labs.embeddings import compute, elmo, pooling, probes, static
from labs.embeddings import word2vec_glove as w2v

ENDPOINTS = (
    Endpoint("analogy", static.analogy_json,
             "analogy(a, b, c, expected, model, top_k) -> {model, source, a, b, c, token_ids, tokens, expected, "
             "expected_token_id, neighbours: [{token, token_id, cosine}], expected_rank, expected_cosine, "
             "rank_without_arithmetic, candidates, rows, dims, excluded}: the input embedding rows nearest to a − b + c"),
    # Both train on the first call (cached): about half a minute each on 2 cores, then instant.
    Endpoint("word2vec", w2v.word2vec_json,
             "word2vec(word, a, b, c, expected, top_k) -> {word, corpus, corpus_words, documents, vocabulary, count, "
             "settings, neighbours: {model: [{word, cosine}]}, contextual: {model, neighbours, note}, analogies: "
             "[{model, a, b, c, expected, missing, expected_rank, neighbours}], glove: {loss_first, loss_last, epochs, "
             "nonzero}, one_vector: {sentences, word, static: {model: {row, cosine}}, contextual}}: CBOW, skip-gram "
             "and GloVe trained on the Lee corpus + LM Lab's reviews"),
    Endpoint("elmo", elmo.elmo_json,
             "elmo(first, second, word) -> {sentences, word, positions, shared_left_context, unknown_words, "
             "elmo_layers: [{layer, cosine, forward_cosine, backward_cosine, forward_distance, backward_distance, "
             "forward_identical}], elmo_mixed_cosine, encoder: {model, cosine_by_layer}, perplexity: {forward, "
             "backward}, mixture: {task, s, softmax_s, gamma, train_accuracy, test_accuracy, ...}}"),
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
