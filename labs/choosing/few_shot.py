"""Choosing a model, prompting without training: zero-, one- and few-shot sentiment classification with
a causal LM. The prompt holds k labelled reviews from a pool, then the review to classify; the label is
the one whose first token the model finds more probable after "Sentiment:". Natural labels
(positive/negative) against arbitrary ones (apple/banana) show how much the model relies on what the
label words mean, and several random orders of the examples show how fragile the curve is.

Every prompt for one (shots, order) starts with the same demonstrations, so their tokens are read once
and their keys and values reused for the 40 reviews (the "few_shot" pass below, batched and cached like
every labs.core.work.lm pass): the result equals a forward pass over the whole prompt (test)."""

from __future__ import annotations

import csv
import random
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from labs.core.errors import BadInput, check_int, check_text
from labs.core.models import models
from labs.core.work import lm
from labs.core.work.jobs import JOBS

DATA = Path(__file__).resolve().parents[2] / "assets" / "few_shot.csv"
FAMILIES = ("causal",)
LABEL_SETS = {"natural": ("positive", "negative"), "arbitrary": ("apple", "banana")}
GOLD = ("positive", "negative")  # the data's labels, in the order of a label pair
DEMO = "Review: {text}\nSentiment: {label}\n"
QUERY = "Review: {text}\nSentiment:"
SHOTS = (0, 1, 2, 4, 8)
SEEDS = (0, 1, 2)
MAX_SHOTS, MAX_SHOT_COUNTS, MAX_SEEDS = 16, 6, 5


@lru_cache(maxsize=1)
def dataset() -> tuple[tuple, tuple]:
    """(pool, evaluation): each a tuple of (text, label) read from assets/few_shot.csv (fixed split)."""
    with DATA.open(newline="") as f:
        rows = list(csv.DictReader(f))
    pool = tuple((r["text"], r["label"]) for r in rows if r["split"] == "pool")
    evaluation = tuple((r["text"], r["label"]) for r in rows if r["split"] == "eval")
    return pool, evaluation


def check_labels(labels) -> tuple[str, str]:
    """"natural", "arbitrary", or a pair of words "good/bad" (for positive/negative)."""
    if isinstance(labels, (list, tuple)) and len(labels) == 2:
        labels = "/".join(str(x) for x in labels)
    text = check_text(labels, "natural", max_chars=60, what="labels")
    if text in LABEL_SETS:
        return LABEL_SETS[text]
    words = [w.strip() for w in text.split("/")]
    if len(words) != 2 or not all(words) or words[0] == words[1] or any(" " in w for w in words):
        raise BadInput("The labels must be natural, arbitrary, or two different single words for positive and "
                       f"negative separated by a slash, such as good/bad; not “{text[:40]}”.")
    return words[0], words[1]


def int_list(values, name: str, default: tuple, low: int, high: int, most: int) -> tuple[int, ...]:
    """A list of whole numbers (or "0, 1, 2" as text), each low..high, at most `most` of them."""
    if values is None or values == "" or values == []:
        return default
    if isinstance(values, str):
        values = [v for v in values.replace(",", " ").split()]
    if isinstance(values, (int, float)):
        values = [values]
    if not isinstance(values, (list, tuple)) or len(values) > most:
        raise BadInput(f"{name} must be a list of at most {most} whole numbers, such as 0, 1, 2.")
    return tuple(dict.fromkeys(check_int(v, name, low, high) for v in values))


def demonstrations(shots: int, seed: int) -> list[tuple[str, str]]:
    """`shots` reviews drawn from the pool in a random order that `seed` fixes."""
    pool, _ = dataset()
    return random.Random(seed).sample(list(pool), shots)


def prompt(demos: list[tuple[str, str]], text: str, labels: tuple[str, str]) -> str:
    """The prompt exactly as the model reads it: the demonstrations with their labels, then the review."""
    word = dict(zip(GOLD, labels))
    return "".join(DEMO.format(text=t, label=word[g]) for t, g in demos) + QUERY.format(text=text)


def label_ids(loaded: models.LoadedModel, labels: tuple[str, str]) -> tuple[int, int]:
    """Each label's first token as it follows "Sentiment:" (with its leading space)."""
    ids = tuple(loaded.tokenizer(" " + w, add_special_tokens=False)["input_ids"][0] for w in labels)
    if ids[0] == ids[1]:
        raise BadInput(f"“{labels[0]}” and “{labels[1]}” start with the same token here; pick two words that differ "
                       "from their first letters.")
    return ids


def common_prefix(rows: list[list[int]]) -> int:
    """How many leading tokens every row shares (at least one token of each row is left over)."""
    n = min(len(r) for r in rows) - 1
    for i in range(max(n, 0)):
        if any(r[i] != rows[0][i] for r in rows):
            return i
    return max(n, 0)


@lm.register_pass("few_shot", max_batch=128, max_cost=16384)
def _run_few_shot(loaded: models.LoadedModel, items: list[tuple]) -> list[np.ndarray]:
    """items: (prefix ids, suffix ids, label ids). Each distinct prefix runs once; its keys and values
    are repeated for every suffix that follows it, and the suffixes run as one right-padded batch. Returns
    log P(label token | prefix + suffix) for each item (log-softmax over the whole vocabulary)."""
    import torch

    groups: dict[tuple, list[int]] = {}
    for i, (prefix, _, _) in enumerate(items):
        groups.setdefault(prefix, []).append(i)
    results: list = [None] * len(items)
    base, head = loaded.model.base_model, loaded.model.get_output_embeddings()
    with torch.inference_mode():
        for prefix, members in groups.items():
            past = None
            if prefix:
                past = base(input_ids=torch.tensor([prefix], device=loaded.device), use_cache=True).past_key_values
                past.batch_repeat_interleave(len(members))  # [members, heads, len(prefix), head_dim] per layer
            batch = lm.padded(loaded, [items[i][1] for i in members])  # [members, longest suffix]
            seen = torch.ones(len(members), len(prefix), dtype=torch.long, device=loaded.device)
            mask = torch.cat([seen, batch["attention_mask"]], dim=1)  # [members, prefix + suffix]
            hidden = base(input_ids=batch["input_ids"], attention_mask=mask, past_key_values=past,
                          use_cache=False).last_hidden_state  # [members, suffix, hidden]
            last = hidden[torch.arange(len(members), device=hidden.device), batch["attention_mask"].sum(1) - 1]
            logp = torch.log_softmax(head(last).float(), dim=-1)  # [members, vocab]
            for row, i in enumerate(members):
                results[i] = lm._frozen(logp[row, list(items[i][2])].cpu().numpy())
    return results


def label_logprobs(loaded: models.LoadedModel, prompts: list[str], ids: tuple[int, int]) -> list[np.ndarray]:
    """log P(each label's first token | prompt) for prompts that share their beginning, batched."""
    rows = [loaded.tokenizer(p)["input_ids"] for p in prompts]
    for row in rows:
        lm.check_length(row, loaded.max_tokens - 1, "The prompt")
    shared = common_prefix(rows)
    items = [(tuple(r[:shared]), tuple(r[shared:]), ids) for r in rows]
    return lm.submit_many(loaded, "few_shot", items, [len(r) for r in rows])


@dataclass
class Example:
    shots: int
    seed: int
    prompt: str
    tokens: int
    gold: str
    probs: dict  # label word -> P(its first token)
    predicted: str


@dataclass
class FewShotResult:
    model: str
    source: str
    labels: dict  # gold label -> the word used in the prompt
    label_tokens: list
    seeds: list
    eval_size: int
    curve: list = field(default_factory=list)  # [{shots, accuracy, by_seed, min, max}]
    example: Example | None = None

    def to_json(self) -> dict:
        return asdict(self)


def accuracy(loaded: models.LoadedModel, shots: int, seed: int, labels: tuple[str, str]) -> float:
    """The share of the evaluation set classified right with these demonstrations."""
    _, evaluation = dataset()
    demos = demonstrations(shots, seed)
    scores = label_logprobs(loaded, [prompt(demos, t, labels) for t, _ in evaluation], label_ids(loaded, labels))
    right = [GOLD[int(np.argmax(s))] == gold for s, (_, gold) in zip(scores, evaluation)]
    return sum(right) / len(right)


def example(loaded: models.LoadedModel, shots: int, seed: int, labels: tuple[str, str], index: int = 0) -> Example:
    """One evaluation review's prompt, exactly as read, and the two label probabilities."""
    _, evaluation = dataset()
    text, gold = evaluation[index]
    shown = prompt(demonstrations(shots, seed), text, labels)
    scores = label_logprobs(loaded, [shown], label_ids(loaded, labels))[0]
    probs = {w: float(np.exp(s)) for w, s in zip(labels, scores)}
    return Example(shots, seed, shown, len(loaded.tokenizer(shown)["input_ids"]), dict(zip(GOLD, labels))[gold],
                   probs, labels[int(np.argmax(scores))])


def few_shot(loaded: models.LoadedModel, shots=SHOTS, labels="natural", seeds=SEEDS, curve: bool = True) -> FewShotResult:
    """Accuracy on the evaluation set for each number of demonstrations and each order (seed), and the
    prompt of the first review at the most shots. With curve=False, only that prompt (one pass)."""
    models.check_family(loaded.choice, FAMILIES)
    pair = check_labels(labels)
    shots = int_list(shots, "The numbers of shots", SHOTS, 0, MAX_SHOTS, MAX_SHOT_COUNTS)
    seeds = int_list(seeds, "The seeds", SEEDS, 0, 10**6, MAX_SEEDS)
    if curve:  # a job: a class asking for the same curve shares one computation, and it is kept
        return JOBS.shared("few_shot", (loaded.name, pair, shots, seeds), lambda: _few_shot(loaded, pair, shots, seeds))
    return _few_shot(loaded, pair, shots, seeds, curve=False)


def _few_shot(loaded: models.LoadedModel, pair, shots, seeds, curve: bool = True) -> FewShotResult:
    ids = label_ids(loaded, pair)
    result = FewShotResult(loaded.name, loaded.source, dict(zip(GOLD, pair)),
                           [{"label": w, "token": loaded.tokenizer.convert_ids_to_tokens(i), "token_id": i}
                            for w, i in zip(pair, ids)], list(seeds), len(dataset()[1]))
    for k in shots if curve else ():
        by_seed = [accuracy(loaded, k, s, pair) for s in seeds]
        result.curve.append({"shots": k, "accuracy": float(np.mean(by_seed)), "by_seed": by_seed,
                             "min": min(by_seed), "max": max(by_seed)})
    result.example = example(loaded, max(shots), seeds[0], pair)
    return result


def few_shot_api(model: str, shots: list | None = None, labels: str = "natural", seeds: list | None = None) -> dict:
    """API /few_shot: the accuracy curve against the number of examples in the prompt."""
    return few_shot(models.load(model, *FAMILIES), shots, labels, seeds).to_json()
