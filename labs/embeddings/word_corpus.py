"""Embeddings, the word corpus the static and ELMo panels train on: the Lee Background Corpus (300 Australian news
articles, ~58k words, shipped with gensim's test data) plus LM Lab's own 352 short reviews (assets/sentiment.csv),
as lower-cased word tokens (gensim's simple_preprocess), and GloVe's co-occurrence counts on it.

Co-occurrence: within a symmetric window of `window` words, a pair `d` words apart adds 1/d to X_ij and to X_ji (the
GloVe paper's weighting); a document's words never pair with another document's."""

from __future__ import annotations

import collections
import csv
import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REVIEWS = Path(__file__).resolve().parents[2] / "assets" / "sentiment.csv"
LEE_NAME = "the Lee Background Corpus (Lee, Pincombe & Welsh 2005), shipped with gensim (LGPL-2.1)"
REVIEWS_NAME = "LM Lab's own 352 short reviews (assets/sentiment.csv)"
CREDIT = f"{LEE_NAME}: 300 Australian news articles; and {REVIEWS_NAME}"


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens, as gensim's simple_preprocess makes them (2 to 15 letters, no punctuation)."""
    from gensim.utils import simple_preprocess

    return simple_preprocess(text)


@functools.lru_cache(maxsize=1)
def lee_documents() -> tuple[tuple[str, ...], ...]:
    from gensim.test.utils import datapath

    with open(datapath("lee_background.cor"), encoding="utf-8", errors="replace") as f:
        return tuple(tuple(tokens(line)) for line in f if line.strip())


@dataclass(frozen=True)
class Review:
    text: str
    label: str  # positive / negative
    split: str  # train / validation, as the file marks it
    words: tuple[str, ...]


@functools.lru_cache(maxsize=1)
def reviews() -> tuple[Review, ...]:
    with REVIEWS.open(newline="") as f:
        return tuple(Review(r["text"], r["label"], r["split"], tuple(tokens(r["text"]))) for r in csv.DictReader(f))


@functools.lru_cache(maxsize=1)
def documents() -> tuple[tuple[str, ...], ...]:
    """The whole corpus: the Lee articles, then the reviews (each review a document)."""
    return lee_documents() + tuple(r.words for r in reviews() if r.words)


def counts(docs=None) -> collections.Counter:
    return collections.Counter(w for d in (documents() if docs is None else docs) for w in d)


def vocabulary(docs, min_count: int = 1, max_size: int | None = None) -> list[str]:
    """The words seen at least `min_count` times, most frequent first (ties: alphabetical), at most `max_size`."""
    c = counts(docs)
    words = sorted((w for w, n in c.items() if n >= min_count), key=lambda w: (-c[w], w))
    return words[:max_size] if max_size else words


def cooccurrence(docs, vocab: list[str], window: int):
    """GloVe's X as a scipy COO matrix [V, V]: X_ij = Σ 1/d over the pairs (i, j) d ≤ window words apart, both
    ways; words outside `vocab` are dropped before the window is counted (as GloVe's own cooccur does)."""
    from scipy import sparse

    index = {w: i for i, w in enumerate(vocab)}
    rows, cols, vals = [], [], []
    for doc in docs:
        ids = np.array([index[w] for w in doc if w in index], dtype=np.int64)
        for d in range(1, window + 1):
            if len(ids) <= d:
                break
            left, right = ids[:-d], ids[d:]
            rows += [left, right]
            cols += [right, left]
            vals += [np.full(len(left), 1.0 / d)] * 2
    if not rows:
        return sparse.coo_matrix((len(vocab), len(vocab)))
    x = sparse.coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                          shape=(len(vocab), len(vocab)))
    x.sum_duplicates()
    return x
