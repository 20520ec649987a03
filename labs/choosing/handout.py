"""Choosing a model, "Check the handout": the course's worked examples computed live with the model each
one names. Where that model cannot be had here, the row says so instead of printing the handout's number;
an offline stand-in, when one exists, is named as what it is."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from labs.core.models import models

BERT, GPT2 = "bert-base-uncased", "gpt2"
WORDS = ("playing", "unhappiness", "COVID", "embeddings", "Washington")
QUESTION, PASSAGE, ANSWER = "What is the capital of France?", "Paris is the capital of France.", "Paris"
STAND_IN = models.MINILM_NAME  # an uncased WordPiece tokenizer with BERT-base-uncased's 30,522-entry vocabulary


@dataclass
class Check:
    check: str
    model: str  # the model the handout names
    measured_with: str | None  # that model, a named stand-in, or None (not measured here)
    handout: str  # what the handout says
    measured: str | None
    agrees: bool | None
    note: str = ""

    def to_json(self) -> dict:
        return asdict(self)


def tokenizer_or_none(name: str):
    try:
        return models.load_tokenizer(name)
    except models.ModelUnavailable:
        return None


def gpt2_the() -> Check:
    handout = "464 (and 50256 is <|endoftext|>)"
    tok = tokenizer_or_none(GPT2)
    if tok is None:
        return Check("GPT-2's id for “The”", GPT2, None, handout, None, None,
                     "not measured here: gpt2 is not available offline (run ./lab download while online)")
    the, eos = tok("The")["input_ids"], tok.convert_tokens_to_ids("<|endoftext|>")
    return Check("GPT-2's id for “The”", GPT2, GPT2, handout, f"{the} (and {eos} is <|endoftext|>)",
                 the == [464] and eos == 50256)


def wordpiece_splits() -> list[Check]:
    tok, used, note = tokenizer_or_none(BERT), BERT, ""
    if tok is None:
        tok, used = tokenizer_or_none(STAND_IN), STAND_IN
        note = (f"bert-base-uncased is not available here; measured with {STAND_IN}'s tokenizer, an uncased "
                "WordPiece with the same 30,522-entry vocabulary size") if tok is not None else ""
    checks = []
    for word in WORDS:
        pieces = tok.tokenize(word) if tok is not None else None
        checks.append(Check(f"WordPiece split of “{word}”", BERT, used if tok is not None else None,
                            "see the handout's table", " ".join(pieces) if pieces else None, None,
                            note or ("" if tok is not None else "not measured here: no uncased WordPiece tokenizer")))
    return checks


def answer_span() -> Check:
    tok, used = tokenizer_or_none(BERT), BERT
    if tok is None:
        tok, used = tokenizer_or_none(STAND_IN), STAND_IN
    handout = f"[CLS] {QUESTION} [SEP] {PASSAGE} [SEP]: “{ANSWER}” starts and ends at position 9"
    if tok is None:
        return Check("Answer span's token positions", BERT, None, handout, None, None, "not measured here")
    enc = tok(QUESTION, PASSAGE, return_offsets_mapping=True)
    seq_ids = enc.sequence_ids()
    start_char, end_char = PASSAGE.index(ANSWER), PASSAGE.index(ANSWER) + len(ANSWER)
    span = [i for i, (s, (a, b)) in enumerate(zip(seq_ids, enc["offset_mapping"]))
            if s == 1 and a < end_char and b > start_char]
    tokens = tok.convert_ids_to_tokens(enc["input_ids"])
    measured = f"start {span[0]}, end {span[-1]} in {' '.join(tokens)}"
    note = "" if used == BERT else f"bert-base-uncased is not available here; measured with {STAND_IN}'s tokenizer"
    return Check("Answer span's token positions", BERT, used, handout, measured, span[0] == span[-1] == 9, note)


def check_handout() -> list[dict]:
    """Every check, computed now."""
    return [c.to_json() for c in (gpt2_the(), *wordpiece_splits(), answer_span())]
