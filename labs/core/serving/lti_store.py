"""What LM Lab keeps for the LMS (LTI 1.3) in the class database: the platforms registered, their deployments, the
OIDC nonces and states waiting for their launch, each launch's context (the LMS's opaque user id, never a name or an
e-mail address), the graded activities' line items and every score sent.

labs/core never imports a lab, so this module does not import the class lab's store: app.py hands it the class
database's engine (`configure`), SQLite in the data folder or PostgreSQL when LAB_CLASS_DB names one; the tables
here are `lti_*` tables of their own beside the class tables. Every function is one transaction."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager

import sqlalchemy as sa

from labs.core.errors import LabError

metadata = sa.MetaData()

platforms = sa.Table(
    "lti_platforms", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("issuer", sa.String(300), nullable=False),
    sa.Column("client_id", sa.String(300), nullable=False),
    sa.Column("auth_login_url", sa.String(500), nullable=False),
    sa.Column("auth_token_url", sa.String(500), nullable=False),
    sa.Column("key_set_url", sa.String(500), nullable=False),
    sa.Column("auth_audience", sa.String(500)),
    sa.Column("name", sa.String(200), nullable=False, default=""),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.UniqueConstraint("issuer", "client_id"))

deployments = sa.Table(
    "lti_deployments", metadata,
    sa.Column("platform_id", sa.Integer, sa.ForeignKey("lti_platforms.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("deployment_id", sa.String(300), primary_key=True))

# The OIDC step's nonce, state params and a launch's context: short-lived values by key (pylti1p3's session).
values = sa.Table(
    "lti_values", metadata,
    sa.Column("key", sa.String(200), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
    sa.Column("expires_at", sa.Float, nullable=False, index=True))

# A graded activity as the LMS made it: its line item (the AGS URL), what it asks, its points.
line_items = sa.Table(
    "lti_line_items", metadata,
    sa.Column("lineitem", sa.String(500), primary_key=True),
    sa.Column("platform_id", sa.Integer, sa.ForeignKey("lti_platforms.id", ondelete="CASCADE"), nullable=False),
    sa.Column("label", sa.String(200), nullable=False, default=""),
    sa.Column("questions", sa.Text, nullable=False),  # JSON list of workbook question ids
    sa.Column("score_maximum", sa.Float, nullable=False),
    sa.Column("ags", sa.Text, nullable=False))  # the launch's AGS claim (scopes, URLs), JSON

# The last score of each student on each line item, and whether the platform took it.
scores = sa.Table(
    "lti_scores", metadata,
    sa.Column("lineitem", sa.String(500), sa.ForeignKey("lti_line_items.lineitem", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("user_id", sa.String(255), primary_key=True),  # the LMS's opaque `sub`
    sa.Column("score_given", sa.Float, nullable=False),
    sa.Column("score_maximum", sa.Float, nullable=False),
    sa.Column("activity_progress", sa.String(20), nullable=False),
    sa.Column("grading_progress", sa.String(20), nullable=False),
    sa.Column("comment", sa.Text, nullable=False),
    sa.Column("verdicts", sa.Text, nullable=False),  # JSON {question id: verdict}
    sa.Column("checked_at", sa.Float, nullable=False),
    sa.Column("sent_at", sa.Float),  # None: not taken by the platform yet ("Send scores again" retries it)
    sa.Column("attempts", sa.Integer, nullable=False, default=0),
    sa.Column("error", sa.Text, nullable=False, default=""))


class NotSetUp(LabError):
    """This server runs without the LMS connection (app.py did not configure it)."""


_engine_of: Callable[[], sa.Engine] | None = None
_ready: sa.Engine | None = None
_lock = threading.Lock()
_write_lock = threading.Lock()


def configure(engine_of: Callable[[], sa.Engine] | None) -> None:
    """The class database's engine, opened on first use (app.py: the class lab's store)."""
    global _engine_of, _ready
    with _lock:
        _engine_of, _ready = engine_of, None


def engine() -> sa.Engine:
    global _ready
    if _ready is None:
        with _lock:
            if _engine_of is None:
                raise NotSetUp("This server runs without the LMS connection.")
            if _ready is None:
                made = _engine_of()
                metadata.create_all(made)  # checkfirst: the tables are created once, beside the class tables
                _ready = made
    return _ready


@contextmanager
def writing():
    """One write transaction; on SQLite the process's writers take turns (a read that turns into a write would
    otherwise meet "database is locked" at once, without SQLite's wait)."""
    made = engine()
    if made.dialect.name != "sqlite":
        with made.begin() as c:
            yield c
        return
    with _write_lock, made.begin() as c:
        yield c


# ---- platforms -----------------------------------------------------------------------------------------------
def add_platform(issuer: str, client_id: str, auth_login_url: str, auth_token_url: str, key_set_url: str,
                 deployment_ids: list[str], *, auth_audience: str | None = None, name: str = "") -> int:
    """Register a platform (or update its endpoints) and add its deployments; returns its id."""
    now = time.time()
    row = dict(auth_login_url=auth_login_url, auth_token_url=auth_token_url, key_set_url=key_set_url,
               auth_audience=auth_audience, name=name)
    with writing() as c:
        found = c.execute(sa.select(platforms.c.id).where(platforms.c.issuer == issuer,
                                                          platforms.c.client_id == client_id)).first()
        if found:
            platform_id = found.id
            c.execute(platforms.update().where(platforms.c.id == platform_id).values(**row))
        else:
            platform_id = c.execute(platforms.insert().values(issuer=issuer, client_id=client_id, created_at=now,
                                                              **row)).inserted_primary_key[0]
        have = {r.deployment_id for r in c.execute(sa.select(deployments.c.deployment_id)
                                                   .where(deployments.c.platform_id == platform_id))}
        for deployment_id in dict.fromkeys(deployment_ids):
            if deployment_id and deployment_id not in have:
                c.execute(deployments.insert().values(platform_id=platform_id, deployment_id=deployment_id))
    return platform_id


def platform(issuer: str, client_id: str | None = None):
    """The platform registered under this issuer (and client id, when given); None if none. An issuer with
    several client ids needs the client id."""
    query = sa.select(platforms).where(platforms.c.issuer == issuer)
    if client_id:
        query = query.where(platforms.c.client_id == client_id)
    with engine().connect() as c:
        rows = c.execute(query).all()
    return rows[0] if len(rows) == 1 else None


def platform_by_id(platform_id: int):
    with engine().connect() as c:
        return c.execute(sa.select(platforms).where(platforms.c.id == platform_id)).first()


def has_deployment(platform_id: int, deployment_id: str) -> bool:
    with engine().connect() as c:
        return c.execute(sa.select(deployments.c.deployment_id).where(
            deployments.c.platform_id == platform_id, deployments.c.deployment_id == deployment_id)).first() is not None


def list_platforms() -> list[dict]:
    with engine().connect() as c:
        rows = c.execute(sa.select(platforms).order_by(platforms.c.id)).all()
        deps = c.execute(sa.select(deployments)).all()
    return [{**r._asdict(), "deployments": [d.deployment_id for d in deps if d.platform_id == r.id]} for r in rows]


# ---- short-lived values (nonces, states, launches) -----------------------------------------------------------
def put_value(key: str, value, lifetime_s: float) -> None:
    now = time.time()
    text = json.dumps(value)
    with writing() as c:
        c.execute(values.delete().where(values.c.expires_at < now))  # the expired ones go as new ones come
        c.execute(values.delete().where(values.c.key == key))
        c.execute(values.insert().values(key=key, value=text, expires_at=now + lifetime_s))


def get_value(key: str):
    with engine().connect() as c:
        row = c.execute(sa.select(values.c.value).where(values.c.key == key,
                                                        values.c.expires_at >= time.time())).first()
    return json.loads(row.value) if row else None


def take_value(key: str) -> bool:
    """Delete the value; True only for the one caller that found it unexpired (a nonce is used once)."""
    with writing() as c:
        return c.execute(values.delete().where(values.c.key == key,
                                               values.c.expires_at >= time.time())).rowcount == 1


# ---- line items and scores -----------------------------------------------------------------------------------
def put_line_item(lineitem: str, platform_id: int, label: str, questions: list[str], score_maximum: float,
                  ags: dict) -> None:
    row = dict(platform_id=platform_id, label=label, questions=json.dumps(questions), score_maximum=score_maximum,
               ags=json.dumps(ags))
    with writing() as c:
        if not c.execute(line_items.update().where(line_items.c.lineitem == lineitem).values(**row)).rowcount:
            c.execute(line_items.insert().values(lineitem=lineitem, **row))


def line_item(lineitem: str):
    with engine().connect() as c:
        return c.execute(sa.select(line_items).where(line_items.c.lineitem == lineitem)).first()


def put_score(lineitem: str, user_id: str, score: dict) -> None:
    """A student's score on a line item, replacing the last one; not yet sent."""
    row = {**score, "verdicts": json.dumps(score["verdicts"]), "checked_at": time.time(), "sent_at": None,
           "attempts": 0, "error": ""}
    with writing() as c:
        done = c.execute(scores.update().where(scores.c.lineitem == lineitem, scores.c.user_id == user_id)
                         .values(**row)).rowcount
        if not done:
            c.execute(scores.insert().values(lineitem=lineitem, user_id=user_id, **row))


def mark_sent(lineitem: str, user_id: str, attempts: int, error: str = "") -> None:
    with writing() as c:
        c.execute(scores.update().where(scores.c.lineitem == lineitem, scores.c.user_id == user_id).values(
            sent_at=None if error else time.time(), attempts=attempts, error=error[:500]))


def scores_of(lineitem: str) -> list:
    with engine().connect() as c:
        return c.execute(sa.select(scores).where(scores.c.lineitem == lineitem).order_by(scores.c.user_id)).all()
