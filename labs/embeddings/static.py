"""Embeddings, static vectors: word2vec's analogy (king − man + woman ≈ queen) on a model's own input
embedding matrix (`model.get_input_embeddings().weight`: one row per token of the vocabulary, before any
context), and the same word in two sentences: one row, two contextual vectors.

preprocess (each word → its one token id, as written mid-sentence) → the arithmetic on the rows
(a − b + c) → postprocess (cosine with every row, the three input words left out as word2vec's evaluation
does; the nearest rows and the expected answer's rank). No forward pass: the rows are the model's
weights. The "one row, two vectors" sentence reuses `compute.run` (the lab's shared hidden-states pass)."""

from __future__ import annotations

from dataclasses import dataclass

from labs.core.errors import BadInput, check_int, check_text
from labs.core.models import models
from labs.core.ui import course_quotes
from labs.embeddings import compute

EXAMPLE = ("king", "man", "woman", "queen")
# More analogies to try (a, b, c, the expected answer): capitals, comparatives, verb forms, plurals.
EXAMPLES = (EXAMPLE, ("paris", "france", "italy", "rome"), ("bigger", "big", "small", "smaller"),
            ("walking", "walk", "swim", "swimming"), ("cats", "cat", "dog", "dogs"))
NAMES = ("word A", "word B", "word C")  # A − B + C, as the messages name them
TOP_K, MAX_TOP_K = 10, 50
# Textbook 20.1.2's two sentences (course_quotes' entries): one "bank", two senses.
BANK_SENTENCES = (course_quotes.text("static_bank_0"), course_quotes.text("static_bank_1"))
# What the course says (course_quotes' entries; tests/test_course_quotes.py checks each under its heading).
TEXTBOOK = "003_4e137ff2e23b0b86.txt"
QUOTE_ANALOGY, QUOTE_FORMULA, QUOTE_STATIC = (course_quotes.text(f"static_{k}") for k in ("analogy", "formula", "static"))
QUOTES = (QUOTE_ANALOGY, QUOTE_FORMULA, QUOTE_STATIC) + BANK_SENTENCES


@dataclass
class Neighbour:
    token: str
    token_id: int
    cosine: float


@dataclass
class Analogy:
    model: str
    source: str
    words: tuple[str, str, str]  # a, b, c: a − b + c
    token_ids: tuple[int, int, int]
    tokens: tuple[str, str, str]  # each word's one token, as the vocabulary writes it
    expected: str  # "" when none was given
    expected_token_id: int | None
    neighbours: list[Neighbour]  # best first, the three input tokens left out
    expected_rank: int | None  # 1 = the nearest row; among `candidates` rows
    expected_cosine: float | None
    rank_without_arithmetic: int | None  # the expected answer's rank among a's own neighbours (same rows left out)
    candidates: int  # the rows compared: the vocabulary less the three input words
    rows: int
    dims: int

    def to_json(self) -> dict:
        return {"model": self.model, "source": self.source, "a": self.words[0], "b": self.words[1],
                "c": self.words[2], "token_ids": list(self.token_ids), "tokens": list(self.tokens),
                "expected": self.expected, "expected_token_id": self.expected_token_id,
                "neighbours": [{"token": n.token, "token_id": n.token_id, "cosine": round(n.cosine, 6)}
                               for n in self.neighbours],
                "expected_rank": self.expected_rank,
                "expected_cosine": None if self.expected_cosine is None else round(self.expected_cosine, 6),
                "rank_without_arithmetic": self.rank_without_arithmetic, "candidates": self.candidates,
                "rows": self.rows, "dims": self.dims, "excluded": "the three input words (as word2vec's evaluation)"}


def check_word(word, name: str, example: str, *, allow_empty: bool = False) -> str:
    word = check_text(word, example, max_chars=40, what=name, allow_empty=allow_empty)
    if len(word.split()) > 1:
        raise BadInput(f"Type one word for {name} (no spaces), for example “{example}”.")
    return word


def token_id(loaded: models.LoadedModel, word: str) -> int:
    """The word's one row of the embedding matrix, written as mid-sentence; BadInput naming the pieces
    when the vocabulary splits it (a static row belongs to one token) or does not know it."""
    tokenizer = loaded.tokenizer
    ids = tokenizer(compute.as_mid_sentence(tokenizer, word), add_special_tokens=False)["input_ids"]
    pieces = models.readable_tokens(tokenizer, ids)
    if len(ids) != 1:
        raise BadInput(f"“{word}” is not one token of {loaded.name}'s vocabulary: it splits into {len(ids)} pieces "
                       f"({', '.join(pieces) or 'none'}). Each word must be one row of the embedding matrix: "
                       "pick a more common word.")
    if ids[0] == tokenizer.unk_token_id:
        raise BadInput(f"“{word}” is not in {loaded.name}'s vocabulary (it becomes {pieces[0]}). Pick another word.")
    return ids[0]


def rank_of(scores, target: int) -> int:
    """1 + how many candidates score strictly higher than `target` (left-out rows score −inf)."""
    return int((scores > scores[target]).sum()) + 1


def analogy(loaded: models.LoadedModel, a, b, c, expected="", top_k=TOP_K) -> Analogy:
    """The rows nearest to a − b + c by cosine, on the model's input embedding matrix."""
    import torch

    words = tuple(check_word(w, n, e) for w, n, e in zip((a, b, c), NAMES, EXAMPLE))
    expected = check_word(expected, "expected word", "queen", allow_empty=True)
    top_k = check_int(top_k, "The number of neighbours", 1, MAX_TOP_K)
    loaded = compute.check_model(loaded)
    ids = tuple(token_id(loaded, w) for w in words)
    target = token_id(loaded, expected) if expected else None
    if target is not None and target in ids:
        raise BadInput(f"The expected answer “{expected}” is one of the three words, which are left out of the "
                       "neighbours (as in word2vec's evaluation). Expect another word.")
    with torch.inference_mode():
        weight = loaded.model.get_input_embeddings().weight  # [rows, dims]
        rows = min(weight.shape[0], len(loaded.tokenizer))  # T5 pads its matrix past its vocabulary
        unit = torch.nn.functional.normalize(weight[:rows].float(), dim=-1)  # [rows, dims]
        query = weight[ids[0]].float() - weight[ids[1]].float() + weight[ids[2]].float()
        scores = unit @ torch.nn.functional.normalize(query, dim=-1)  # [rows]: cosine with every row
        alone = unit @ unit[ids[0]]  # a's own neighbours, without the arithmetic
        scores[list(ids)] = alone[list(ids)] = -torch.inf
        best = torch.topk(scores, min(top_k, rows - len(set(ids))))
    found = [int(i) for i in best.indices]
    neighbours = [Neighbour(t, i, float(v)) for t, i, v in zip(models.readable_tokens(loaded.tokenizer, found), found,
                                                                best.values.tolist())]
    return Analogy(loaded.name, loaded.source, words, ids, tuple(models.readable_tokens(loaded.tokenizer, ids)),
                   expected, target, neighbours, None if target is None else rank_of(scores, target),
                   None if target is None else float(scores[target]),
                   None if target is None else rank_of(alone, target), rows - len(set(ids)), rows, weight.shape[1])


def analogy_json(a: str = "king", b: str = "man", c: str = "woman", expected: str = "queen", model: str = "",
                 top_k: int = TOP_K) -> dict:
    """The `analogy` API. Typed words are checked before the model is looked up."""
    for word, name, example in zip((a, b, c), NAMES, EXAMPLE):
        check_word(word, name, example)
    return analogy(compute.check_model(model), a, b, c, expected, top_k).to_json()


@dataclass
class OneRowTwoVectors:
    """The same word in two sentences: its one static row, and its vector in each at the last layer."""
    model: str
    word: str
    sentences: tuple[str, str]
    token_ids: list[int]  # the word's row(s) of the embedding matrix
    static_cosine: float  # always 1: the same row
    contextual_cosine: float
    num_layers: int

    def to_json(self) -> dict:
        return {"model": self.model, "word": self.word, "sentences": list(self.sentences),
                "token_ids": self.token_ids, "static_cosine": round(self.static_cosine, 6),
                "contextual_cosine": round(self.contextual_cosine, 6), "num_layers": self.num_layers}


def one_row_two_vectors(loaded: models.LoadedModel, sentences=BANK_SENTENCES, word: str = "bank") -> OneRowTwoVectors:
    """compute.run on two sentences (the lab's own pass): the static rows agree, the last layer does not."""
    r = compute.run(loaded, "\n".join(sentences), word)
    loaded = compute.check_model(loaded)
    ids = loaded.tokenizer(compute.as_mid_sentence(loaded.tokenizer, word), add_special_tokens=False)["input_ids"]
    static = compute.cosine_matrix(r.static)[0, 1]
    contextual = compute.cosine_matrix(r.by_layer[-1])[0, 1]
    return OneRowTwoVectors(r.model, r.word, tuple(s.text for s in r.sentences), list(ids), float(static),
                            float(contextual), r.num_layers)
