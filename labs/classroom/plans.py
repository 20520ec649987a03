"""A lecture's questions, prepared ahead (`/class_plan`) and asked in order with one click each (`/class_next`).

The lecturer writes the questions before the lecture, in the lecturer page or as a file (CSV, or Moodle's GIFT
or XML quiz formats for choice and number questions: plan_formats.py), or takes the handout's Part A as a
ready-made set. Every question is checked as it is imported, as `/class_ask` checks one (a word question's model
reads it once), and a file with one bad question imports nothing; the message names its line. The plan is kept
with the class (class_sessions.plan, JSON) with the position of the next question, so a restart of the Space or
another front-end goes on where the lecture was. Between lectures the plan lives in its file: a class is gone a
day after its last activity."""

from __future__ import annotations

import json
import logging

from labs.classroom import plan_formats, sessions
from labs.core.errors import BadInput

log = logging.getLogger(__name__)
HANDOUT = "handout"  # plan="handout": the handout's Part A as a ready-made set


def prepared(question: dict) -> dict:
    """A plan's question as it is kept: checked as /class_ask checks it (its model, its options, its right
    answer), with its link."""
    if not isinstance(question, dict):
        raise BadInput("Each prepared question must be an object with kind, text and its settings.")
    checked = sessions.check_question(question.get("kind"), question.get("text"), question.get("model") or "",
                                      question.get("choices") or [], question.get("correct") or "",
                                      question.get("top_k") or sessions.DEFAULT_TOP_K, question.get("link") or "")
    return {"kind": checked["kind"], "text": checked["text"], "model": checked["model"],
            "top_k": checked["settings"].get("top_k", sessions.DEFAULT_TOP_K), "choices": checked["choices"],
            "correct": checked["correct"] or "", "link": checked["settings"].get("link", "")}


def handout() -> list[dict]:
    """The handout's Part A as prepared questions: those this server can ask (a fill-in-the-blank question needs a
    masked LM, which offline is not offered: the rest are kept, and the lecturer page says how many)."""
    kept, left_out = [], []
    for question in plan_formats.handout_part_a():
        try:
            kept.append(prepared(question))
        except BadInput as exc:
            left_out.append(f"“{question['text']}”: {exc}")
    if not kept:
        raise BadInput("None of the handout's questions can be asked here: " + " ".join(left_out[:1]))
    if left_out:
        log.info("the handout's plan left out %d question(s): %s", len(left_out), left_out[0])
    return kept


def read_plan(plan, format: str = "") -> list[dict]:
    """The questions of a file's text (format csv, gift, xml, or "" to tell by its content), of a list of
    question objects, or of "handout"; each checked, all or nothing."""
    if isinstance(plan, str) and plan.strip() == HANDOUT:
        return handout()
    if isinstance(plan, str) and plan.lstrip().startswith("["):  # the page's own plan, as JSON
        try:
            plan = json.loads(plan)
        except ValueError:
            raise BadInput("The prepared questions are not valid JSON.") from None
    if isinstance(plan, list):
        if len(plan) > plan_formats.MAX_QUESTIONS:
            raise BadInput(f"A lecture has at most {plan_formats.MAX_QUESTIONS} prepared questions.")
        out = []
        for number, question in enumerate(plan, 1):
            try:
                out.append(prepared(question))
            except BadInput as exc:
                raise BadInput(f"Prepared question {number}: {exc}") from None
        return out
    if format and format not in plan_formats.FORMATS:
        raise BadInput(f"The file's format is one of {', '.join(plan_formats.FORMATS)} (or empty: told by its "
                       "content).")
    return plan_formats.read(plan, format or None, check=prepared)


def class_plan(lecturer_key: str, plan: str | list = "", format: str = "", export: str = "", request=None) -> dict:
    """`/class_plan(lecturer_key, plan, format, export)`: the lecture's prepared questions. With `plan` (a file's
    text: CSV, GIFT or Moodle XML, told by `format` or by its content; a JSON list of questions; or "handout" for
    Part A), they replace the class's plan and the next question is its first (unless the new plan begins with the
    questions asked so far: then the lecture goes on where it was). -> {questions, next, left}; with
    `export` (csv, gift or xml) also {filename, file}: the plan as that file."""
    session = sessions.session_of_key(lecturer_key, request)
    if plan not in (None, "", []):
        questions = read_plan(plan, format)
        asked = json.loads(session.plan or "[]")[:session.plan_next]
        # The same questions asked so far (one added at the end mid-lecture): the lecture goes on where it was.
        position = session.plan_next if questions[:len(asked)] == asked else 0
        sessions.db().update_session(session.id, sessions.now(), plan=json.dumps(questions), plan_next=position)
        sessions.changed(session.code)
        session = sessions.session_of_key(lecturer_key, request)
    out = sessions.plan_of(session)
    if export:
        if export not in plan_formats.FORMATS:
            raise BadInput(f"A plan is exported as one of {', '.join(plan_formats.FORMATS)}.")
        out.update(filename=f"lm-lab-lecture-{session.code}{plan_formats.FILENAME_SUFFIX[export]}",
                   file=plan_formats.write(out["questions"], export))
    return out


def class_next(lecturer_key: str, request=None) -> dict:
    """`/class_next(lecturer_key)`: the next prepared question, asked now (the class sees it at once); without a
    plan, or after its last question, between questions (the students wait; the history is kept)."""
    session = sessions.session_of_key(lecturer_key, request)
    plan = json.loads(session.plan or "[]")
    if session.closed_at is None and session.plan_next < len(plan):
        question = plan[session.plan_next]
        asked = sessions.class_ask(lecturer_key, question["kind"], question["text"], question["model"],
                                   question["choices"], question["correct"], question["top_k"], request=request,
                                   link=question.get("link", ""))
        sessions.db().update_session(session.id, sessions.now(), plan_next=session.plan_next + 1)
        sessions.changed(session.code)
        return {**asked, "prepared": session.plan_next + 1, "left": len(plan) - session.plan_next - 1}
    sessions.db().update_session(session.id, sessions.now(), current_question=None)
    sessions.changed(session.code)
    return {"code": session.code, "question": None, "left": 0}
