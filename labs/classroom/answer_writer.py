"""A student's answer written to the class database: checked against its question (revealed? time up?) and stored
in the same transaction, so that an answer is either in the reveal's count or refused, never stored and left out.

SQLite has one writer at a time, and a lecture hall sends its answers within seconds: 500 answers written one
transaction each waited in line for the writer (1.5 s at the 95th percentile, measured: tests/loadtest_class.py).
So on SQLite the answers that arrive while a write runs are written together, in one transaction, by whichever
of their threads gets the writer next (group commit); each thread still returns only once its own answer is
committed, with its own result or refusal. A batch that fails as a whole is written again one answer at a time, so
that one answer cannot fail another's. PostgreSQL takes many writers at once: one transaction per answer."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from labs.core.errors import LabError


class QuestionClosed(LabError):
    """An answer that arrived after its question was revealed."""


class TimeUp(QuestionClosed):
    """An answer that arrived after the lecturer's timer ran out."""


@dataclass
class Answer:
    question_id: int
    student_id: str
    answer: str
    answer_key: str
    now: float
    confidence: int | None = None
    replaced: bool | None = None  # once written: it replaced the student's earlier answer
    error: Exception | None = None  # once refused (or failed)
    done: bool = False


def write(c, answers, questions, item: Answer, *, savepoint: bool) -> bool:
    """This answer, in the connection's transaction: its question checked (PostgreSQL: FOR SHARE, so that a reveal
    waits for it), then the student's earlier answer replaced or this one inserted. True when it replaced one."""
    state = c.execute(sa.select(questions.c.revealed_at, questions.c.closes_at)
                      .where(questions.c.id == item.question_id).with_for_update(read=True)).first()
    if state is None or state.revealed_at is not None:
        raise QuestionClosed("The answers to this question are revealed: wait for the lecturer's next question.")
    if state.closes_at is not None and item.now > state.closes_at:
        raise TimeUp("Time is up for this question: your answer was not sent. Wait for the lecturer.")
    values = dict(answer=item.answer, answer_key=item.answer_key, answered_at=item.now, confidence=item.confidence)
    mine = (answers.c.question_id == item.question_id) & (answers.c.student_id == item.student_id)
    if c.execute(answers.update().where(mine).values(**values)).rowcount:
        return True
    insert = answers.insert().values(question_id=item.question_id, student_id=item.student_id, **values)
    if not savepoint:  # the only writer: nobody can insert the same student's answer meanwhile
        c.execute(insert)
        return False
    try:
        with c.begin_nested():  # two first answers from one student at once: the second replaces
            c.execute(insert)
        return False
    except IntegrityError:
        c.execute(answers.update().where(mine).values(**values))
        return True


class GroupWriter:
    """SQLite's answers, written together: `lock` is the store's one writer's lock (store.Store.writing)."""

    def __init__(self, engine, lock: threading.Lock, answers, questions, committed):
        self.engine, self.lock, self.tables, self.committed = engine, lock, (answers, questions), committed
        self._pending: list[Answer] = []
        self._pending_lock = threading.Lock()
        self.transactions = 0  # answers' transactions committed (fewer than answers when they arrive together)

    def put(self, item: Answer) -> bool:
        with self._pending_lock:
            self._pending.append(item)
        with self.lock:  # the writer: whoever gets it writes every answer waiting, its own among them
            if not item.done:
                with self._pending_lock:
                    batch, self._pending = self._pending, []
                self._write(batch)
        if item.error is not None:
            raise item.error
        return item.replaced

    def _write(self, batch: list[Answer]) -> None:
        try:
            with self.engine.begin() as c:
                for item in batch:
                    try:
                        item.replaced = write(c, *self.tables, item, savepoint=False)
                    except QuestionClosed as exc:  # refused: nothing of it was written
                        item.error = exc
            self.transactions += 1
            self.committed()
        except Exception:  # the batch was rolled back: each answer alone, so that one cannot fail the others
            for item in batch:
                item.replaced, item.error = None, None
                try:
                    with self.engine.begin() as c:
                        item.replaced = write(c, *self.tables, item, savepoint=True)
                    self.transactions += 1
                    self.committed()
                except Exception as exc:  # this answer's own failure, raised in its own thread
                    item.error = exc
        finally:
            for item in batch:
                item.done = True
