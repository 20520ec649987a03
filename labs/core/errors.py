"""Errors the labs raise on purpose (their messages are shown to students as they are), and the
checks every lab runs on what students and API callers send: text, whole numbers, numbers, names.
API callers can send any JSON value, so every check refuses the wrong type with a sentence too."""

from __future__ import annotations

import logging
import math

log = logging.getLogger(__name__)

MAX_CHARS = 2000  # a text box's limit: a long paragraph, far below what could stall a worker
GENERIC_MESSAGE = ("Something went wrong while computing this. Try a shorter or simpler input, "
                   "or another model.")


class LabError(Exception):
    """Base class: the message is friendly, complete and safe to show (as text)."""


class BadInput(LabError, ValueError):
    """The student's input cannot be used: the message says why and what to type instead."""


def _shown(value, limit: int = 20) -> str:
    """A value as the message quotes it: short, whatever its type."""
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "…"


class InputName:
    """How a message names the input it refuses, with the grammar the name needs: "sentence",
    "sentences", "words to split" (plural: "are", "them", "some"), "sentence B" (a label: no article),
    "answer" ("an"). The head noun is the last word before " to …", a one-letter label left out;
    it is plural when it ends in -s (not -ss, -us, -is: "class", "corpus", "analysis")."""

    def __init__(self, what: str):
        self.what = " ".join(str(what).split()) or "text"
        words = self.what.split(" to ")[0].split()
        self.labelled = len(words) > 1 and len(words[-1]) == 1 and words[-1].isalnum() and not words[-1].islower()
        head = (words[-2] if self.labelled else words[-1]).lower()
        self.plural = head.endswith("s") and not head.endswith(("ss", "us", "is"))

    @property
    def the(self) -> str:
        """"The sentence", "The sentences", "Sentence B": a message's subject, capitalised."""
        return _capital(self.what) if self.labelled else f"The {self.what}"

    @property
    def your(self) -> str:
        return _capital(self.what) if self.labelled else f"Your {self.what}"

    @property
    def some(self) -> str:
        """What to type: "a sentence", "an answer", "some sentences", "sentence B"."""
        if self.labelled:
            return self.what
        if self.plural:
            return f"some {self.what}"
        return f"{'an' if self.what[0].lower() in 'aeio' else 'a'} {self.what}"

    @property
    def is_(self) -> str:
        return "are" if self.plural else "is"

    @property
    def was(self) -> str:
        return "were" if self.plural else "was"

    @property
    def it(self) -> str:
        return "them" if self.plural else "it"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def check_text(value, example: str, *, max_chars: int = MAX_CHARS, allow_empty: bool = False,
               what: str = "text") -> str:
    """`value` as stripped text. Not a string, empty (unless allowed) or longer than max_chars:
    BadInput that says what to type, with `example`. `what` names the input in the message
    ("sentence", "sentences", "words to split", "sentence B"): see InputName for its grammar."""
    name = InputName(what)
    if not isinstance(value, str):
        raise BadInput(f"{name.the} must be text, for example “{example}”.")
    if len(value) > max_chars:
        raise BadInput(f"{name.your} {name.is_} {len(value):,} characters long{' in all' if name.plural else ''}; "
                       f"this lab reads at most {max_chars:,}. Shorten {name.it}.")
    if not value.strip() and not allow_empty:
        raise BadInput(f"Type {name.some} first, for example “{example}”.")
    return value.strip()


def check_int(value, name: str, low: int | None = None, high: int | None = None) -> int:
    """`value` as an int (3, 3.0 and "3" are fine; 2.5, "abc", True, inf and nan are not), within
    low..high when they are given; otherwise BadInput naming `name` and the range."""
    span = f" from {low} to {high}" if low is not None and high is not None else (
        f" of at least {low}" if low is not None else "")
    try:
        number = float(value) if not isinstance(value, bool) else math.nan
        whole = math.isfinite(number) and number == int(number)
    except (TypeError, ValueError, OverflowError):
        whole = False
    if not whole or (low is not None and number < low) or (high is not None and number > high):
        raise BadInput(f"{name} must be a whole number{span}, not {_shown(value)}.")
    return int(number)


def check_number(value, name: str, low: float, high: float, *, low_open: bool = False, hint: str = "") -> float:
    """`value` as a finite float within low..high (above low when low_open); otherwise BadInput."""
    try:
        number = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError, OverflowError):
        number = math.nan
    inside = math.isfinite(number) and (low < number if low_open else low <= number) and number <= high
    if not inside:
        bound = f"above {low:g}" if low_open else f"at least {low:g}"
        raise BadInput(f"{name} must be a number {bound} and at most {high:g}{hint}, not {_shown(value)}.")
    return number


def check_bool(value, name: str) -> bool:
    """True or False (1 / 0 and "true" / "false" too); otherwise BadInput."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise BadInput(f"{name} must be true or false, not {_shown(value)}.")


def check_name(value, what: str = "model") -> str:
    """A name chosen from a list (a model, a strategy): must be a non-empty string."""
    name = InputName(what)
    if not isinstance(value, str):
        raise BadInput(f"{name.the} must be a name from the list (text), not {_shown(value, 40)}.")
    if not value.strip():
        raise BadInput(f"No {name.what} {name.was} chosen. Pick one from the list.")
    return value.strip()


def check_choice(value, options, name: str) -> str:
    """One of `options`, or BadInput listing them."""
    if not isinstance(value, str) or value not in options:
        raise BadInput(f"{name} must be one of {', '.join(options)}, not {_shown(value, 40)!r}.")
    return value


def message_for(exc: BaseException) -> str:
    """What a student sees for a failure: our own errors keep their message; anything else is
    logged with its traceback for the developer and becomes one plain sentence."""
    if isinstance(exc, LabError):
        return str(exc)
    log.error("unexpected error", exc_info=exc)
    return GENERIC_MESSAGE


def each(fn, items) -> list[tuple[object, str | None]]:
    """fn(item) for every item, each independently: (result, None) or (None, message). For panels
    that show two models side by side, where one failing must keep the other."""
    outcomes = []
    for item in items:
        try:
            outcomes.append((fn(item), None))
        except Exception as exc:  # one side failing keeps the other
            outcomes.append((None, message_for(exc)))
    return outcomes
