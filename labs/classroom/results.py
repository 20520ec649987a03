"""A revealed question as the projector and the students see it: the class's answers beside the model's, and the
comparison no other tool shows. The comparison: the model's rank of the class's favourite, the class's share of the
model's favourite, the model's perplexity on the class, the top-5 overlap. For choices and numbers: a histogram and
the right answer.

Computed from what the reveal stored (every distinct answer with its count and the model's score), the
answers the lecturer hid, and the projector's minimum count (rarer answers are shown as "other (n)")."""

from __future__ import annotations

import math

import numpy as np

from labs.classroom import answers
from labs.classroom.scoring import model_key

WORD_KINDS = ("fill_mask", "next_token")
KINDS = WORD_KINDS + ("choice", "number")
TOP_OVERLAP = 5
HISTOGRAM_BINS = 10
CONFIDENCE_LEVELS = answers.CONFIDENCE_LEVELS


def visible(stored: dict, hidden: list[str]) -> list[dict]:
    """The stored answers the lecturer has not hidden, most given first."""
    gone = set(hidden)
    return [a for a in stored["answers"] if a["key"] not in gone]


def view(question: dict, stored: dict, hidden: list[str], min_count: int, *, everything: bool = False) -> dict:
    """The reveal's JSON: `class` (each answer, its count and share, the model's probability and rank), `other`
    (answers given by fewer than min_count students, as one group), `model_top` (the model's own guesses
    with the class's share of each), `agreement`; for choices and numbers a `histogram` and the right answer.
    With everything=True (the lecturer's API) the grouped answers are listed too, flagged `grouped`."""
    shown = visible(stored, hidden)
    total = sum(a["count"] for a in shown)
    rows, other = [], {"answers": 0, "count": 0}
    for a in shown:
        grouped = a["count"] < min_count
        if grouped:
            other["answers"] += 1
            other["count"] += a["count"]
        if everything or not grouped:
            rows.append({"answer": a["answer"], "count": a["count"], "share": a["count"] / total if total else 0.0,
                         "model_prob": a.get("model_prob"), "model_rank": a.get("model_rank"),
                         "pieces": a.get("pieces"), "confidence": a.get("confidence"),
                         "mean_confidence": mean_confidence(a.get("confidence")),
                         **({"grouped": grouped} if everything else {})})
    out = {"question": question, "total": total, "hidden": sum(a["count"] for a in stored["answers"]) - total,
           "min_count": min_count, "class": rows, "other": other, "confidence": confidence(question, shown)}
    if question["kind"] in WORD_KINDS:
        out.update(model=stored.get("model"), source=stored.get("source"), approximation=stored.get("approximation"),
                   model_top=model_top(stored, shown, total), agreement=agreement(stored, shown, total))
    else:
        out.update(model_top=[], histogram=histogram(question, shown), agreement=right_answer(question, shown, total))
    return out


def mean_confidence(levels: list[int] | None) -> float | None:
    """The mean level (1 guessing … 4 sure) of the students who said how sure they were; None when nobody did."""
    if not levels or not sum(levels):
        return None
    return sum(i * n for i, n in enumerate(levels, 1)) / sum(levels)


def confidence(question: dict, shown: list[dict]) -> dict:
    """The class's confidence in the answers shown: how many said how sure they were at each level, the mean,
    and for a choice or a number with a right answer the mean of those who were right and of those who were wrong
    (a calibrated class is surer when it is right)."""
    levels = [sum((a.get("confidence") or [0] * 4)[i] for a in shown) for i in range(len(CONFIDENCE_LEVELS))]
    out = {"levels": levels, "answered": sum(levels), "mean": mean_confidence(levels)}
    if question["kind"] not in WORD_KINDS and question.get("correct") not in (None, ""):
        right = {a["key"] for a in shown if is_right(question, a["key"])}
        for name, keep in (("mean_right", lambda a: a["key"] in right), ("mean_wrong", lambda a: a["key"] not in right)):
            picked = [a.get("confidence") or [0] * 4 for a in shown if keep(a)]
            out[name] = mean_confidence([sum(c[i] for c in picked) for i in range(len(CONFIDENCE_LEVELS))])
    return out


def is_right(question: dict, key: str) -> bool:
    """A choice's right option, or a number within 1 % of the right one."""
    if question["kind"] == "number":
        right = float(answers.number(question["correct"])[1])
        return math.isclose(float(key), right, rel_tol=0.01, abs_tol=1e-12)
    return key == answers.key_of(question["correct"])


def model_top(stored: dict, shown: list[dict], total: int) -> list[dict]:
    counts = {a["key"]: a["count"] for a in shown}
    return [{"answer": t["answer"], "prob": t["prob"], "piece": t.get("piece", False), "shown": shown_guess(t),
             "class_count": counts.get(model_key(t["answer"]), 0),
             "class_share": counts.get(model_key(t["answer"]), 0) / total if total else 0.0}
            for t in stored.get("model_top", [])]


def shown_guess(top: dict) -> str:
    """One of the model's guesses as the class reads it: a word's first piece as "cou…", a word's last piece
    (WordPiece's "##ing") as "…ing", a whole word as itself."""
    text = top["answer"].strip() or top["answer"]
    if text.startswith("##"):
        return "…" + text[2:]
    return text + "…" if top.get("piece") else text


def agreement(stored: dict, shown: list[dict], total: int) -> dict:
    """How the class and the model agree: the model's rank (and probability) of the class's favourite, the
    class's share for the model's favourite, the model's mean log-probability of the class's answers (each
    student's answer once) and its perplexity on the class, and the overlap of the two top fives."""
    if not shown:
        return {"answers": 0}
    favourite = shown[0]
    top = stored.get("model_top", [])
    model_favourite = top[0]["answer"] if top else None
    counts = {a["key"]: a["count"] for a in shown}
    scored = [a for a in shown if a.get("model_logprob") is not None]
    n_scored = sum(a["count"] for a in scored)
    mean = sum(a["count"] * a["model_logprob"] for a in scored) / n_scored if n_scored else None
    class_five = [a["key"] for a in shown[:TOP_OVERLAP]]
    model_five = list(dict.fromkeys(model_key(t["answer"]) for t in top))[:TOP_OVERLAP]
    both = [k for k in class_five if k in model_five]
    return {"answers": total,
            "class_favourite": favourite["answer"], "class_favourite_count": favourite["count"],
            "class_favourite_model_rank": favourite.get("model_rank"),
            "class_favourite_model_prob": favourite.get("model_prob"),
            "model_favourite": model_favourite,
            "model_favourite_class_share": counts.get(model_key(model_favourite), 0) / total if model_favourite else None,
            "mean_logprob": mean, "perplexity": math.exp(-mean) if mean is not None else None,
            "answers_scored": n_scored,
            "top5_overlap": len(both), "top5_both": [next(a["answer"] for a in shown if a["key"] == k) for k in both]}


def right_answer(question: dict, shown: list[dict], total: int) -> dict:
    """For a choice or a number with a right answer: how many gave it (a number within 1 % of it counts)."""
    out = {"answers": total, "correct": question.get("correct")}
    if question["kind"] == "number" and shown:
        values = np.repeat([float(a["key"]) for a in shown], [a["count"] for a in shown])
        out.update(median=float(np.median(values)), mean=float(values.mean()))
    if question.get("correct") in (None, ""):
        return out
    close = [a for a in shown if is_right(question, a["key"])]
    right_count = sum(a["count"] for a in close)
    out.update(right_count=right_count, right_share=right_count / total if total else 0.0)
    return out


def histogram(question: dict, shown: list[dict]) -> list[dict]:
    """Choices: every option with its count (0 too), in the question's order. Numbers: every value when there
    are few distinct ones, else HISTOGRAM_BINS equal bins (log-spaced when the values span orders of magnitude)."""
    if question["kind"] == "choice":
        counts = {a["key"]: a["count"] for a in shown}
        return [{"label": o, "count": counts.get(answers.key_of(o), 0)} for o in question["choices"]]
    by_value = sorted((float(a["key"]), a["answer"], a["count"]) for a in shown)
    if len(by_value) <= HISTOGRAM_BINS:
        return [{"label": answers.number_key(v), "low": v, "high": v, "count": n} for v, _, n in by_value]
    values = np.repeat([v for v, _, _ in by_value], [n for _, _, n in by_value])
    positive = values.min() > 0
    if positive and values.max() / values.min() > 1000:
        edges = np.geomspace(values.min(), values.max(), HISTOGRAM_BINS + 1)
    else:
        edges = np.linspace(values.min(), values.max(), HISTOGRAM_BINS + 1)
    counts, _ = np.histogram(values, edges)
    return [{"label": f"{low:.3g} – {high:.3g}", "low": float(low), "high": float(high), "count": int(n)}
            for low, high, n in zip(edges[:-1], edges[1:], counts)]


def mine(stored: dict, key: str | None) -> dict | None:
    """Where one student's answer stood: how many gave it and the model's score of it (hidden or not: it is theirs)."""
    if not key:
        return None
    found = next((a for a in stored["answers"] if a["key"] == key), None)
    if found is None:
        return None
    total = sum(a["count"] for a in stored["answers"])
    return {"answer": found["answer"], "count": found["count"], "share": found["count"] / total if total else 0.0,
            "model_prob": found.get("model_prob"), "model_rank": found.get("model_rank")}


def round_figures(view_of_round: dict) -> dict:
    """One vote's figures for the comparison of two: its answers, its favourite, and the share on the right answer
    (choices and numbers with one) or on the model's favourite (words), with the model's mean log-probability of
    the class's answers and its rank of the class's favourite (words)."""
    a, rows = view_of_round["agreement"], view_of_round["class"]
    out = {"answers": view_of_round["total"], "class_favourite": rows[0]["answer"] if rows else None}
    if view_of_round["question"]["kind"] in WORD_KINDS:
        out.update(share=a.get("model_favourite_class_share"), mean_logprob=a.get("mean_logprob"),
                   class_favourite_model_rank=a.get("class_favourite_model_rank"))
    else:
        out.update(share=a.get("right_share"))
    return out


def rounds(first: dict, second: dict, *, voted: int, changed: int) -> dict:
    """Peer instruction's two votes on one question, side by side: `first` (the first vote's whole view), each
    vote's figures (round_figures), how many students voted twice and how many of them changed their answer, and
    where the class `moved`: "towards", "away" (from the model, by its mean log-probability of the class's answers,
    for words; from the right answer, by its share, otherwise) or "no change"; None when there is nothing to
    measure by."""
    one, two = round_figures(first), round_figures(second)
    by = "mean_logprob" if first["question"]["kind"] in WORD_KINDS else "share"
    before, after = one.get(by), two.get(by)
    moved = None
    if before is not None and after is not None:
        moved = "towards" if after > before + 1e-12 else "away" if after < before - 1e-12 else "no change"
    return {"first": first, "first_figures": one, "second_figures": two, "voted_twice": voted, "changed": changed,
            "measured_by": by, "moved": moved}
