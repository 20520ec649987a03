"""Attention, long documents: a document longer than the model's position limit, classified four ways, as
textbook 20.11.2 lists them: head truncation, tail truncation, head + tail, and overlapping chunks whose
sentence vectors are averaged.

The classifier is said plainly: no fine-tuned classifier ships offline, so the label is the nearer of two
prototypes, the mean sentence vectors (mean pooling over the last layer, the pooling all-MiniLM-L6-v2 was
trained with) of the built-in labelled reviews' training split (assets/sentiment.csv); its accuracy on that
file's held-out split is measured and shown beside it. Nothing is fine-tuned.

The built-in document (assets/long_review.txt, written for LM Lab) is a holiday review that opens with
praise and ends with its verdict: two stars, not recommended."""

from __future__ import annotations

import csv
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from labs.attention import cost, quotes
from labs.core.errors import BadInput, check_choice, check_text
from labs.core.models import models
from labs.core.work import lm
from labs.core.work.jobs import JOBS

ASSETS = Path(__file__).resolve().parents[2] / "assets"
DOCUMENT = ASSETS / "long_review.txt"
DOCUMENT_VERDICT = "negative"  # the reviewer's own: "Two stars out of five", "we cannot recommend"
REVIEWS = ASSETS / "sentiment.csv"
FAMILIES = ("masked", "encoder")
STRATEGIES = ("head", "tail", "head_tail", "chunks")
STRATEGY_WORDS = {"head": "Head", "tail": "Tail", "head_tail": "Head + tail", "chunks": "Sliding window"}
STRATEGY_NOTES = {"head": "the first tokens that fit", "tail": "the last tokens that fit",
                  "head_tail": "the first quarter of the limit (128 of 512, as the textbook) and the rest from the end",
                  "chunks": "overlapping chunks (by half), each read alone; their sentence vectors averaged"}
MAX_CHARS = 20_000
LABELS = ("negative", "positive")
CLASSIFIER = ("Nearest prototype: the document's sentence vector (mean of the last layer's token vectors) is "
              "compared by cosine with two prototypes, the mean vectors of the {train} labelled training reviews "
              "of assets/sentiment.csv, one per label. No fine-tuned classifier ships offline; nothing here is "
              "fine-tuned. On the file's {held_out} held-out reviews this classifier is right {accuracy:.0%} of "
              "the time.")
@dataclass(frozen=True)
class Prototypes:
    model: str
    train: int
    held_out: int
    accuracy: float
    positive: np.ndarray = field(repr=False)
    negative: np.ndarray = field(repr=False)

    def judge(self, vector: np.ndarray) -> dict:
        """Cosine with each prototype; the label of the nearer one."""
        vector = vector / np.linalg.norm(vector)
        pos = float(vector @ self.positive / np.linalg.norm(self.positive))
        neg = float(vector @ self.negative / np.linalg.norm(self.negative))
        return {"cos_positive": round(pos, 4), "cos_negative": round(neg, 4), "margin": round(pos - neg, 4),
                "label": "positive" if pos > neg else "negative"}

    def describe(self) -> str:
        return CLASSIFIER.format(train=self.train, held_out=self.held_out, accuracy=self.accuracy)


@dataclass
class Reading:
    """One strategy's reading of the document: which token spans it read and what the classifier said."""
    strategy: str
    spans: list[tuple[int, int]]  # [start, end) in the document's tokens (without special tokens)
    tokens_read: int
    verdict: dict
    chunks: list[dict] = field(default_factory=list)  # the sliding window's chunks, each with its own verdict


@dataclass
class LongDocument:
    model: str
    source: str
    builtin: bool
    tokens: int  # the document's tokens, special tokens left out
    limit: int  # what the model reads at once, its special tokens included
    whole_error: str | None  # the model's own error when given more tokens than its position table has
    readings: list[Reading]
    classifier: Prototypes
    notes: list[str]

    def to_json(self) -> dict:
        return {"model": self.model, "source": self.source, "builtin": self.builtin, "tokens": self.tokens,
                "limit": self.limit, "whole_error": self.whole_error,
                "readings": [dict(asdict(r), spans=[list(span) for span in r.spans]) for r in self.readings],
                "classifier": {"kind": "nearest prototype (mean pooling, cosine)", "description":
                               self.classifier.describe(), "train_examples": self.classifier.train,
                               "held_out": self.classifier.held_out, "held_out_accuracy": self.classifier.accuracy},
                "document_verdict": DOCUMENT_VERDICT if self.builtin else None,
                "course": quotes.to_json(quotes.LONG_DOCUMENTS), "notes": self.notes}


def mean_vectors(loaded, rows: list[list[int]]) -> list[np.ndarray]:
    """Each row's sentence vector: the mean of its last-layer token vectors (the shared hidden-states pass;
    each row is cut back to its own tokens, so padding never enters the mean)."""
    return [states[-1].astype(np.float64).mean(axis=0) for states in lm.hidden_states(loaded, rows)]


def _prototypes(loaded) -> Prototypes:
    with REVIEWS.open(newline="", encoding="utf-8") as f:
        reviews = list(csv.DictReader(f))
    limit = min(loaded.max_tokens, 512)
    rows = [loaded.tokenizer(r["text"], truncation=True, max_length=limit)["input_ids"] for r in reviews]
    vectors = mean_vectors(loaded, rows)
    train = [i for i, r in enumerate(reviews) if r["split"] == "train"]
    centroid = {label: np.mean([vectors[i] for i in train if reviews[i]["label"] == label], axis=0) for label in LABELS}
    made = Prototypes(loaded.name, len(train), 0, 0.0, centroid["positive"], centroid["negative"])
    held_out = [i for i, r in enumerate(reviews) if r["split"] != "train"]
    right = sum(made.judge(vectors[i])["label"] == reviews[i]["label"] for i in held_out)
    return Prototypes(loaded.name, len(train), len(held_out), right / len(held_out), centroid["positive"],
                      centroid["negative"])


def prototypes(loaded) -> Prototypes:
    """Built once per model and server, shared."""
    return JOBS.shared("long_document_prototypes", (loaded.name, loaded.head), lambda: _prototypes(loaded),
                       gpu_units=100)  # 352 reviews encoded: on ZeroGPU, in a GPU call


def windows(n: int, content: int) -> dict[str, list[tuple[int, int]]]:
    """The token spans each strategy reads from a document of n tokens when `content` fit at once. Head +
    tail keeps the first quarter of the model's limit (128 of BERT's 512, as the textbook) and fills the rest
    from the end; the chunks overlap by half."""
    if n <= content:
        return {s: [(0, n)] for s in STRATEGIES}
    head = (content + 2) // 4
    stride = max(1, content // 2)
    chunks, start = [], 0
    while True:
        chunks.append((start, min(start + content, n)))
        if start + content >= n:
            break
        start += stride
    return {"head": [(0, content)], "tail": [(n - content, n)], "head_tail": [(0, head), (n - (content - head), n)],
            "chunks": chunks}


def read(loaded, text, strategy="all") -> LongDocument:
    loaded = models.load(loaded, *FAMILIES)
    builtin = text is None or (isinstance(text, str) and not text.strip())
    text = DOCUMENT.read_text() if builtin else check_text(text, "a long review", max_chars=MAX_CHARS,
                                                           what="document")
    asked = STRATEGIES if strategy in (None, "", "all") else (check_choice(strategy, STRATEGIES + ("all",),
                                                                           "The strategy"),)
    tokenizer = loaded.tokenizer
    pieces = tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"]  # (no "too long" warning)
    if not pieces:
        raise BadInput("The document has no tokens. Paste a long text, or leave it empty for the built-in review.")
    limit = min(loaded.max_tokens, 512)
    content = limit - len(cost.with_specials(tokenizer, []))
    spans = windows(len(pieces), content)
    classifier = prototypes(loaded)
    inputs = inputs_of(tokenizer, pieces, {s: spans[s] for s in asked})
    vectors = dict(zip(inputs, mean_vectors(loaded, list(inputs.values()))))  # one batched request
    readings = [reading(s, spans[s], [vectors[key] for key in inputs if key[0] == s], classifier) for s in asked]
    positions = getattr(loaded.model.config, "max_position_embeddings", None)
    whole_error = None
    if positions and len(pieces) + 2 > positions:  # a few tokens past the table show its error at once
        whole_error = cost.error_past_the_table(loaded, cost.with_specials(tokenizer, pieces[:positions + 8]))
    notes = [] if len(pieces) > content else [f"Your document is {len(pieces)} tokens: it fits in one pass of "
                                              f"{limit}, so every strategy reads all of it."]
    return LongDocument(loaded.name, loaded.source, builtin, len(pieces), limit, whole_error, readings, classifier,
                        notes)


def inputs_of(tokenizer, pieces: list[int], spans: dict) -> dict[tuple[str, int], list[int]]:
    """What the model reads for each strategy: a truncation's spans joined into one input; each chunk alone."""
    inputs = {}
    for strategy, parts in spans.items():
        if strategy == "chunks":
            inputs.update({(strategy, i): cost.with_specials(tokenizer, pieces[a:b]) for i, (a, b) in enumerate(parts)})
        else:
            inputs[(strategy, 0)] = cost.with_specials(tokenizer, [t for a, b in parts for t in pieces[a:b]])
    return inputs


def reading(strategy: str, spans: list[tuple[int, int]], vectors: list[np.ndarray], classifier: Prototypes) -> Reading:
    """A truncation is one input; the sliding window averages its chunks' unit vectors (the textbook's
    "average the [CLS] representations across chunks", with the mean-pooled vectors MiniLM was trained for)."""
    read_tokens = sum(b - a for a, b in spans) if strategy != "chunks" else spans[-1][1] - spans[0][0]
    if strategy != "chunks":
        return Reading(strategy, spans, read_tokens, classifier.judge(vectors[0]))
    units = [v / np.linalg.norm(v) for v in vectors]
    chunks = [{"start": a, "end": b, **classifier.judge(v)} for (a, b), v in zip(spans, units)]
    return Reading(strategy, spans, read_tokens, classifier.judge(np.mean(units, axis=0)), chunks)


def long_document_json(text: str, model: str, strategy: str = "all") -> dict:
    """The `long_document` API: text empty for the built-in review; strategy one of STRATEGIES or "all"."""
    return read(models.load(model, *FAMILIES), text, strategy).to_json()
