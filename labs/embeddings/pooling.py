"""Embeddings, sentence vectors: a sentence's last-layer token vectors pooled three ways, each sentence's cosine
similarity with every other, and how well each pooling finds a paraphrase. The three ways are the [CLS] vector, the
mean and the element-wise max; each is scored by how well it finds a sentence's paraphrase among the others (top-1
accuracy, mean reciprocal rank).

preprocess (one sentence per line, optional " | label": sentences with the same label are paraphrases;
unlabelled ones are distractors) → forward (the lab's shared hidden-states pass, `lm.hidden_states`: one
padded pass, each row cut back to its own tokens, so padding never enters a mean or a max) → postprocess
(pool, cosine, retrieval). Which pooling the model was trained with is read from its sentence-transformers
files (`1_Pooling/config.json`) where it has them, and never guessed."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from labs.core.errors import BadInput, check_text
from labs.core.models import models
from labs.core.ui import course_quotes
from labs.core.work import lm
from labs.embeddings import compute

FAMILIES = ("masked", "encoder")  # models with a [CLS] (or <s>) first token that reads the whole sentence
POOLINGS = ("cls", "mean", "max")
POOLING_NAMES = {"cls": "[CLS] (first token)", "mean": "mean of the tokens", "max": "max of the tokens"}
MIN_SENTENCES, MAX_SENTENCES, MAX_TOKENS = 3, 16, 128
# Written for LM Lab: four pairs of paraphrases that share few words, and four distractors that share many
# words with one sentence of a pair but not its meaning.
EXAMPLE = """The film was a complete waste of time. | film
I found the movie boring and pointless. | film
She bought a new car yesterday. | car
Yesterday she purchased a brand-new automobile. | car
Our train to London was cancelled this morning. | train
This morning's London train didn't run. | train
How do I reset my password? | password
I forgot my password, how can I change it? | password
The film was a complete success.
She sold her old car yesterday.
Our train to London was on time this morning.
How do I reset my router?"""
# What the course says: course_quotes' entries (tests/test_course_quotes.py checks each under its heading).
TEXTBOOK, LECTURE = "003_4e137ff2e23b0b86.txt", "000_e134d1b9ed4e6724.txt"
QUOTE_TEXTBOOK = course_quotes.text("pooling_textbook")
QUOTE_LECTURE = course_quotes.text("pooling_lecture")
LECTURE_SLIDE = course_quotes.get("pooling_lecture").where
SENTENCE_TRANSFORMERS_MODES = {"pooling_mode_cls_token": "cls", "pooling_mode_mean_tokens": "mean",
                               "pooling_mode_max_tokens": "max"}


@dataclass
class Retrieval:
    """For each sentence that has a paraphrase: is the nearest other sentence one of its paraphrases?"""
    queries: list[int]  # the sentences with a paraphrase
    nearest: list[int]  # each query's nearest other sentence
    ranks: list[int]  # each query's best paraphrase's rank among the other sentences (1 = nearest)

    @property
    def accuracy(self) -> float:
        return float(np.mean([r == 1 for r in self.ranks]))

    @property
    def mrr(self) -> float:
        return float(np.mean([1 / r for r in self.ranks]))


@dataclass
class Pooled:
    model: str
    source: str
    sentences: list[tuple[str, str]]  # (text, label)
    tokens: list[list[str]]
    vectors: dict[str, np.ndarray]  # pooling -> [n, hidden]
    trained_pooling: str | None  # what the model's sentence-transformers config says (None: it has none)

    def similarity(self, pooling: str) -> np.ndarray:
        return compute.cosine_matrix(self.vectors[pooling])

    def retrieval(self, pooling: str) -> Retrieval:
        return retrieval(self.similarity(pooling), [label for _, label in self.sentences])

    def to_json(self) -> dict:
        poolings = {}
        for p in POOLINGS:
            r = self.retrieval(p)
            poolings[p] = {"similarity": compute.rounded(self.similarity(p)), "accuracy": r.accuracy, "mrr": r.mrr,
                           "queries": r.queries, "nearest": r.nearest, "ranks": r.ranks}
        return {"model": self.model, "source": self.source, "trained_pooling": self.trained_pooling,
                "dims": int(self.vectors["mean"].shape[1]),
                "sentences": [{"text": t, "label": label, "tokens": tokens}
                              for (t, label), tokens in zip(self.sentences, self.tokens)],
                "poolings": poolings}


def parse(text) -> list[tuple[str, str]]:
    """(sentence, label) per line; at least one label shared by two sentences (a paraphrase to find)."""
    text = check_text(text, "one sentence per line, with the same | label on two paraphrases", what="sentences")
    found = [(s.strip(), label.strip()) for s, _, label in (line.partition("|") for line in text.splitlines())
             if s.strip()]
    if not MIN_SENTENCES <= len(found) <= MAX_SENTENCES:
        raise BadInput(f"Type {MIN_SENTENCES} to {MAX_SENTENCES} sentences, one per line; you typed {len(found)}.")
    labels = [label for _, label in found if label]
    if not any(labels.count(label) > 1 for label in labels):
        raise BadInput("Give two sentences that mean the same thing the same label after a bar (“I love it. | love” "
                       "and “It is great. | love”), so that each has a paraphrase to find.")
    return found


def pool(states: np.ndarray) -> dict[str, np.ndarray]:
    """One sentence's last-layer token vectors [n, hidden] (its own tokens only) pooled three ways."""
    return {"cls": states[0], "mean": states.mean(axis=0), "max": states.max(axis=0)}


def retrieval(similarity: np.ndarray, labels: list[str]) -> Retrieval:
    queries, nearest, ranks = [], [], []
    for i, label in enumerate(labels):
        others = [j for j in np.argsort(-similarity[i], kind="stable") if j != i]
        if label and labels.count(label) > 1:
            queries.append(i)
            nearest.append(int(others[0]))
            ranks.append(next(k for k, j in enumerate(others, 1) if labels[j] == label))
    return Retrieval(queries, nearest, ranks)


def trained_pooling(choice: models.ModelChoice) -> str | None:
    """The pooling the model's sentence-transformers files name (modules.json → its Pooling folder's
    config.json), from its folder or the Hub cache; None when it has none (not a sentence-transformers model)."""
    def found(name: str) -> Path | None:
        path = Path(choice.location) / name
        if path.is_file():
            return path
        if choice.source == "hub":
            from huggingface_hub import try_to_load_from_cache

            cached = try_to_load_from_cache(choice.location, name)
            return Path(cached) if isinstance(cached, str) else None
        return None

    try:
        modules = found("modules.json")
        folders = [m["path"] for m in json.loads(modules.read_text()) if m.get("type", "").endswith("Pooling")] \
            if modules else ["1_Pooling"]
        config = found(f"{folders[0]}/config.json") if folders else None
        modes = json.loads(config.read_text()) if config else {}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    chosen = [name for key, name in SENTENCE_TRANSFORMERS_MODES.items() if modes.get(key)]
    return "+".join(chosen) or None


def run(loaded: models.LoadedModel, sentences_text=EXAMPLE) -> Pooled:
    pairs = parse(sentences_text)
    loaded = models.load(loaded, *FAMILIES)
    rows = [lm.check_length(loaded.tokenizer(s)["input_ids"], min(MAX_TOKENS, loaded.max_tokens), f"Sentence {i + 1}")
            for i, (s, _) in enumerate(pairs)]
    states = lm.hidden_states(loaded, rows)  # [layers + 1, n_i, hidden] per sentence, its own tokens only
    pooled = [pool(s[-1]) for s in states]
    vectors = {p: np.stack([v[p] for v in pooled]) for p in POOLINGS}
    tokens = [models.readable_tokens(loaded.tokenizer, r) for r in rows]
    return Pooled(loaded.name, loaded.source, pairs, tokens, vectors, trained_pooling(loaded.choice))


def pooling_json(sentences: str = EXAMPLE, model: str = "") -> dict:
    """The `pooling` API. Typed input is checked before the model is looked up."""
    parse(sentences)
    return run(models.load(model, *FAMILIES), sentences).to_json()
