"""Tokens' API endpoints (labs.core.work.endpoints: app.py registers them, docs/api.md is written from them)."""

from __future__ import annotations

from labs.core.work.endpoints import Endpoint
from labs.tokens import bpe, compute, mismatch, unigram, word_level

ENDPOINTS = (
    Endpoint("tokenize", compute.tokenize_json,
             "tokenize(text, models) -> {tokenizers: [{model, algorithm, marks, vocab_size, tokens, ids, special, "
             "chars_per_token}]}; models: a list of names, empty for every model offered here"),
    Endpoint("bpe", bpe.bpe_json,
             "bpe(corpus, merges, word) -> {merges: [{step, pair, count, token}], vocab, word, pieces}; corpus: "
             "'word count' lines, merges 0-200"),
    Endpoint("word_level", word_level.word_level_json,
             "word_level(text, vocabulary_size) -> {tokens, ids, words, unknown, unk_count, unk_share, vocab_size, "
             "subword: [{model, algorithm, pieces, ids, unknown, decoded, round_trip, round_trip_uncased}]}; a "
             "word-level vocabulary of the corpus's most frequent words (5-5000) beside the real subword tokenizers"),
    Endpoint("tokenizer_mismatch", mismatch.tokenizer_mismatch_json,
             "tokenizer_mismatch(text, encode_with, read_with) -> {ids, encoded_pieces, read_pieces, garbled, "
             "past_vocabulary, own_ids, own_decoded, model: {perplexity_own, perplexity_foreign, ...} | null, "
             "model_note}; garbled = read_with's decode of encode_with's ids"),
    Endpoint("unigram", unigram.unigram_json,
             "unigram(text, vocab_size, corpus, alpha, samples, seed) -> {pieces: [{piece, id, log_prob, prob, "
             "unknown}], viterbi: {pieces, ids, score, probability}, nbest: [{pieces, ids, score, probability}], "
             "samples: [{pieces, ids, count, score, probability, expected_share}], vocab_size, trained_on, "
             "log_total, segmentations, ...}; a SentencePiece unigram model trained on corpus (empty: the built-in "
             "reviews) with vocab_size pieces (60-900); score = the sum of the pieces' log-probabilities"),
)
