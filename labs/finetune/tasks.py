"""Fine-tune, the task heads: sentence pairs, named entities (BIO tags) and extractive QA. Each task
has its built-in data set (assets/, fixed train/validation split), its encoding (segment ids, word
labels aligned to word pieces with -100, answer start/end tokens), its metric (accuracy, entity-level
F1, exact match and token F1) and its decoding (word tags, the best answer span)."""

from __future__ import annotations

import collections
import csv
import json
import random
import re
import string
from dataclasses import dataclass
from pathlib import Path

from labs.core.errors import BadInput

ASSETS = Path(__file__).resolve().parents[2] / "assets"
TASKS = {"sentiment": "Sentiment (one sentence → positive / negative)",
         "pair": "Sentence pair (paraphrase or not)",
         "ner": "Named entities (BIO tags: PER, LOC, ORG)",
         "qa": "Extractive question answering (answer span)"}
HEADS = {"sentiment": "sequence_classification", "pair": "sequence_classification",
         "ner": "token_classification", "qa": "question_answering"}
METRIC = {"sentiment": "accuracy", "pair": "accuracy", "ner": "entity_f1", "qa": "exact_match"}
# (lr, epochs) per task: measured on all-MiniLM-L6-v2 (python -m tests.benchmarks finetune_tasks); pairs
# overshoot at 3e-4. Why they differ from the course's recipes: labs.finetune.recipes
TASK_DEFAULTS = {"sentiment": (5e-5, 3), "pair": (1e-4, 5), "ner": (3e-4, 5), "qa": (3e-4, 5)}
METRIC_WORDS = {"accuracy": "accuracy", "entity_f1": "entity F1", "exact_match": "exact match",
                "metric": "metric (each run's own)"}
NER_LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG"]
IGNORE = -100  # the label the loss skips: special tokens and continuation word pieces
MAX_PAIR_LENGTH, MAX_QA_LENGTH, MAX_ANSWER_TOKENS = 96, 160, 15


def check_task(task) -> str:
    if not isinstance(task, str) or task not in TASKS:  # an object or a list cannot even be looked up
        raise BadInput(f"Unknown task {str(task)[:40]!r}. Use one of: {', '.join(TASKS)}.")
    return task


@dataclass
class TaskData:
    """A task's data: rows are ((sentence_a, sentence_b), label id) for pairs, {"tokens", "tags"} for
    NER and {"context", "question", "answer", "answer_start"} for QA."""
    task: str
    name: str
    labels: list[str]
    train: list
    validation: list


def pair_data() -> TaskData:
    """Sentence pairs from templates: a paraphrase, one changed detail, or an unrelated sentence."""
    with (ASSETS / "pairs.csv").open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    labels = ["different", "paraphrase"]
    split = {s: [((r["sentence_a"], r["sentence_b"]), labels.index(r["label"])) for r in rows if r["split"] == s]
             for s in ("train", "validation")}
    return TaskData("pair", "built-in sentence pairs", labels, split["train"], split["validation"])


def _jsonl(name: str) -> list[dict]:
    with (ASSETS / name).open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def ner_data() -> TaskData:
    rows = _jsonl("ner.jsonl")
    return TaskData("ner", "built-in entity sentences", NER_LABELS,
                    [r for r in rows if r["split"] == "train"], [r for r in rows if r["split"] == "validation"])


def qa_data() -> TaskData:
    rows = _jsonl("qa.jsonl")
    for r in rows:
        check_answer(r["context"], r["answer"], r["answer_start"])
    return TaskData("qa", "built-in questions on short biographies", [],
                    [r for r in rows if r["split"] == "train"], [r for r in rows if r["split"] == "validation"])


def task_data(task: str):
    """The built-in data of a task (the sentiment set is a data.Dataset)."""
    from labs.finetune.data import builtin_data

    return {"sentiment": builtin_data, "pair": pair_data, "ner": ner_data, "qa": qa_data}[check_task(task)]()


def check_answer(context: str, answer: str, start: int) -> None:
    if not answer or context[start:start + len(answer)] != answer:
        raise BadInput(f"The answer {answer[:60]!r} is not in its context at character {start}: an extractive "
                       "QA example's answer must be a span copied from the context.")


def take_rows(rows: list, n: int, seed: int) -> list:
    """n training rows, shuffled by seed (NER and QA have no classes to balance)."""
    picked = list(rows)
    random.Random(seed).shuffle(picked)
    return picked[:n]


# ------------------------------------------------------------------ encoding


def align_labels(word_ids: list, word_labels: list[int]) -> list[int]:
    """A label per word piece: the word's label on its first piece; IGNORE (-100) on continuation pieces
    ("wash ##ington": ##ington) and on special tokens, so that each word counts once in the loss."""
    out, previous = [], None
    for w in word_ids:
        out.append(IGNORE if w is None or w == previous else word_labels[w])
        previous = w
    return out


def answer_tokens(offsets, sequence_ids, start_char: int, end_char: int) -> tuple[int, int] | None:
    """The first and last context tokens of the answer's characters, or None if truncation cut it."""
    context = [i for i, s in enumerate(sequence_ids) if s == 1]
    start = next((i for i in context if offsets[i][0] <= start_char < offsets[i][1]), None)
    end = next((i for i in reversed(context) if offsets[i][0] < end_char <= offsets[i][1]), None)
    return None if start is None or end is None or end < start else (start, end)


class EncodedTaskRows:
    """A task's rows tokenised once, with their labels aligned to the word pieces; each batch padded to its
    own longest row by transformers' collators (DataCollatorForTokenClassification pads NER's labels with
    -100, DataCollatorWithPadding the rest); evaluated with the task's metric."""

    def __init__(self, task: str, tokenizer, rows: list, device: str):
        from transformers import DataCollatorForTokenClassification, DataCollatorWithPadding

        self.task, self.tokenizer, self.rows, self.device = task, tokenizer, rows, device
        self.collate = (DataCollatorForTokenClassification(tokenizer, label_pad_token_id=IGNORE) if task == "ner"
                        else DataCollatorWithPadding(tokenizer))
        self.segments = None
        if task == "pair":
            enc = tokenizer([a for (a, _), _ in rows], [b for (_, b), _ in rows], truncation=True,
                            max_length=MAX_PAIR_LENGTH)
            self.segments, self.labels = enc["token_type_ids"], [[y] for _, y in rows]
        elif task == "ner":
            enc = tokenizer([r["tokens"] for r in rows], is_split_into_words=True, truncation=True, max_length=128)
            self.labels = [align_labels(enc.word_ids(i), [NER_LABELS.index(t) for t in r["tags"]])
                           for i, r in enumerate(rows)]
        else:
            enc = tokenizer([r["question"] for r in rows], [r["context"] for r in rows], truncation="only_second",
                            max_length=MAX_QA_LENGTH, return_offsets_mapping=True)
            self.offsets = enc["offset_mapping"]
            self.sequence_ids = [enc.sequence_ids(i) for i in range(len(rows))]
            self.labels = []
            for i, r in enumerate(rows):
                span = answer_tokens(self.offsets[i], self.sequence_ids[i], r["answer_start"],
                                     r["answer_start"] + len(r["answer"]))
                if span is None:
                    raise BadInput(f"The answer {r['answer'][:40]!r} falls outside the first {MAX_QA_LENGTH} tokens.")
                self.labels.append(list(span))
        self.ids = enc["input_ids"]

    def __len__(self) -> int:
        return len(self.ids)

    def features(self, i: int) -> dict:
        """Row i as the model's inputs and the task's labels (segment ids for pairs only)."""
        if self.task == "pair":
            return {"input_ids": self.ids[i], "token_type_ids": self.segments[i], "labels": self.labels[i][0]}
        if self.task == "ner":
            return {"input_ids": self.ids[i], "labels": self.labels[i]}
        return {"input_ids": self.ids[i], "start_positions": self.labels[i][0], "end_positions": self.labels[i][1]}

    def batch(self, index) -> dict:
        """The rows at `index`, padded: tensors on the run's device."""
        batch = self.collate([self.features(i) for i in index])
        return {name: tensor.to(self.device) for name, tensor in batch.items()}


# ------------------------------------------------------------------ decoding and metrics


def best_span(start_logits, end_logits, sequence_ids, max_tokens: int = MAX_ANSWER_TOKENS) -> tuple[int, int, float]:
    """(start, end, probability) of the best answer: the highest p_start·p_end over context tokens with
    start ≤ end < start + max_tokens (softmax over the context tokens only)."""
    import torch

    context = torch.tensor([s == 1 for s in sequence_ids])
    p_start = torch.softmax(start_logits.float().masked_fill(~context, -1e9), -1)
    p_end = torch.softmax(end_logits.float().masked_fill(~context, -1e9), -1)
    scores = torch.triu(torch.tril(p_start[:, None] * p_end[None, :], max_tokens - 1))
    best = int(scores.argmax())
    return best // scores.shape[1], best % scores.shape[1], float(scores.flatten()[best])


def entity_spans(tags: list[str]) -> list[tuple[str, int, int]]:
    """(type, first word, last word) of each entity in BIO word tags, grouped as
    pipeline("token-classification", aggregation_strategy="first") groups them: an I- tag of the same
    type continues an entity, a B- tag or another type starts a new one; O words are not entities."""
    spans = []
    for i, tag in enumerate(tags):
        bi, kind = (tag[0], tag[2:]) if tag[:2] in ("B-", "I-") else ("I", tag)
        if spans and spans[-1][0] == kind and bi != "B" and spans[-1][2] == i - 1:
            spans[-1] = (kind, spans[-1][1], i)
        else:
            spans.append((kind, i, i))
    return [s for s in spans if s[0] != "O"]


def entity_f1(gold: list[list[str]], predicted: list[list[str]]) -> dict:
    """Entity-level precision, recall and F1: an entity counts only if its type and words are exact."""
    tp = n_gold = n_pred = 0
    for g, p in zip(gold, predicted):
        g_spans, p_spans = set(entity_spans(g)), set(entity_spans(p))
        tp, n_gold, n_pred = tp + len(g_spans & p_spans), n_gold + len(g_spans), n_pred + len(p_spans)
    precision, recall = tp / max(n_pred, 1), tp / max(n_gold, 1)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"entity_f1": f1, "precision": precision, "recall": recall}


def normalize_answer(text: str) -> list[str]:
    """SQuAD's normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(c for c in text.lower() if c not in string.punctuation)
    return re.sub(r"\b(a|an|the)\b", " ", text).split()


def answer_scores(gold: str, predicted: str) -> tuple[float, float]:
    """(exact match, token F1) as SQuAD computes them."""
    g, p = normalize_answer(gold), normalize_answer(predicted)
    common = sum((collections.Counter(g) & collections.Counter(p)).values())
    f1 = 0.0 if not common else 2 * common / (len(g) + len(p))
    return float(g == p), f1


def evaluate_task(model, data: EncodedTaskRows, batch_size: int = 64) -> tuple[float, dict, list]:
    """(mean loss, metrics, one prediction per row) on a task's data, without gradients. The metric
    the lab reads first is metrics[METRIC[task]]."""
    import torch

    model.eval()
    total_loss, predictions = 0.0, []
    with torch.no_grad():
        for first in range(0, len(data), batch_size):
            index = range(first, min(first + batch_size, len(data)))
            out = model(**data.batch(index))
            total_loss += out.loss.item() * len(index)
            predictions += _decode(data, index, out)
    return total_loss / len(data), _metrics(data, predictions), predictions


def _decode(data: EncodedTaskRows, index, out) -> list:
    import torch

    if data.task == "pair":
        probs = torch.softmax(out.logits.float(), -1)
        return [{"label": int(p.argmax()), "prob": float(p.max())} for p in probs]
    if data.task == "ner":
        probs = torch.softmax(out.logits.float(), -1)
        rows = []
        for b, i in enumerate(index):
            firsts = [k for k, y in enumerate(data.labels[i]) if y != IGNORE]
            rows.append({"tags": [NER_LABELS[int(probs[b, k].argmax())] for k in firsts],
                         "prob": float(probs[b, firsts].max(-1).values.mean()) if firsts else 0.0})
        return rows
    rows = []
    for b, i in enumerate(index):
        n = len(data.ids[i])
        start, end, prob = best_span(out.start_logits[b, :n], out.end_logits[b, :n], data.sequence_ids[i])
        context = data.rows[i]["context"]
        rows.append({"answer": context[data.offsets[i][start][0]:data.offsets[i][end][1]], "prob": prob})
    return rows


def _metrics(data: EncodedTaskRows, predictions: list) -> dict:
    if data.task == "pair":
        return {"accuracy": sum(p["label"] == y for p, (_, y) in zip(predictions, data.rows)) / len(data.rows)}
    if data.task == "ner":
        gold = [r["tags"][:len(p["tags"])] for r, p in zip(data.rows, predictions)]
        return entity_f1(gold, [p["tags"] for p in predictions])
    scores = [answer_scores(r["answer"], p["answer"]) for r, p in zip(data.rows, predictions)]
    return {"exact_match": sum(s[0] for s in scores) / len(scores), "token_f1": sum(s[1] for s in scores) / len(scores)}


def describe_row(task: str, row, labels: list[str]) -> tuple[str, str]:
    """(what the row shows, its true answer) for the before / after table."""
    if task == "pair":
        return f"{row[0][0]} ‖ {row[0][1]}", labels[row[1]]
    if task == "ner":
        return " ".join(row["tokens"]), entities_text(row["tokens"], row["tags"])
    return f"{row['question']} ‖ {row['context']}", row["answer"]


def entities_text(words: list[str], tags: list[str]) -> str:
    return ", ".join(f"{' '.join(words[a:b + 1])} ({kind})" for kind, a, b in entity_spans(tags)) or "(none)"


def prediction_text(task: str, row, prediction: dict, labels: list[str]) -> dict:
    if task == "pair":
        return {"label": labels[prediction["label"]], "prob": prediction["prob"]}
    if task == "ner":
        return {"label": entities_text(row["tokens"], prediction["tags"]), "prob": prediction["prob"]}
    return {"label": prediction["answer"] or "(empty)", "prob": prediction["prob"]}
