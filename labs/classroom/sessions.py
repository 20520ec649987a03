"""A class session: the lecturer asks, the students answer from their phones, the lecturer reveals the class's
answers beside the model's. Every action is an API endpoint (`/class_start`, `/class_ask`, …) and the pages
call the same functions.

Three roles. The lecturer holds a secret key (in the lecturer link, kept in their browser, stored here only
as its SHA-256); only the key asks, reveals, hides, closes, exports and deletes. The projector is the
lecturer's page. A student joins with the 6-character code (a link or a QR code), gets a random id kept in
their browser, and has one answer per question (sending again replaces it). Nothing identifies a student.

Answers stay hidden until the reveal (the first ones must not steer the rest); the projector sees only how
many have arrived. The reveal runs the lab's own computation once (the model's distribution, and every
distinct answer scored in one batch) and stores it, so that every student and every front-end reads the same
result. A session with no activity for a day is gone."""

from __future__ import annotations

import json
import logging
import re
import secrets
import threading
import time
from dataclasses import dataclass

import cachetools

from labs.classroom import answers, results, scoring
from labs.classroom import store as stores
from labs.classroom.access import (  # noqa: F401  (the endpoints' callers use these names from here)
    Refused,
    check_link,
    check_not_blocked,
    check_start_allowed,
    clean_code,
    failed,
    join_url,
    key_hash,
    lecturer_url,
    new_code,
    public_url,
    shown_code,
)
from labs.core.errors import BadInput, LabError, check_int, check_text
from labs.core.models import models

log = logging.getLogger(__name__)

STUDENT_ID = re.compile(r"^[A-Za-z0-9_-]{8,64}$")
EXPIRES_AFTER = 24 * 3600  # a session with no activity for a day is gone
TOUCH_EVERY = 60  # an answer counts as the session's activity at most once a minute (one write, not 100)
SNAPSHOT_SECONDS = 1.0  # how stale a front-end's view of a session may be (another front-end's changes)
MAX_ANSWERS = 5000  # per question: a hostile script cannot fill the disk
MAX_QUESTIONS = 500  # per class
MAX_QUESTION_CHARS = 300
MAX_TITLE_CHARS = 80
DEFAULT_TOP_K = 10


@dataclass(frozen=True)
class Snapshot:
    """What a front-end knows of a session, at most SNAPSHOT_SECONDS old."""
    session: object  # the class_sessions row
    question: object | None  # the current question's row
    answers: int


_snapshots: cachetools.TTLCache = cachetools.TTLCache(maxsize=4096, ttl=SNAPSHOT_SECONDS)
_touched: cachetools.TTLCache = cachetools.TTLCache(maxsize=4096, ttl=TOUCH_EVERY)
_cache_lock = threading.Lock()
_reveal_locks: cachetools.TTLCache = cachetools.TTLCache(maxsize=4096, ttl=3600)  # per question being revealed


def db() -> stores.Store:
    return stores.get()


def now() -> float:
    return time.time()


# ------------------------------------------------------------------ sessions


def _alive(session) -> bool:
    return session is not None and now() - session.active_at < EXPIRES_AFTER


def snapshot(code: str) -> Snapshot | None:
    """The session with this code as this front-end saw it at most a second ago (one query for 100 students)."""
    with _cache_lock:
        found = _snapshots.get(code)
    if found is not None:
        return found
    session = db().session_by_code(code)
    if not _alive(session):
        return None
    question = db().question(session.current_question) if session.current_question else None
    found = Snapshot(session, question, db().count(question.id) if question else 0)
    with _cache_lock:
        _snapshots[code] = found
    return found


def changed(code: str) -> None:
    """This front-end changed the session: its next look reads the database again."""
    with _cache_lock:
        _snapshots.pop(code, None)


def session_of_code(code, request=None) -> Snapshot:
    """The live session with this code, or a refusal that says what to do (and counts as a failed join)."""
    check_not_blocked(request)
    code = clean_code(code)
    found = snapshot(code)
    if found is None:
        failed(request)
        raise Refused(f"There is no class with the code {shown_code(code)} (or it ended a day after its last "
                      "question). Check the code on the projector.")
    return found


def session_of_key(lecturer_key, request=None):
    """The session this lecturer key opens; anything else (a student id, the join code, a wrong key) is refused."""
    check_not_blocked(request)
    session = db().session_by_key(key_hash(lecturer_key)) if isinstance(lecturer_key, str) and lecturer_key else None
    if not _alive(session):
        failed(request)
        raise Refused("Only the lecturer can do this: the lecturer key is missing, wrong, or its class has ended.")
    return session


def class_start(title: str = "", request=None) -> dict:
    """`/class_start(title)`: a new class session. The lecturer key is in the answer once, and never again."""
    title = check_text(title, "Week 6: pre-trained language models", max_chars=MAX_TITLE_CHARS, allow_empty=True,
                       what="class title")
    check_start_allowed(request)
    db().purge(now() - EXPIRES_AFTER)
    key = secrets.token_urlsafe(24)
    for _ in range(20):
        code = new_code()
        if db().create_session(code, title, key_hash(key), now()) is not None:
            break
    else:  # 32^6 ≈ 10^9 codes: twenty taken in a row means the database is not answering right
        raise LabError("No free class code could be drawn; try again.")
    base = public_url(request)
    log.info("class %s started", code)
    return {"code": code, "shown_code": shown_code(code), "title": title, "join_url": join_url(base, code),
            "lecturer_key": key, "lecturer_url": lecturer_url(base, key)}


def class_join(code: str, request=None) -> dict:
    """`/class_join(code)`: a student's random id for this class (kept in their browser: one answer per question)."""
    found = session_of_code(code, request)
    return {"code": found.session.code, "shown_code": shown_code(found.session.code), "title": found.session.title,
            "student_id": secrets.token_urlsafe(12)}


def class_close(lecturer_key: str, request=None) -> dict:
    """`/class_close(lecturer_key)`: no more answers; students see that the class has ended. Kept for export."""
    session = session_of_key(lecturer_key, request)
    db().update_session(session.id, now(), closed_at=now(), current_question=None)
    changed(session.code)
    return {"closed": True, "code": session.code}


def class_delete(lecturer_key: str, request=None) -> dict:
    """`/class_delete(lecturer_key)`: the session and every answer in it, deleted now."""
    session = session_of_key(lecturer_key, request)
    db().delete_session(session.id)
    changed(session.code)
    return {"deleted": True, "code": session.code}


def class_min_count(lecturer_key: str, min_count: int = 2, request=None) -> dict:
    """`/class_min_count(lecturer_key, min_count)`: answers fewer students gave are shown as "other (n)"."""
    session = session_of_key(lecturer_key, request)
    db().update_session(session.id, now(), min_count=check_int(min_count, "The minimum count", 1, 100))
    changed(session.code)
    return class_overview(lecturer_key, request)


# ------------------------------------------------------------------ questions


def question_json(row) -> dict | None:
    if row is None:
        return None
    return {"id": row.id, "number": row.number, "kind": row.kind, "text": row.text, "model": row.model,
            "settings": json.loads(row.settings), "choices": json.loads(row.choices), "correct": row.correct,
            "revealed": row.revealed_at is not None, "round": row.vote_round, "first_round": row.first_round_id,
            "closes_in": None if row.closes_at is None or row.revealed_at is not None else round(time_left(row), 1)}


def check_question(kind, text, model, choices, correct, top_k, link="") -> dict:
    """A question as it is stored, every field checked; a word question's model answers it once now (its
    distribution is then cached, so the reveal is quick) and refuses here what it cannot read."""
    kind = kind if kind in results.KINDS else None
    if kind is None:
        raise BadInput(f"The kind of question must be one of {', '.join(results.KINDS)}.")
    text = check_text(text, "The cat sat on the [MASK].", max_chars=MAX_QUESTION_CHARS, what="question")
    question = {"kind": kind, "text": text, "model": "", "settings": {}, "choices": [], "correct": None}
    link = check_link(link)
    if kind in results.WORD_KINDS:
        family = "masked" if kind == "fill_mask" else "causal"
        model = model or models.default_name(family)
        if not model:
            raise BadInput("No masked LM (BERT) is available here, so a fill-in-the-blank question cannot be "
                           "revealed beside a model. Ask the class for the next word instead (SmolLM2).")
        top_k = check_int(top_k, "Top-k", 1, 20)
        side = scoring.model_side(kind, text, model, top_k, [])  # its passes are cached for the reveal
        question.update(model=side.model, settings={"top_k": top_k, "temperature": 1.0})
    elif kind == "choice":
        question["choices"] = answers.options_of(choices)
        if correct not in (None, ""):
            question["correct"] = answers.choice(correct, question["choices"])[0]
    elif correct not in (None, ""):
        question["correct"] = answers.number(correct)[0]
    if link:  # the lab the question comes from: the projector links to it
        question["settings"]["link"] = link
    return question


def asking_session(lecturer_key, request=None):
    """The session this lecturer key opens, when it may take one more question (a new one, or a second vote)."""
    session = session_of_key(lecturer_key, request)
    if session.closed_at is not None:
        raise BadInput("This class has ended; start a new one to ask again.")
    if len(db().questions_of(session.id)) >= MAX_QUESTIONS:
        raise BadInput(f"This class has asked {MAX_QUESTIONS} questions, all it can keep; start a new class.")
    return session


def class_ask(lecturer_key: str, kind: str, text: str, model: str = "", choices: list[str] | str | None = None,
              correct: str = "", top_k: int = DEFAULT_TOP_K, link: str = "", request=None) -> dict:
    """`/class_ask(lecturer_key, kind, text, model, choices, correct, top_k, link)`: a new question, the class's
    current one. kind is fill_mask (a sentence with one blank), next_token (a prompt), choice (2–6 options) or
    number; `correct` (optional) is a choice's or a number's right answer; top_k is how many of the model's own
    guesses to show; `link` (optional) the lab it comes from (?tab=…)."""
    session = asking_session(lecturer_key, request)
    question = check_question(kind, text, model, choices, correct, top_k, link)
    question_id = db().add_question(session.id, now(), **question)
    changed(session.code)
    return {"question_id": question_id, "code": session.code, **question}


# ------------------------------------------------------------------ answers


def check_student(student_id) -> str:
    if not isinstance(student_id, str) or not STUDENT_ID.match(student_id):
        raise BadInput("The student id must be the one /class_join gave (8 to 64 letters, digits, - or _).")
    return student_id


def time_left(question) -> float | None:
    """Seconds until the lecturer's timer closes this question (0 once it has), or None without a timer."""
    if question is None or question.closes_at is None:
        return None
    return max(0.0, question.closes_at - now())


def class_answer(code: str, student_id: str, answer: str, confidence: int | str | None = None,
                 question_id: int | None = None, request=None) -> dict:
    """`/class_answer(code, student_id, answer, confidence, question_id)`: this student's answer to the current
    question, committed to the database before this returns; sending again replaces it (replaced: true).
    confidence (optional): how sure they are, 1 (guessing) to 4 (sure). question_id (optional): the question the
    student's page shows; refused when the lecturer has moved on (a second vote included), so that no answer lands
    on a question its student has not seen. After the lecturer's timer ran out: refused, not stored."""
    found = session_of_code(code, request)
    student_id = check_student(student_id)
    shown = None if question_id in (None, "", 0) else check_int(question_id, "The question id", 1)
    if shown is not None and found.question is not None and shown != found.question.id:
        changed(found.session.code)  # this front-end's look may be a second behind the page's: look again once
        found = session_of_code(code, request)
    question = found.question
    if found.session.closed_at is not None:
        raise BadInput("This class has ended: answers are closed.")
    if question is None:
        raise BadInput("There is no question open right now: wait for the lecturer's next one.")
    if shown is not None and shown != question.id:
        raise BadInput("The lecturer has moved on: your page now shows the question to answer. Send again.")
    if question.revealed_at is not None:
        raise BadInput("The answers to this question are revealed: wait for the lecturer's next question.")
    if time_left(question) == 0:
        raise BadInput("Time is up for this question: your answer was not sent. Wait for the lecturer.")
    if found.answers >= MAX_ANSWERS:
        raise BadInput("This question has all the answers it can take.")
    typed, key = answers.of_kind(question.kind, json.loads(question.choices), answer)
    level = answers.confidence(confidence)
    # The snapshot's count may stay a second behind (500 answers must not mean 500 fresh looks); the projector's
    # count is read fresh (class_count).
    replaced = db().put_answer(question.id, student_id, typed, key, now(), confidence=level)
    with _cache_lock:
        touch = found.session.id not in _touched
        _touched[found.session.id] = True
    if touch:
        db().touch(found.session.id, now())
    return {"question_id": question.id, "replaced": replaced, "answer": typed, "confidence": level}


def class_state(code: str, student_id: str = "", request=None) -> dict:
    """`/class_state(code, student_id)`: what a student's page shows. The question and how many answered; the
    student's own answer; after the reveal, the class's results as the projector shows them and where the
    student's answer stood (`results.you`)."""
    found = session_of_code(code, request)
    session, question = found.session, found.question
    out = {"code": session.code, "shown_code": shown_code(session.code), "title": session.title,
           "version": session.version, "closed": session.closed_at is not None,
           "question": question_json(question), "answers": found.answers, "revealed": False, "results": None,
           "your_answer": None, "your_confidence": None, "your_first_answer": None}
    if question is None:
        return out
    mine = None
    if student_id:
        row = db().answer_of(question.id, check_student(student_id))
        if row is not None:
            out["your_answer"], out["your_confidence"], mine = row.answer, row.confidence, row.answer_key
        if question.first_round_id is not None:
            first = db().answer_of(question.first_round_id, student_id)
            out["your_first_answer"] = first.answer if first is not None else None
    if question.revealed_at is not None and question.results:
        stored = json.loads(question.results)
        out.update(revealed=True, results=results.view(question_json(question), stored, json.loads(question.hidden),
                                                       session.min_count))
        out["results"]["you"] = results.mine(stored, mine)
        out["results"]["rounds"] = rounds_of(question, session.min_count)
    return out


def class_reveal(lecturer_key: str, request=None) -> dict:
    """`/class_reveal(lecturer_key)`: the class's answers beside the model's. Answering closes; the model's
    computation runs once (every distinct answer scored in one batch) and is stored for every student. A second
    vote (second_vote.py) is revealed with its first: `rounds` holds both, side by side."""
    session = session_of_key(lecturer_key, request)
    if session.current_question is None:
        raise BadInput("There is no open question to reveal: ask one first.")
    question = reveal_question(session, session.current_question)
    if question.first_round_id is not None:  # a second vote: the first is revealed beside it
        reveal_question(session, question.first_round_id)
    view = results.view(question_json(question), json.loads(question.results), json.loads(question.hidden),
                        session.min_count, everything=True)
    view["rounds"] = rounds_of(question, session.min_count)
    return view


def reveal_question(session, question_id: int):
    """The question's row with its results, computed and stored by the first reveal of it; answering closes."""
    with _cache_lock:
        lock = _reveal_locks.setdefault(question_id, threading.Lock())
    with lock:  # a second press waits for the first and gets its result
        question = db().question(question_id)
        if question.results is None:
            db().set_question(session.id, question.id, now(), revealed_at=now())  # no answer is taken after this
            changed(session.code)
            try:
                stored = compute_results(question)
            except Exception:  # the model could not answer: the question stays open, no answer is lost
                db().set_question(session.id, question.id, now(), revealed_at=None)
                raise
            finally:
                changed(session.code)
            db().set_question(session.id, question.id, now(), results=json.dumps(stored))
            changed(session.code)
            question = db().question(question.id)
    return question


def rounds_of(question, min_count: int) -> dict | None:
    """For a revealed second vote: both votes side by side (results.rounds); None for a question of one vote."""
    if question.first_round_id is None:
        return None
    first = db().question(question.first_round_id)
    if first is None or not first.results or not question.results:
        return None
    voted, changed_answer = db().changed_answers(first.id, question.id)
    return results.rounds(
        results.view(question_json(first), json.loads(first.results), json.loads(first.hidden), min_count),
        results.view(question_json(question), json.loads(question.results), json.loads(question.hidden), min_count),
        voted=voted, changed=changed_answer)


def compute_results(question) -> dict:
    """Every distinct answer with its count, and for a word question the model's side (scoring)."""
    tally = db().tally(question.id)
    sure = db().confidence_tally(question.id)
    stored = {"answers": [{"key": key, "answer": form, "count": n, "confidence": sure.get(key, [0, 0, 0, 0])}
                          for key, form, n in tally], "revealed_at": now()}
    if question.kind in results.WORD_KINDS:
        settings = json.loads(question.settings)
        model_side = scoring.score(question.kind, question.text, question.model, settings.get("top_k", DEFAULT_TOP_K),
                                   tally)
        by_key = {s["key"]: s for s in model_side.pop("scores")}
        for a in stored["answers"]:
            a.update({k: v for k, v in by_key.get(a["key"], {}).items() if k != "key"})
        stored.update(model_side)
    return stored


def class_hide(lecturer_key: str, answer: str, hide: bool = True, request=None) -> dict:
    """`/class_hide(lecturer_key, answer)`: take an answer off the projector (and every student's chart), or put
    it back with hide=false."""
    session = session_of_key(lecturer_key, request)
    question = db().question(session.current_question) if session.current_question else None
    if question is None:
        raise BadInput("There is no current question to hide an answer of.")
    key = answers.key_of(answers.one_line(answer))
    hidden = json.loads(question.hidden)
    hidden = sorted(set(hidden) | {key}) if hide else [h for h in hidden if h != key]
    # A second vote and its first are one question on the projector: an answer taken off is off in both.
    for row in filter(None, (question, db().question(question.first_round_id) if question.first_round_id else None)):
        db().set_question(session.id, row.id, now(), hidden=json.dumps(hidden))
    changed(session.code)
    return {"hidden": hidden}


# ------------------------------------------------------------------ what the lecturer sees


def class_overview(lecturer_key: str, request=None) -> dict:
    """`/class_overview(lecturer_key)`: the projector's view: the session, the current question and its count,
    its results once revealed, the history of questions, and the workbook as the students shared it."""
    session = session_of_key(lecturer_key, request)
    found = snapshot(session.code) or Snapshot(session, None, 0)
    question = found.question
    current = None
    if question is not None:
        current = {"question": question_json(question), "answers": found.answers, "results": None}
        if question.results:
            current["results"] = results.view(question_json(question), json.loads(question.results),
                                              json.loads(question.hidden), session.min_count)
            current["results"]["rounds"] = rounds_of(question, session.min_count)
    history = [{**question_json(q), "answers": db().count(q.id)} for q in db().questions_of(session.id)]
    students, verdicts = db().workbook_counts(session.id)
    return {"code": session.code, "shown_code": shown_code(session.code), "title": session.title,
            "closed": session.closed_at is not None, "min_count": session.min_count, "version": found.session.version,
            "current": current, "history": history, "plan": plan_of(session),
            "workbook": {"students": students, "questions": verdicts}}


def plan_of(session) -> dict:
    """The lecture's prepared questions (plans.py), how many are asked, and the next one's position."""
    plan = json.loads(session.plan or "[]")
    return {"questions": plan, "next": session.plan_next, "left": max(0, len(plan) - session.plan_next)}


def class_count(lecturer_key: str, request=None) -> dict:
    """`/class_count(lecturer_key)`: the current question's number of answers (what the projector polls)."""
    session = session_of_key(lecturer_key, request)
    question = session.current_question
    return {"question_id": question, "answers": db().count(question) if question else 0, "version": session.version}
