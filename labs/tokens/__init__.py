"""Tokens: how each model offered here splits a text into pieces and ids, byte-pair encoding step by step, three
tokenizers trained here, why a word-level vocabulary fails, and why a model needs its own tokenizer."""
