"""The lecturer's countdown (`/class_timer`): 30, 60 or 90 seconds (or any typed number) for the current
question, shown on every phone and on the projector; at zero answering closes. The deadline is the question's
`closes_at` and the database checks it in the same transaction that stores an answer (store.put_answer), so a
late answer is refused with "time is up" and never stored, whichever front-end it reaches. Pages count down on
their own (assets/js/classroom.js) from the seconds left when they drew; a change of the timer is a change of the
class (its version), so every page redraws with the new deadline."""

from __future__ import annotations

from labs.classroom import sessions
from labs.core.errors import BadInput, check_int

ACTIONS = ("start", "add", "stop")
PRESET_SECONDS = (30, 60, 90)
MAX_SECONDS = 3600


def class_timer(lecturer_key: str, seconds: int = 60, action: str = "start", request=None) -> dict:
    """`/class_timer(lecturer_key, seconds, action)`: action "start" gives the current question `seconds` from now
    (replacing any timer), "add" gives it `seconds` more (after time is up: from now, so answering reopens), "stop"
    takes the timer off (answering stays open until the reveal). -> {question_id, closes_in: seconds left or
    null}."""
    session = sessions.session_of_key(lecturer_key, request)
    if action not in ACTIONS:
        raise BadInput(f"The timer's action is one of {', '.join(ACTIONS)}.")
    if session.closed_at is not None:
        raise BadInput("This class has ended.")
    question = sessions.db().question(session.current_question) if session.current_question else None
    if question is None:
        raise BadInput("There is no open question to time: ask one first.")
    if question.revealed_at is not None:
        raise BadInput("This question's answers are revealed: its answering is over.")
    now = sessions.now()
    closes_at = None
    if action != "stop":
        seconds = check_int(seconds, "The timer's seconds", 5, MAX_SECONDS)
        base = now if action == "start" or question.closes_at is None else max(question.closes_at, now)
        closes_at = base + seconds
    sessions.db().set_question(session.id, question.id, now, closes_at=closes_at)
    sessions.changed(session.code)
    return {"question_id": question.id, "closes_in": None if closes_at is None else round(closes_at - now, 1)}
