"""Errors the labs raise on purpose (their messages are shown to students as they are), and the
whole-number check every lab uses on what students and API callers send."""

import math


class LabError(Exception):
    """Base class: the message is friendly, complete and safe to show."""


class BadInput(LabError, ValueError):
    """The student's input cannot be used: the message says why and what to type instead."""


def check_int(value, name: str, low: int | None = None, high: int | None = None) -> int:
    """`value` as an int (3, 3.0 and "3" are fine; 2.5, "abc", inf and nan are not), within
    low..high when they are given; otherwise BadInput naming `name` and the range."""
    span = f" from {low} to {high}" if low is not None and high is not None else ""
    try:
        number = float(value)
        whole = math.isfinite(number) and number == int(number)
    except (TypeError, ValueError):
        whole = False
    if not whole or (span and not low <= number <= high):
        raise BadInput(f"{name} must be a whole number{span}, not {str(value)[:20]}.")
    return int(number)
