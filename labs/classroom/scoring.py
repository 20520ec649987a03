"""The model's side of a class question as the class stores it: the model's own most likely words and its
probability and rank of each word the class gave (labs/core/work/word_scores.py computes them, all of a
question's words in one batch through the shared passes)."""

from __future__ import annotations

from labs.classroom import answers
from labs.core.errors import BadInput
from labs.core.models import models
from labs.core.work import word_scores

MAX_SCORED = 300  # distinct answers scored per question (a class of 100 gives at most 100)
FAMILY = {"fill_mask": "masked", "next_token": "causal"}


def model_side(kind: str, text: str, model: str, top_k: int, words: list[str],
               pieces: bool = False) -> word_scores.WordScores:
    """The model's scores of these words for a word question of this kind (and its own top_k); refuses a
    question the model cannot read (no blank or two, too long, a model without a mask token). With pieces
    (the reveal): which of the model's own guesses are the start of a longer word."""
    if kind not in FAMILY:
        raise BadInput(f"A {kind} question has no model's side.")
    loaded = models.load(model, FAMILY[kind])
    if kind == "fill_mask":
        return word_scores.at_blank(loaded, text, words, top_k)
    return word_scores.next_word(loaded, text, words, top_k, pieces=pieces)


def score(kind: str, text: str, model: str, top_k: int, tally: list[tuple[str, str, int]]) -> dict:
    """The model's side of a word question, as stored with its results: its top-k and its probability of the
    class's (most given) distinct answers. `tally` is [(key, form, count)], most given first."""
    keys = [(key, form) for key, form, _ in tally[:MAX_SCORED]]
    side = model_side(kind, text, model, top_k, [form for _, form in keys], pieces=True)
    return {"model": side.model, "source": side.source, "vocab_size": side.vocab_size, "approximation": side.rule,
            "model_top": [{"answer": t.token, "token_id": t.token_id, "prob": t.prob, "piece": t.piece}
                          for t in side.top],
            "scores": [{"key": key, "model_logprob": s.log_prob, "model_prob": s.prob, "model_rank": s.rank,
                        "pieces": list(s.pieces)} for (key, _), s in zip(keys, side.scores)]}


def model_key(token: str) -> str:
    """A model's token as a class answer is counted (" Paris" and "paris." are the answer "paris")."""
    stripped = token.strip().strip(answers.EDGE_PUNCTUATION)
    return answers.key_of(stripped or token.strip())
