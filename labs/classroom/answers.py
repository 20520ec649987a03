"""What a student sends, made safe to store, count and project: one line, at most 40 characters, compared
case-folded and trimmed. A choice is one of the question's options; a number is read the way people type
one ("1,287", "3.6 %", "2e-5"). Nothing here knows about a class or a model."""

from __future__ import annotations

import math
import re
import unicodedata

from labs.core.errors import BadInput

MAX_ANSWER_CHARS = 40
MAX_OPTION_CHARS = 80  # a multiple-choice option may be a short sentence; the student sends its letter
# Words are compared without the punctuation a phone keyboard adds around them ("mat." is "mat"), keeping
# what is inside a word ("don't", "self-attention", "2e-5").
EDGE_PUNCTUATION = ".,;:!?\"'“”‘’«»()[]{}…"
LETTERS = "ABCDEF"  # a choice may be sent as its letter
HINTS = {"answer": ": a word or a number"}
# How sure a student is of an answer, one tap on a 4-step scale (optional; nothing identifies the student).
CONFIDENCE_LEVELS = ("guessing", "unsure", "fairly sure", "sure")
CONFIDENCE_BY_WORDS = {**{w: i for i, w in enumerate(CONFIDENCE_LEVELS, 1)},
                       **{str(i): i for i in range(1, len(CONFIDENCE_LEVELS) + 1)}}
NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)(e[+-]?\d+)?$", re.IGNORECASE)


def one_line(value, what: str = "answer", limit: int = MAX_ANSWER_CHARS) -> str:
    """The answer as one trimmed line (every run of spaces, tabs and line breaks becomes one space, control
    and invisible format characters are dropped), or BadInput when it is not text, empty or too long."""
    if not isinstance(value, str):
        raise BadInput(f"The {what} must be text, not {type(value).__name__}.")
    if len(value) > 4 * limit:  # refused before any work on it (10,000 characters from a script)
        raise BadInput(f"Your {what} is {len(value):,} characters long; an {what} is at most "
                       f"{limit} characters{HINTS.get(what, '')}.")
    kept = "".join(" " if c.isspace() else c for c in value if unicodedata.category(c)[0] != "C" or c.isspace())
    text = " ".join(kept.split())
    if not text:
        raise BadInput(f"Type your {what} first: a word or a number.")
    if len(text) > limit:
        raise BadInput(f"Your {what} is {len(text):,} characters long; an {what} is at most "
                       f"{limit} characters{HINTS.get(what, '')}.")
    return text


def word(value) -> tuple[str, str]:
    """A word (or a few) as typed, trimmed of edge punctuation, and its key: case-folded, the form answers
    are counted by ("Mat", "mat." and " MAT" are one answer)."""
    text = one_line(value).strip(EDGE_PUNCTUATION + " ")
    if not text:
        raise BadInput("Type a word, not only punctuation.")
    return text, key_of(text)


def key_of(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def number(value) -> tuple[str, str]:
    """A number as typed and its key: the value written plainly ("1,287" -> "1287", "3.60" -> "3.6")."""
    text = one_line(value if not isinstance(value, (int, float)) or isinstance(value, bool) else repr(value))
    plain = text.replace(",", "").replace("_", "").replace(" ", "").rstrip("%")
    if not NUMBER.match(plain):
        raise BadInput(f"“{text}” is not a number. Type digits, for example 12 or 0.5.")
    parsed = float(plain)
    if not math.isfinite(parsed):
        raise BadInput("Type a finite number.")
    return text, number_key(parsed)


def number_key(value: float) -> str:
    return str(int(value)) if value == int(value) and abs(value) < 1e15 else repr(float(value))


def choice(value, options: list[str]) -> tuple[str, str]:
    """One of the options: sent as its text (any case), its letter (A…F) or its number (1…6)."""
    text = one_line(value if not isinstance(value, int) or isinstance(value, bool) else str(value),
                    limit=MAX_OPTION_CHARS)
    by_key = {key_of(o): o for o in options}
    if key_of(text) in by_key:
        option = by_key[key_of(text)]
    elif len(text) == 1 and text.upper() in LETTERS[:len(options)]:
        option = options[LETTERS.index(text.upper())]
    elif text.isdigit() and 1 <= int(text) <= len(options):
        option = options[int(text) - 1]
    else:
        listed = ", ".join(f"{LETTERS[i]}: {o}" for i, o in enumerate(options))
        raise BadInput(f"Pick one of the options ({listed}).")
    return option, key_of(option)


def of_kind(kind: str, options: list[str], value) -> tuple[str, str]:
    """An answer to a question of this kind, as typed and its key: a choice, a number or a word."""
    if kind == "choice":
        return choice(value, options)
    return number(value) if kind == "number" else word(value)


def options_of(value) -> list[str]:
    """A multiple-choice question's options: 2 to 6 different ones, each a valid answer. Given as a list or
    as text with one option per line."""
    if isinstance(value, str):
        value = [line for line in value.splitlines() if line.strip()]
    if not isinstance(value, (list, tuple)):
        raise BadInput("The options must be a list of 2 to 6 answers (or text with one option per line).")
    options = [one_line(o, "option", MAX_OPTION_CHARS) for o in value]
    if not 2 <= len(options) <= 6:
        raise BadInput(f"A multiple-choice question has 2 to 6 options; these are {len(options)}. "
                       "Write one option per line.")
    if len({key_of(o) for o in options}) < len(options):
        raise BadInput("Two options are the same (case is not counted); make each option different.")
    return options


def confidence(value) -> int | None:
    """How sure the student is: 1 to 4 (or the level's words, "guessing" … "sure"), or None when they did not say."""
    if value is None or value == "":
        return None
    text = str(value).strip().casefold()
    if not isinstance(value, bool) and text in CONFIDENCE_BY_WORDS:
        return CONFIDENCE_BY_WORDS[text]
    levels = ", ".join(f"{i} ({w})" for i, w in enumerate(CONFIDENCE_LEVELS, 1))
    raise BadInput(f"How sure you are is one of {levels}, or nothing.")
