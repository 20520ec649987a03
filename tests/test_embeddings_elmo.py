"""Embeddings, ELMo in miniature: the forward half bit-identical where the left context is shared (and not where it
differs), the reported perplexity against exp of the mean cross-entropy recomputed by hand from the model's logits,
the mixture against γ·Σ softmax(s)ⱼ hⱼ by hand, the encoder's cosines against transformers' own hidden states, and
bad input. A tiny biLM, trained once for the module."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from labs.core.errors import BadInput
from labs.core.models import models
from labs.embeddings import elmo, word_corpus

TINY = dict(vocab=300, dim=16, layers=2, epochs=1, batch=256)  # a few steps: enough to test, not to learn


@pytest.fixture(scope="module")
def tiny():
    return elmo.trained(**TINY)


@pytest.fixture(scope="module")
def pair():
    return elmo.compare(*elmo.PAIR, elmo.WORD, **TINY)


def test_forward_half_is_identical_for_a_shared_left_context(tiny):
    a, b = (elmo.layer_vectors(tiny, word_corpus.tokens(s)) for s in elmo.PAIR)
    half = a.shape[-1] // 2
    assert a.shape[0] == 3 and half == 16
    for j in range(3):
        assert np.array_equal(a[j, :4, :half], b[j, :4, :half])  # "sat by the bank" ("i": too short a word)
    assert not np.array_equal(a[1, 3, half:], b[1, 3, half:])  # the backward half has read the right side
    c = elmo.layer_vectors(tiny, word_corpus.tokens("We sat by the bank of the river."))  # "bank": word 4
    assert not np.array_equal(a[1, 3, :half], c[1, 4, :half])  # a different left context: the forward half differs
    assert np.array_equal(a[1, 3:, half:], c[1, 4:, half:])  # the same right side: the backward half agrees


def test_the_pair_result(pair):
    assert pair.shared_left and pair.positions == (3, 3)
    assert all(x["forward_identical"] and x["forward_cosine"] == 1.0 and x["forward_distance"] == 0 for x in pair.layers)
    assert pair.layers[1]["backward_distance"] > 0
    assert len(pair.encoder_cosines) == 7 and min(pair.encoder_cosines[1:]) < 0.99


def hand_perplexity(model, docs) -> float:
    total, n = 0.0, 0
    with torch.no_grad():
        for ids in docs:
            logits = model(torch.tensor([ids]))[0][0, :-1].double()
            log_probs = logits - torch.logsumexp(logits, dim=-1, keepdim=True)
            total -= float(log_probs[torch.arange(len(ids) - 1), torch.tensor(ids[1:])].sum())
            n += len(ids) - 1
    return math.exp(total / n)


def test_perplexity_is_exp_of_the_mean_cross_entropy(tiny):
    _, held = elmo.split_documents()
    docs = [tiny.ids(d) for d in held]
    assert tiny.perplexity["forward"] == pytest.approx(hand_perplexity(tiny.forward, docs), rel=1e-4)
    assert tiny.perplexity["backward"] == pytest.approx(hand_perplexity(tiny.backward, [d[::-1] for d in docs]),
                                                        rel=1e-4)
    assert tiny.held_out_words == sum(len(d) for d in held)


def test_mixture_equals_a_hand_computation():
    torch.manual_seed(3)
    layers, s, gamma = torch.randn(3, 5, 8), torch.randn(3), torch.tensor([1.7])
    weights = [math.exp(v) for v in s.tolist()]
    hand = sum(w / sum(weights) * layers[j] for j, w in enumerate(weights)) * 1.7
    assert torch.allclose(elmo.mix(layers, s, gamma), hand, atol=1e-6)


def test_learned_weights_are_a_softmax(pair):
    x = pair.mixture
    expected = np.exp(x.s) / np.exp(x.s).sum()
    np.testing.assert_allclose(x.weights, expected, atol=1e-6)
    assert x.train_examples + x.test_examples == sum(1 for r in word_corpus.reviews() if r.words)
    test = [r.label for r in word_corpus.reviews() if r.words and r.split != "train"]
    assert x.majority == pytest.approx(max(test.count(k) for k in set(test)) / len(test))


def test_encoder_cosines_equal_transformers_hidden_states(pair):
    loaded = models.load(elmo.ENCODER)
    vectors = []
    for sentence in elmo.PAIR:
        enc = loaded.tokenizer(sentence, return_tensors="pt")
        with torch.no_grad():
            states = loaded.model(**enc, output_hidden_states=True).hidden_states
        position = loaded.tokenizer.convert_ids_to_tokens(enc["input_ids"][0]).index("bank")
        vectors.append(torch.stack([h[0, position] for h in states]).double())
    hand = torch.nn.functional.cosine_similarity(vectors[0], vectors[1], dim=-1)
    np.testing.assert_allclose(pair.encoder_cosines, hand.numpy(), atol=1e-5)


@pytest.mark.parametrize("args", [("I sat.", "by the bank", "bank"), (elmo.PAIR[0], elmo.PAIR[1], "two words"),
                                  ("", elmo.PAIR[1], "bank")])
def test_bad_input(args):
    with pytest.raises(BadInput):
        elmo.compare(*args, **TINY)
