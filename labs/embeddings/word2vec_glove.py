"""Embeddings, word2vec and GloVe trained live: gensim's Word2Vec, CBOW (sg=0) and skip-gram (sg=1), and GloVe's
weighted least squares written out in numpy, all on the same word corpus (labs/embeddings/word_corpus.py); a word's
nearest neighbours in each beside the contextual model's input-embedding rows, a − b + c on the static vectors,
and "one word, one vector, whatever the sentence".

GloVe: J = Σ_ij f(X_ij) (w_iᵀw̃_j + b_i + b̃_j − log X_ij)², f(x) = min(1, (x / x_max)^α), over the nonzero
co-occurrence counts (window, 1/d weighting); AdaGrad as in the paper (its accumulators start at 1, as in the
paper's own code), but each step on the gradient of the whole sum (the paper steps entry by entry); the vectors are
w + w̃. Neighbours and analogies: cosine on unit vectors (a − b + c of the unit vectors: gensim's most_similar, 3CosAdd),
the query words left out."""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field

import numpy as np

from labs.core.errors import BadInput, check_int, check_text
from labs.core.models import models
from labs.embeddings import compute, static, word_corpus

VECTOR_SIZE, WINDOW, MIN_COUNT, SEED = 50, 5, 3, 0
W2V_EPOCHS = 10
GLOVE_EPOCHS, GLOVE_LR, X_MAX, ALPHA = 40, 0.2, 10.0, 0.75  # x_max 100 in the paper: its corpora are 10⁴× larger
TOP_K, MAX_TOP_K = 8, 30
WORD = "bank"
COURSE_ANALOGY = ("king", "man", "woman", "queen")  # Textbook 20.1.1
CORPUS_ANALOGY = ("sharon", "israeli", "palestinian", "arafat")  # LM Lab's own: one this small corpus can answer
STATIC_NAMES = ("word2vec CBOW", "word2vec skip-gram", "GloVe")
CONTEXTUAL = models.MINILM_NAME
_lock = threading.Lock()


def glove_weight(x, x_max: float = X_MAX, alpha: float = ALPHA):
    """GloVe's f: (x / x_max)^α, capped at 1."""
    return np.minimum(1.0, (np.asarray(x, dtype=np.float64) / x_max) ** alpha)


def glove_loss(w, w_tilde, b, b_tilde, x, x_max: float = X_MAX, alpha: float = ALPHA) -> float:
    """J over the nonzero entries of x (a scipy COO matrix)."""
    diff = np.einsum("nd,nd->n", w[x.row], w_tilde[x.col]) + b[x.row] + b_tilde[x.col] - np.log(x.data)
    return float(np.sum(glove_weight(x.data, x_max, alpha) * diff ** 2))


@dataclass
class GloVe:
    words: list[str]
    vectors: np.ndarray  # [V, dims]: w + w̃
    losses: list[float]  # J before training, then after each epoch
    nonzero: int  # the co-occurrence entries J sums over


def train_glove(docs, words: list[str], dims: int = VECTOR_SIZE, window: int = WINDOW, epochs: int = GLOVE_EPOCHS,
                lr: float = GLOVE_LR, x_max: float = X_MAX, alpha: float = ALPHA, seed: int = SEED) -> GloVe:
    from scipy import sparse

    x = word_corpus.cooccurrence(docs, words, window).tocsr().tocoo()  # entries in row order: csr's own
    v = len(words)
    rng = np.random.default_rng(seed)
    params = [((rng.random((v, dims)) - 0.5) / dims).astype(np.float32),
              ((rng.random((v, dims)) - 0.5) / dims).astype(np.float32), np.zeros(v, np.float32), np.zeros(v, np.float32)]
    history = [np.ones_like(p) for p in params]  # AdaGrad's sums of squared gradients (1 to start, as GloVe's code)
    f, log_x = glove_weight(x.data, x_max, alpha).astype(np.float32), np.log(x.data).astype(np.float32)
    g = sparse.csr_matrix((np.zeros(x.nnz, np.float32), (x.row, x.col)), shape=(v, v))  # same entries, same order
    losses = []
    for _ in range(epochs + 1):
        w, wt, b, bt = params
        diff = np.einsum("nd,nd->n", w[x.row], wt[x.col]) + b[x.row] + bt[x.col] - log_x
        losses.append(float(np.sum(f * diff.astype(np.float64) ** 2)))
        if len(losses) > epochs:
            break
        g.data = 2 * f * diff  # ∂J/∂(w_iᵀw̃_j + b_i + b̃_j) for each entry
        grads = [g @ wt, g.T @ w, np.asarray(g.sum(axis=1)).ravel(), np.asarray(g.sum(axis=0)).ravel()]
        for p, h, grad in zip(params, history, grads):
            h += grad ** 2
            p -= lr * grad / np.sqrt(h)
    return GloVe(list(words), params[0] + params[1], losses, int(x.nnz))


def keyed(words: list[str], vectors: np.ndarray):
    """Vectors as gensim KeyedVectors (the same object word2vec's `wv` is)."""
    from gensim.models import KeyedVectors

    kv = KeyedVectors(vectors.shape[1])
    kv.add_vectors(list(words), vectors.astype(np.float32))
    return kv


@dataclass
class StaticModels:
    keyed: dict  # name → gensim KeyedVectors
    glove: GloVe
    words: int  # corpus words
    documents: int
    vocabulary: int
    settings: dict = field(default_factory=dict)


@functools.lru_cache(maxsize=4)
def _train(dims: int, window: int, min_count: int, w2v_epochs: int, glove_epochs: int, seed: int) -> StaticModels:
    from gensim.models import Word2Vec

    docs = [list(d) for d in word_corpus.documents()]
    kv = {}
    for name, sg in zip(STATIC_NAMES[:2], (0, 1)):
        kv[name] = Word2Vec(docs, vector_size=dims, window=window, min_count=min_count, sg=sg, epochs=w2v_epochs,
                            workers=1, seed=seed).wv
    words = word_corpus.vocabulary(docs, min_count)
    glove = train_glove(docs, words, dims, window, glove_epochs, seed=seed)
    kv[STATIC_NAMES[2]] = keyed(glove.words, glove.vectors)
    settings = {"vector_size": dims, "window": window, "min_count": min_count, "word2vec_epochs": w2v_epochs,
                "glove_epochs": glove_epochs, "glove_lr": GLOVE_LR, "x_max": X_MAX, "alpha": ALPHA, "seed": seed,
                "glove_optimiser": "AdaGrad, full-batch"}
    return StaticModels(kv, glove, sum(map(len, docs)), len(docs), len(words), settings)


def trained(dims: int = VECTOR_SIZE, window: int = WINDOW, min_count: int = MIN_COUNT, w2v_epochs: int = W2V_EPOCHS,
            glove_epochs: int = GLOVE_EPOCHS, seed: int = SEED) -> StaticModels:
    """The three static models at these settings, trained once (cached; one training at a time)."""
    with _lock:
        return _train(dims, window, min_count, w2v_epochs, glove_epochs, seed)


def unit_rows(kv) -> np.ndarray:
    v = kv.vectors.astype(np.float64)
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


def nearest(kv, query: np.ndarray, leave_out: list[str], k: int) -> list[tuple[str, float]]:
    unit = unit_rows(kv)
    scores = unit @ (query / max(np.linalg.norm(query), 1e-12))
    scores[[kv.key_to_index[w] for w in leave_out]] = -np.inf
    best = np.argsort(-scores, kind="stable")[:k]
    return [(kv.index_to_key[i], float(scores[i])) for i in best]


def neighbours(kv, word: str, k: int = TOP_K) -> list[tuple[str, float]]:
    """The k words nearest the word by cosine (itself left out); [] when it is not in the vocabulary."""
    if word not in kv.key_to_index:
        return []
    return nearest(kv, unit_rows(kv)[kv.key_to_index[word]], [word], k)


def analogy(kv, a: str, b: str, c: str, k: int = TOP_K) -> tuple[list[tuple[str, float]], list[str]]:
    """(the words nearest unit(a) − unit(b) + unit(c), the three left out; the words missing from the vocabulary)."""
    missing = [w for w in (a, b, c) if w not in kv.key_to_index]
    if missing:
        return [], missing
    unit = unit_rows(kv)
    ia, ib, ic = (kv.key_to_index[w] for w in (a, b, c))
    return nearest(kv, unit[ia] - unit[ib] + unit[ic], [a, b, c], k), []


def contextual_neighbours(loaded, word: str, k: int = TOP_K) -> tuple[list[tuple[str, float]], str]:
    """The contextual model's input-embedding rows nearest the word's row (static.token_id's checks): (neighbours,
    "" or why there are none)."""
    import torch

    try:
        row = static.token_id(loaded, word)
    except BadInput as e:
        return [], str(e)
    with torch.inference_mode():
        weight = loaded.model.get_input_embeddings().weight.float()
        rows = min(weight.shape[0], len(loaded.tokenizer))
        unit = torch.nn.functional.normalize(weight[:rows], dim=-1)
        scores = unit @ unit[row]
        scores[row] = -torch.inf
        best = torch.topk(scores, k)
    ids = [int(i) for i in best.indices]
    return list(zip(models.readable_tokens(loaded.tokenizer, ids), best.values.tolist())), ""


def check_word(word, name: str, example: str, allow_empty: bool = False) -> str:
    word = check_text(word, example, max_chars=40, what=name, allow_empty=allow_empty).lower()
    if len(word.split()) > 1:
        raise BadInput(f"Type one word for {name} (no spaces), for example “{example}”.")
    return word


@dataclass
class AnalogyRow:
    model: str
    words: tuple[str, str, str]
    expected: str
    neighbours: list[tuple[str, float]]
    missing: list[str]  # the words the corpus's vocabulary lacks (then no answer)
    expected_rank: int | None  # 1 = nearest; None when missing or not in the vocabulary

    def to_json(self) -> dict:
        return {"model": self.model, "a": self.words[0], "b": self.words[1], "c": self.words[2],
                "expected": self.expected, "missing": self.missing, "expected_rank": self.expected_rank,
                "neighbours": [{"word": w, "cosine": round(s, 6)} for w, s in self.neighbours]}


def analogy_row(name: str, kv, a: str, b: str, c: str, expected: str, k: int) -> AnalogyRow:
    found, missing = analogy(kv, a, b, c, k)
    rank = None
    if found and expected in kv.key_to_index and expected not in (a, b, c):
        unit = unit_rows(kv)
        ia, ib, ic = (kv.key_to_index[w] for w in (a, b, c))
        query = unit[ia] - unit[ib] + unit[ic]
        scores = unit @ (query / np.linalg.norm(query))
        scores[[ia, ib, ic]] = -np.inf
        rank = int((scores > scores[kv.key_to_index[expected]]).sum()) + 1
    return AnalogyRow(name, (a, b, c), expected, found, missing, rank)


@dataclass
class Word2VecResult:
    word: str
    corpus: str
    words: int
    documents: int
    vocabulary: int
    settings: dict
    neighbours: dict  # static model name → [(word, cosine)], [] when the word is not in the corpus's vocabulary
    counts: int  # the word's count in the corpus
    contextual_model: str
    contextual_neighbours: list[tuple[str, float]]
    contextual_note: str
    analogies: list[AnalogyRow]
    glove_losses: list[float]
    glove_nonzero: int
    one_vector: dict  # the word's row in each static model for the two sentences, beside the contextual vectors

    def to_json(self) -> dict:
        def listed(pairs):
            return [{"word": w, "cosine": round(s, 6)} for w, s in pairs]

        return {"word": self.word, "corpus": self.corpus, "corpus_words": self.words, "documents": self.documents,
                "vocabulary": self.vocabulary, "count": self.counts, "settings": self.settings,
                "neighbours": {k: listed(v) for k, v in self.neighbours.items()},
                "contextual": {"model": self.contextual_model, "neighbours": listed(self.contextual_neighbours),
                               "note": self.contextual_note},
                "analogies": [a.to_json() for a in self.analogies],
                "glove": {"loss_first": round(self.glove_losses[0], 4), "loss_last": round(self.glove_losses[-1], 4),
                          "epochs": len(self.glove_losses) - 1, "nonzero": self.glove_nonzero},
                "one_vector": self.one_vector}


def one_vector(m: StaticModels, loaded, word: str) -> dict:
    """The textbook's two "bank" sentences: the static row is the same lookup in both; the contextual model's two
    vectors (static.one_row_two_vectors, the lab's shared pass) are not."""
    sentences = static.BANK_SENTENCES
    out = {"sentences": list(sentences), "word": word, "static": {}}
    for name, kv in m.keyed.items():
        if word in kv.key_to_index:
            row = kv.key_to_index[word]
            first, second = kv[word], kv[word]  # what each sentence gets: a lookup, whatever the sentence
            out["static"][name] = {"row": row, "cosine": round(float(compute.cosine_matrix(np.stack([first, second]))
                                                                      [0, 1]), 6)}
    try:
        o = static.one_row_two_vectors(loaded, sentences, word)
        out["contextual"] = {"model": o.model, "cosine_last_layer": round(o.contextual_cosine, 6),
                             "static_row_cosine": round(o.static_cosine, 6), "layers": o.num_layers}
    except BadInput as e:
        out["contextual"] = {"model": loaded.name, "note": str(e)}
    return out


def word2vec(word=WORD, a="king", b="man", c="woman", expected="queen", top_k=TOP_K) -> Word2VecResult:
    """Train (cached) and compare: the word's neighbours, the course's analogy, the corpus's own, one word one vector."""
    word = check_word(word, "the word", WORD)
    a, b, c = (check_word(w, n, e) for w, n, e in zip((a, b, c), static.NAMES, COURSE_ANALOGY))
    expected = check_word(expected, "expected word", "queen", allow_empty=True)
    top_k = check_int(top_k, "The number of neighbours", 1, MAX_TOP_K)
    m = trained()
    loaded = compute.check_model(CONTEXTUAL)
    contextual, note = contextual_neighbours(loaded, word, top_k)
    asked = [analogy_row(n, kv, a, b, c, expected, top_k) for n, kv in m.keyed.items()]
    corpus_own = [] if (a, b, c, expected) == CORPUS_ANALOGY else [
        analogy_row(n, kv, *CORPUS_ANALOGY, top_k) for n, kv in m.keyed.items()]
    return Word2VecResult(word, word_corpus.CREDIT, m.words, m.documents, m.vocabulary, m.settings,
                          {n: neighbours(kv, word, top_k) for n, kv in m.keyed.items()},
                          word_corpus.counts()[word], loaded.name, contextual, note, asked + corpus_own,
                          m.glove.losses, m.glove.nonzero, one_vector(m, loaded, WORD))


def word2vec_json(word: str = WORD, a: str = "king", b: str = "man", c: str = "woman", expected: str = "queen",
                  top_k: int = TOP_K) -> dict:
    """The `word2vec` API."""
    return word2vec(word, a, b, c, expected, top_k).to_json()
