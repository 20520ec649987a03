"""Embeddings, word2vec and GloVe trained live: the panel's neighbours and analogies against gensim's own
most_similar / similarity (word2vec's vectors and GloVe's, as gensim KeyedVectors), GloVe's loss J against a hand
computation on a 3-word corpus, the co-occurrence counts against a hand count, GloVe's loss falling as it trains,
the contextual rows against a numpy computation, and bad input. Small settings, trained once for the module."""

from __future__ import annotations

import numpy as np
import pytest

from labs.core.errors import BadInput
from labs.core.models import models
from labs.embeddings import static, word_corpus
from labs.embeddings import word2vec_glove as wg

SMALL = dict(dims=20, window=3, min_count=5, w2v_epochs=2, glove_epochs=15)


@pytest.fixture(scope="module")
def small():
    return wg.trained(**SMALL)


def test_the_corpus_is_lee_and_the_reviews():
    docs = word_corpus.documents()
    assert len(word_corpus.lee_documents()) == 300 and len(docs) == 300 + sum(1 for r in word_corpus.reviews() if r.words)
    from gensim.test.utils import datapath
    from gensim.utils import simple_preprocess

    with open(datapath("lee_background.cor"), encoding="utf-8", errors="replace") as f:
        first = simple_preprocess(f.readline())
    assert list(docs[0]) == first


@pytest.mark.parametrize("name", wg.STATIC_NAMES)
def test_neighbours_equal_gensims_most_similar(small, name):
    kv = small.keyed[name]
    for word in ("police", "government", "bank"):
        mine = wg.neighbours(kv, word, 8)
        theirs = kv.most_similar(word, topn=8)
        assert [w for w, _ in mine] == [w for w, _ in theirs]
        np.testing.assert_allclose([s for _, s in mine], [s for _, s in theirs], atol=1e-5)
        for w, s in mine[:3]:
            assert s == pytest.approx(float(kv.similarity(word, w)), abs=1e-5)


@pytest.mark.parametrize("name", wg.STATIC_NAMES)
def test_analogy_equals_gensims_3cosadd(small, name):
    kv = small.keyed[name]
    a, b, c, _ = wg.CORPUS_ANALOGY
    mine, missing = wg.analogy(kv, a, b, c, 6)
    theirs = kv.most_similar(positive=[a, c], negative=[b], topn=6)
    assert missing == [] and [w for w, _ in mine] == [w for w, _ in theirs]
    np.testing.assert_allclose([s for _, s in mine], [s for _, s in theirs], atol=1e-5)
    row = wg.analogy_row(name, kv, a, b, c, mine[2][0], 6)
    assert row.expected_rank == 3


def test_a_word_outside_the_vocabulary_is_said_so(small):
    kv = small.keyed["GloVe"]
    assert wg.neighbours(kv, "zzqx", 5) == []
    found, missing = wg.analogy(kv, "king", "zzqx", "woman")
    assert found == [] and missing == ["zzqx"]
    assert "zzqx" not in word_corpus.counts()


def hand_cooccurrence(docs, window):
    counts = {}
    for doc in docs:
        for i, w in enumerate(doc):
            for j in range(max(0, i - window), min(len(doc), i + window + 1)):
                if j != i:
                    counts[(w, doc[j])] = counts.get((w, doc[j]), 0) + 1 / abs(i - j)
    return counts


def test_cooccurrence_counts_by_hand():
    docs = [["the", "cat", "sat", "on", "the", "mat"], ["the", "dog", "sat"]]
    vocab = ["the", "cat", "sat", "on", "mat", "dog"]
    x = word_corpus.cooccurrence(docs, vocab, 2).toarray()
    hand = hand_cooccurrence(docs, 2)
    assert x[0, 1] == pytest.approx(1.0)  # the→cat at 1; the second "the" is 3 words from "cat": out of the window
    assert x[0, 2] == pytest.approx(0.5 + 0.5 + 0.5)  # the…sat twice at 2 (doc 1), the dog sat at 2 (doc 2)
    for (a, b), v in hand.items():
        assert x[vocab.index(a), vocab.index(b)] == pytest.approx(v)
    assert x.sum() == pytest.approx(sum(hand.values()))
    assert x[vocab.index("mat"), vocab.index("dog")] == 0  # never across documents


def test_glove_loss_equals_a_hand_computation_on_three_words():
    docs, vocab = [["a", "b", "c"]], ["a", "b", "c"]
    x = word_corpus.cooccurrence(docs, vocab, 2)
    rng = np.random.default_rng(1)
    w, wt, b, bt = rng.normal(size=(3, 2)), rng.normal(size=(3, 2)), rng.normal(size=3), rng.normal(size=3)
    counts = {(0, 1): 1.0, (1, 0): 1.0, (1, 2): 1.0, (2, 1): 1.0, (0, 2): 0.5, (2, 0): 0.5}
    assert np.allclose(x.toarray(), [[0, 1, .5], [1, 0, 1], [.5, 1, 0]])
    x_max, alpha = 0.8, 0.75
    hand = 0.0
    for (i, j), xij in counts.items():
        f = min(1.0, (xij / x_max) ** alpha)
        hand += f * (float(w[i] @ wt[j]) + b[i] + bt[j] - np.log(xij)) ** 2
    assert wg.glove_loss(w, wt, b, bt, x, x_max, alpha) == pytest.approx(hand, rel=1e-12)


def test_glove_loss_falls_as_it_trains():
    docs = [r.words for r in word_corpus.reviews()]
    words = word_corpus.vocabulary(docs, 2)
    g = wg.train_glove(docs, words, dims=10, window=3, epochs=20)
    assert len(g.losses) == 21 and g.losses[-1] < 0.5 * g.losses[0]
    assert all(later < earlier for earlier, later in zip(g.losses[:5], g.losses[1:6]))
    assert g.vectors.shape == (len(words), 10)


def test_contextual_neighbours_equal_a_numpy_computation():
    loaded = models.load(models.MINILM_NAME)
    found, note = wg.contextual_neighbours(loaded, "bank", 5)
    weight = loaded.model.get_input_embeddings().weight.detach().double().numpy()
    row = static.token_id(loaded, "bank")
    cos = weight @ weight[row] / (np.linalg.norm(weight, axis=1) * np.linalg.norm(weight[row]))
    cos[row] = -np.inf
    best = np.argsort(-cos)[:5]
    assert note == "" and [t for t, _ in found] == loaded.tokenizer.convert_ids_to_tokens(best.tolist())
    np.testing.assert_allclose([s for _, s in found], cos[best], atol=1e-5)
    assert wg.contextual_neighbours(loaded, "zzqxwv", 5)[0] == []


def test_one_word_one_vector(small):
    loaded = models.load(models.MINILM_NAME)
    o = wg.one_vector(small, loaded, "bank")
    for name, kv in small.keyed.items():
        assert o["static"][name] == {"row": kv.key_to_index["bank"], "cosine": 1.0}
    theirs = static.one_row_two_vectors(loaded, static.BANK_SENTENCES, "bank")
    assert o["contextual"]["cosine_last_layer"] == pytest.approx(theirs.contextual_cosine, abs=1e-6)
    assert theirs.contextual_cosine < 0.99


@pytest.mark.parametrize("kwargs", [dict(word="two words"), dict(a=""), dict(top_k=0), dict(expected="a b")])
def test_bad_input_is_refused_before_training(kwargs):
    with pytest.raises(BadInput):
        wg.word2vec(**kwargs)
