"""Reading what a student typed: numbers in any usual spelling, words matched against the accepted ones,
and the limits every answer keeps (the checks refuse, with a sentence, what they cannot read)."""

from __future__ import annotations

import re

from labs.core.errors import BadInput

MAX_ANSWER_CHARS = 2000  # a long paragraph; a 10,000-character paste is refused with a sentence
NUMBER = re.compile(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?")


def text(value, label: str) -> str:
    """An answer as text (None and numbers too), checked for length."""
    if value is None:
        return ""
    if isinstance(value, (dict, list, tuple, set)):
        raise BadInput(f"The answer to “{label}” must be text or a number, not a list.")
    shown = str(value).strip()
    if len(shown) > MAX_ANSWER_CHARS:
        raise BadInput(f"The answer to “{label}” is {len(shown):,} characters long; keep it under "
                       f"{MAX_ANSWER_CHARS:,} (a few sentences).")
    return shown


def probability(value, label: str) -> float | None:
    """A typed probability: 0.58, or 58 % (read as 0.58)."""
    shown = text(value, label)
    number_ = number(shown, label)
    return None if number_ is None else number_ / 100 if shown.endswith("%") else number_


def number(value, label: str) -> float | None:
    """A typed number: 0.58, 4.17 %, $2,500,000, 2e-5, 1,450,000, −0.5. None when the box is empty."""
    shown = text(value, label)
    if not shown:
        return None
    cleaned = shown.replace("−", "-").replace("$", "").replace(",", "").replace("_", "").replace(" ", "")
    cleaned = cleaned.removesuffix("%").removesuffix("tons").removesuffix("t")
    if not NUMBER.fullmatch(cleaned):
        raise BadInput(f"“{shown[:40]}” is not a number: type the answer to “{label}” as digits, "
                       "for example 0.58, 2e-5 or 1,450,000.")
    return float(cleaned)


def words(value: str) -> str:
    """Lower case, punctuation as spaces: what matching looks at."""
    return " " + " ".join(re.sub(r"[^a-z0-9+]+", " ", value.lower()).split()) + " "


def mentions(value: str, accepted: tuple[str, ...]) -> bool:
    """Does the answer name one of the accepted words or phrases (whole words; "left-to-right" is
    "left to right")?"""
    said = words(value)
    return any(words(phrase) in said for phrase in accepted)
