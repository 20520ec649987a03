"""Errors the labs raise on purpose. Their messages are shown to students as they are."""


class LabError(Exception):
    """Base class: the message is friendly, complete and safe to show."""


class BadInput(LabError, ValueError):
    """The student's input cannot be used: the message says why and what to type instead."""
