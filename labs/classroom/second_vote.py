"""Peer instruction's second vote (`/class_round`): after the students have discussed a question with a neighbour,
they vote on it again. The second vote is a question row of its own, numbered as the first and pointing at it
(labs/classroom/store.py), so that both votes' answers are kept; its reveal (sessions.class_reveal) shows both,
side by side (results.rounds)."""

from __future__ import annotations

import json

from labs.classroom import sessions
from labs.core.errors import BadInput


def class_round(lecturer_key: str, request=None) -> dict:
    """`/class_round(lecturer_key)`: peer instruction's second vote on the current question, after the students
    have discussed it: the same question again, its answers kept apart from the first vote's (which stay stored,
    revealed or not). It becomes the current question; each student's page shows their first answer beside the box.
    Its reveal shows both votes (`rounds`)."""
    session = sessions.asking_session(lecturer_key, request)
    first = sessions.db().question(session.current_question) if session.current_question else None
    if first is None:
        raise BadInput("There is no current question to vote on again: ask one first.")
    if first.vote_round != 1 or sessions.db().second_round_of(first.id) is not None:
        raise BadInput("This question has had its second vote; ask the next question.")
    if sessions.db().count(first.id) == 0:
        raise BadInput("Nobody has answered this question yet: a second vote needs a first.")
    question = {"kind": first.kind, "text": first.text, "model": first.model, "settings": json.loads(first.settings),
                "choices": json.loads(first.choices), "correct": first.correct}
    # The answers the lecturer took off the projector stay off in the second vote.
    question_id = sessions.db().add_question(session.id, sessions.now(), **question, first_round=first,
                                             hidden=first.hidden)
    sessions.changed(session.code)
    return {"question_id": question_id, "code": session.code, "round": 2, "first_round": first.id, **question}
