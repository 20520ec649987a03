"""Where a class's sessions, questions and answers are kept: a real database behind one small interface.

SQLite in a file on the local disk by default (LAB_DATA_DIR), PostgreSQL when LAB_CLASS_DB names one
(`postgresql://user@host:port/db`), so that several front-ends share their classes. Both go through SQLAlchemy
Core; the schema is created and migrated here, in order, and its version kept in the database. A write returns
only after its transaction is committed: a student is told "received" only for an answer that a restart of the
process keeps. A Space's disk is wiped by a restart of the Space, and a storage bucket cannot hold SQLite:
with LAB_BACKUP_DIR, backup.py copies the database there a few seconds after each change and brings it back
at start."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from labs.classroom import answer_writer, backup
from labs.classroom.answer_writer import QuestionClosed, TimeUp  # noqa: F401  (callers catch them from here)
from labs.core.errors import LabError

log = logging.getLogger(__name__)

SCHEMA_VERSION = 3
metadata = sa.MetaData()

meta = sa.Table("lab_meta", metadata,
                sa.Column("key", sa.String(40), primary_key=True),
                sa.Column("value", sa.String(200), nullable=False))

sessions = sa.Table(
    "class_sessions", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("code", sa.String(6), nullable=False, unique=True),
    sa.Column("title", sa.String(120), nullable=False, default=""),
    sa.Column("key_hash", sa.String(64), nullable=False, unique=True),  # sha256 of the lecturer key, never the key
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("active_at", sa.Float, nullable=False, index=True),  # the day-old ones are purged
    sa.Column("closed_at", sa.Float),
    sa.Column("min_count", sa.Integer, nullable=False, default=2),
    sa.Column("current_question", sa.Integer),  # None: between questions
    sa.Column("version", sa.Integer, nullable=False, default=0),  # +1 on every change students should see
    # The lecture's questions prepared ahead (JSON list, plans.py) and the position of the next one (version 3).
    sa.Column("plan", sa.Text, nullable=False, default="[]", server_default="[]"),
    sa.Column("plan_next", sa.Integer, nullable=False, default=0, server_default="0"))

questions = sa.Table(
    "class_questions", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("session_id", sa.Integer, sa.ForeignKey("class_sessions.id", ondelete="CASCADE"), nullable=False,
              index=True),
    sa.Column("number", sa.Integer, nullable=False),
    sa.Column("kind", sa.String(12), nullable=False),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("model", sa.String(300), nullable=False, default=""),
    sa.Column("settings", sa.Text, nullable=False, default="{}"),
    sa.Column("choices", sa.Text, nullable=False, default="[]"),
    sa.Column("correct", sa.String(80)),
    sa.Column("asked_at", sa.Float, nullable=False),
    sa.Column("revealed_at", sa.Float),
    sa.Column("results", sa.Text),  # the reveal's computation, JSON: computed once, read by every student
    sa.Column("hidden", sa.Text, nullable=False, default="[]"),
    # Peer instruction's second vote is a question row of its own (its answers are kept apart from the first's),
    # numbered as the first and pointing at it (schema version 2).
    sa.Column("vote_round", sa.Integer, nullable=False, default=1, server_default="1"),
    sa.Column("first_round_id", sa.Integer),
    sa.Column("closes_at", sa.Float))  # the lecturer's timer: no answer is taken after it (version 3)

answers = sa.Table(
    "class_answers", metadata,
    sa.Column("question_id", sa.Integer, sa.ForeignKey("class_questions.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("student_id", sa.String(64), primary_key=True),
    sa.Column("answer", sa.String(80), nullable=False),  # as typed (trimmed, one line), or the option chosen
    sa.Column("answer_key", sa.String(80), nullable=False),  # case-folded: what answers are counted by
    sa.Column("answered_at", sa.Float, nullable=False),
    sa.Column("confidence", sa.Integer))  # how sure the student is, 1 (guessing) to 4 (sure), or None (version 3)

workbook = sa.Table(
    "class_workbook", metadata,
    sa.Column("session_id", sa.Integer, sa.ForeignKey("class_sessions.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("student_id", sa.String(64), primary_key=True),
    sa.Column("question", sa.String(10), primary_key=True),
    sa.Column("verdict", sa.String(20), nullable=False),
    sa.Column("shared_at", sa.Float, nullable=False))


def _create_v1(connection) -> None:
    metadata.create_all(connection, tables=[sessions, questions, answers, workbook])


def _add_columns(connection, table: str, columns: dict[str, str]) -> None:
    """Each column (name: SQL type) the table lacks; one created at a later version has it (_create_v1)."""
    have = {c["name"] for c in sa.inspect(connection).get_columns(table)}
    for name, sql in columns.items():
        if name not in have:
            connection.execute(sa.text(f"ALTER TABLE {table} ADD COLUMN {name} {sql}"))


def _add_rounds_v2(connection) -> None:
    """A question's vote round and its first round's id (a version 1 database's questions are round 1)."""
    _add_columns(connection, "class_questions", {"vote_round": "INTEGER NOT NULL DEFAULT 1", "first_round_id": "INTEGER"})


def _add_confidence_timer_plan_v3(connection) -> None:
    """A student's confidence in an answer, a question's timer, a class's prepared questions."""
    _add_columns(connection, "class_answers", {"confidence": "INTEGER"})
    _add_columns(connection, "class_questions", {"closes_at": "FLOAT"})
    _add_columns(connection, "class_sessions", {"plan": "TEXT NOT NULL DEFAULT '[]'", "plan_next": "INTEGER NOT NULL DEFAULT 0"})


# MIGRATIONS[i] takes a database at version i to version i + 1. A new column is a new function appended here.
MIGRATIONS = [_create_v1, _add_rounds_v2, _add_confidence_timer_plan_v3]
assert len(MIGRATIONS) == SCHEMA_VERSION


class StoreError(LabError):
    """The class database cannot be used (its message says what to fix)."""


def data_dir() -> Path:
    """LAB_DATA_DIR, else ~/.local/share/lm-lab: always the local disk. SQLite needs file locks and writes in
    place, which a bucket mount (a Space's only persistent storage) does not offer: see backup.py."""
    if os.environ.get("LAB_DATA_DIR"):
        return Path(os.environ["LAB_DATA_DIR"])
    return Path.home() / ".local" / "share" / "lm-lab"


def database_url() -> str:
    """LAB_CLASS_DB as a user writes it (postgresql://user@host:port/db), with the driver SQLAlchemy needs;
    else the SQLite file in data_dir()."""
    url = os.environ.get("LAB_CLASS_DB", "").strip()
    if not url:
        folder = data_dir()
        folder.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{folder / 'classes.sqlite3'}"
    return database_url_of(url)


def database_url_of(url: str) -> str:
    """A database URL as a user writes it, with the driver SQLAlchemy needs (psycopg for PostgreSQL)."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def shown_url(url: str) -> str:
    """A database URL without its password, for logs and the status line."""
    return sa.engine.make_url(url).render_as_string(hide_password=True)


class Store:
    """The class tables in one database. Every method is one transaction; writes commit before returning."""

    def __init__(self, url: str | None = None):
        self.url = url or database_url()
        self.sqlite = self.url.startswith("sqlite")
        options = {"connect_args": {"check_same_thread": False, "timeout": 30}, "pool_size": 32,  # a class's burst
                   "max_overflow": 32} if self.sqlite else {
            "pool_size": 8, "max_overflow": 24, "pool_pre_ping": True, "pool_recycle": 1800}
        self.engine = sa.create_engine(self.url, **options)
        if self.sqlite:
            sa.event.listen(self.engine, "connect", _sqlite_pragmas)
        # SQLite has one writer at a time: threads take turns here instead of retrying on "database is locked".
        self._write_lock = threading.Lock() if self.sqlite else None
        self.committed = None  # called after each committed write (backup.attach: the bucket's copy is behind)
        self.group = answer_writer.GroupWriter(self.engine, self._write_lock, answers, questions,
                                               lambda: self.committed and self.committed()) if self.sqlite else None
        try:
            self.migrate()
        except sa.exc.OperationalError as exc:
            raise StoreError(f"The class database {shown_url(self.url)} cannot be opened: {exc.orig}") from None

    @contextmanager
    def writing(self):
        if self._write_lock is None:
            with self.engine.begin() as connection:
                yield connection
        else:
            with self._write_lock, self.engine.begin() as connection:
                yield connection
        if self.committed is not None:  # only after a commit (an exception skips this)
            self.committed()

    def migrate(self) -> None:
        """Bring the schema to SCHEMA_VERSION, one migration at a time; front-ends starting together take
        turns (PostgreSQL: an advisory lock; SQLite: its write lock)."""
        with self.writing() as c:
            if not self.sqlite:
                c.execute(sa.text("SELECT pg_advisory_xact_lock(4161)"))
            metadata.create_all(c, tables=[meta])
            row = c.execute(sa.select(meta.c.value).where(meta.c.key == "schema_version")).first()
            version = int(row.value) if row else 0
            if version > SCHEMA_VERSION:
                raise StoreError(f"The class database is at schema version {version}, newer than this LM Lab "
                                 f"({SCHEMA_VERSION}). Update LM Lab, or point LAB_CLASS_DB elsewhere.")
            for step in range(version, SCHEMA_VERSION):
                MIGRATIONS[step](c)
                log.info("class database %s migrated to schema version %d", shown_url(self.url), step + 1)
            if version != SCHEMA_VERSION:
                values = {"key": "schema_version", "value": str(SCHEMA_VERSION)}
                if row:
                    c.execute(meta.update().where(meta.c.key == "schema_version").values(value=values["value"]))
                else:
                    c.execute(meta.insert().values(**values))

    def schema_version(self) -> int:
        with self.engine.connect() as c:
            return int(c.execute(sa.select(meta.c.value).where(meta.c.key == "schema_version")).scalar_one())

    # ------------------------------------------------------------------ sessions

    def create_session(self, code: str, title: str, key_hash: str, now: float) -> int | None:
        """The new session's id, or None when the code is taken (the caller draws another)."""
        try:
            with self.writing() as c:
                return c.execute(sessions.insert().values(code=code, title=title, key_hash=key_hash, created_at=now,
                                                          active_at=now, min_count=2, version=0)).inserted_primary_key[0]
        except IntegrityError:
            return None

    def session_by_code(self, code: str):
        with self.engine.connect() as c:
            return c.execute(sessions.select().where(sessions.c.code == code)).first()

    def session_by_key(self, key_hash: str):
        with self.engine.connect() as c:
            return c.execute(sessions.select().where(sessions.c.key_hash == key_hash)).first()

    def update_session(self, session_id: int, now: float, **values) -> None:
        """Change a session (and count it as activity); students see the change through its new version."""
        with self.writing() as c:
            c.execute(sessions.update().where(sessions.c.id == session_id)
                      .values(active_at=now, version=sessions.c.version + 1, **values))

    def touch(self, session_id: int, now: float) -> None:
        with self.writing() as c:
            c.execute(sessions.update().where(sessions.c.id == session_id).values(active_at=now))

    def delete_session(self, session_id: int) -> None:
        with self.writing() as c:
            self._delete(c, [session_id])

    def purge(self, inactive_before: float) -> int:
        """Delete the sessions without activity since `inactive_before`, with everything in them."""
        with self.writing() as c:
            ids = [r.id for r in c.execute(sa.select(sessions.c.id).where(sessions.c.active_at < inactive_before))]
            self._delete(c, ids)
        return len(ids)

    @staticmethod
    def _delete(c, session_ids: list[int]) -> None:
        """Children first: SQLite enforces no foreign key unless asked, and a portable delete does not rely on it."""
        if not session_ids:
            return
        asked = sa.select(questions.c.id).where(questions.c.session_id.in_(session_ids))
        c.execute(answers.delete().where(answers.c.question_id.in_(asked)))
        c.execute(questions.delete().where(questions.c.session_id.in_(session_ids)))
        c.execute(workbook.delete().where(workbook.c.session_id.in_(session_ids)))
        c.execute(sessions.delete().where(sessions.c.id.in_(session_ids)))

    # ------------------------------------------------------------------ questions

    def add_question(self, session_id: int, now: float, *, kind: str, text: str, model: str, settings: dict,
                     choices: list, correct: str | None, first_round=None, hidden: str = "[]") -> int:
        """A new question, and the session's current one from now on. With first_round (that question's row): its
        second vote, under the same number."""
        with self.writing() as c:
            if first_round is None:
                number = c.execute(sa.select(sa.func.max(questions.c.number))
                                   .where(questions.c.session_id == session_id)).scalar_one()
                number, vote_round = (number or 0) + 1, 1
            else:
                number, vote_round = first_round.number, first_round.vote_round + 1
            question_id = c.execute(questions.insert().values(
                session_id=session_id, number=number, kind=kind, text=text, model=model, settings=json.dumps(settings),
                choices=json.dumps(choices), correct=correct, asked_at=now, hidden=hidden, vote_round=vote_round,
                first_round_id=None if first_round is None else first_round.id)).inserted_primary_key[0]
            c.execute(sessions.update().where(sessions.c.id == session_id).values(
                current_question=question_id, active_at=now, version=sessions.c.version + 1))
        return question_id

    def question(self, question_id: int):
        with self.engine.connect() as c:
            return c.execute(questions.select().where(questions.c.id == question_id)).first()

    def questions_of(self, session_id: int) -> list:
        with self.engine.connect() as c:
            return list(c.execute(questions.select().where(questions.c.session_id == session_id)
                                  .order_by(questions.c.number, questions.c.vote_round)))

    def second_round_of(self, question_id: int):
        """The second vote on this question, if the lecturer opened one."""
        with self.engine.connect() as c:
            return c.execute(questions.select().where(questions.c.first_round_id == question_id)).first()

    def set_question(self, session_id: int, question_id: int, now: float, **values) -> None:
        """Change a question (its results, its hidden answers) and tell the students (the session's version)."""
        with self.writing() as c:
            c.execute(questions.update().where(questions.c.id == question_id).values(**values))
            c.execute(sessions.update().where(sessions.c.id == session_id).values(
                active_at=now, version=sessions.c.version + 1))

    # ------------------------------------------------------------------ answers

    def put_answer(self, question_id: int, student_id: str, answer: str, answer_key: str, now: float,
                   confidence: int | None = None) -> bool:
        """Keep this student's answer (replacing their earlier one); True when it replaced one. QuestionClosed
        once the question is revealed or its timer has run out, checked in the same transaction
        (answer_writer.py; on SQLite written together with the answers arriving at the same moment)."""
        item = answer_writer.Answer(question_id, student_id, answer, answer_key, now, confidence)
        if self.group is not None:
            return self.group.put(item)
        with self.writing() as c:
            return answer_writer.write(c, answers, questions, item, savepoint=True)

    def answer_of(self, question_id: int, student_id: str):
        with self.engine.connect() as c:
            return c.execute(answers.select().where((answers.c.question_id == question_id)
                                                    & (answers.c.student_id == student_id))).first()

    def changed_answers(self, first_id: int, second_id: int) -> tuple[int, int]:
        """(students who voted in both rounds, those of them whose answer changed), by the answers' keys."""
        first, second = answers.alias("first"), answers.alias("second")
        both = (sa.select(sa.func.count(), sa.func.sum(sa.case((first.c.answer_key != second.c.answer_key, 1),
                                                               else_=0)))
                .select_from(first.join(second, first.c.student_id == second.c.student_id))
                .where((first.c.question_id == first_id) & (second.c.question_id == second_id)))
        with self.engine.connect() as c:
            voted, changed = c.execute(both).one()
        return voted, int(changed or 0)

    def confidence_tally(self, question_id: int) -> dict[str, list[int]]:
        """For each distinct answer (its key), how many students gave it at each confidence, 1 to 4."""
        with self.engine.connect() as c:
            rows = c.execute(sa.select(answers.c.answer_key, answers.c.confidence, sa.func.count())
                             .where((answers.c.question_id == question_id) & answers.c.confidence.is_not(None))
                             .group_by(answers.c.answer_key, answers.c.confidence)).all()
        counts: dict[str, list[int]] = {}
        for key, level, n in rows:
            counts.setdefault(key, [0, 0, 0, 0])[int(level) - 1] += n
        return counts

    def count(self, question_id: int) -> int:
        with self.engine.connect() as c:
            return c.execute(sa.select(sa.func.count()).select_from(answers)
                             .where(answers.c.question_id == question_id)).scalar_one()

    def tally(self, question_id: int) -> list[tuple[str, str, int]]:
        """(key, the form most students typed, count) for each distinct answer, most given first."""
        with self.engine.connect() as c:
            rows = c.execute(sa.select(answers.c.answer_key, answers.c.answer, sa.func.count().label("n"))
                             .where(answers.c.question_id == question_id)
                             .group_by(answers.c.answer_key, answers.c.answer)).all()
        forms: dict[str, list] = {}
        for key, typed, n in rows:
            forms.setdefault(key, []).append((n, typed))
        tallied = [(key, max(found, key=lambda f: (f[0], f[1]))[1], sum(n for n, _ in found))
                   for key, found in forms.items()]
        return sorted(tallied, key=lambda t: (-t[2], t[0]))

    # ------------------------------------------------------------------ the workbook, shared

    def put_verdicts(self, session_id: int, student_id: str, verdicts: dict[str, str], now: float) -> None:
        """A student's workbook verdicts (question id -> right | wrong | open | …), replacing what they shared before."""
        with self.writing() as c:
            c.execute(workbook.delete().where((workbook.c.session_id == session_id)
                                              & (workbook.c.student_id == student_id)))
            if verdicts:
                c.execute(workbook.insert(), [dict(session_id=session_id, student_id=student_id, question=q,
                                                   verdict=v, shared_at=now) for q, v in verdicts.items()])

    def workbook_counts(self, session_id: int) -> tuple[int, dict[str, dict[str, int]]]:
        """How many students shared, and per question the number of each verdict."""
        with self.engine.connect() as c:
            students = c.execute(sa.select(sa.func.count(sa.distinct(workbook.c.student_id)))
                                 .where(workbook.c.session_id == session_id)).scalar_one()
            rows = c.execute(sa.select(workbook.c.question, workbook.c.verdict, sa.func.count())
                             .where(workbook.c.session_id == session_id)
                             .group_by(workbook.c.question, workbook.c.verdict)).all()
        counts: dict[str, dict[str, int]] = {}
        for question, verdict, n in rows:
            counts.setdefault(question, {})[verdict] = n
        return students, counts


def _sqlite_pragmas(connection, _record) -> None:
    """WAL: readers never wait for the writer; NORMAL sync in WAL keeps every committed answer across a killed
    process (only a power cut can lose the last ones); a writer waits up to 30 s for another process."""
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


_store: Store | None = None
_store_lock = threading.Lock()


def get() -> Store:
    """The process's store, opened on first use (the app's start does not wait for a database). A missing
    SQLite file comes back from LAB_BACKUP_DIR first, and is copied there after each change from then on."""
    global _store
    if _store is None:
        with _store_lock:
            if _store is None:
                started = time.perf_counter()
                url = database_url()
                backup.restore_if_missing(url)
                _store = Store(url)
                backup.attach(_store)
                log.info("class database %s ready in %.2f s", shown_url(_store.url), time.perf_counter() - started)
    return _store


def reset() -> None:
    """Forget the open store (tests point LAB_DATA_DIR or LAB_CLASS_DB elsewhere)."""
    global _store
    with _store_lock:
        if _store is not None:
            backup.stop()
            _store.engine.dispose()
        _store = None
