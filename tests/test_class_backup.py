"""A class that survives a Space restart (labs/classroom/backup.py): SQLite stays on the local disk, and a
consistent snapshot goes to LAB_BACKUP_DIR (a storage bucket mounted through hf-mount) as new files written
once, then comes back at start when the local database is missing.

The bucket's rules are held by tests/hfmount_rules/sitecustomize.py (an audit hook: each file written once,
front to back, with exclusive create, then closed; nothing renamed, truncated, rewritten, or opened by SQLite)
in every process that writes to it here: a subprocess for backup.py alone, and the app itself in the restart
test (kill -9 while a class answers, the local data folder emptied, the app started again)."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from contextlib import closing
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import ROOT, WORK, api_client, wait_until

from labs.classroom import backup, sessions
from labs.classroom import store as stores

RULES = ROOT / "tests" / "hfmount_rules"


@pytest.fixture(autouse=True)
def fresh(tmp_path, monkeypatch):
    """Every test with its own local data folder, no bucket unless it sets one, and no backup thread left."""
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path / "local"))
    for name in ("LAB_CLASS_DB", "LAB_BACKUP_DIR", "LAB_BACKUP_INTERVAL_S", "SPACE_ID"):
        monkeypatch.delenv(name, raising=False)
    stores.reset()
    sessions._snapshots.clear()
    yield
    stores.reset()
    sessions._snapshots.clear()


def class_db(path: Path, students: int = 0, questions: int = 1) -> tuple[stores.Store, list[int]]:
    """A SQLite class database at `path` with a session, its questions, and one answer per student each."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = stores.Store(f"sqlite:///{path}")
    session = db.create_session("ABC123", "backup", "k" * 64, time.time())
    asked = [db.add_question(session, time.time(), kind="number", text=f"Q{i}", model="", settings={}, choices=[],
                             correct=None) for i in range(questions)]
    for q in asked:
        for s in range(students):
            db.put_answer(q, f"student-{s:04d}", str(s), str(s), time.time())
    return db, asked


def answers_in(path: Path) -> set[str]:
    with closing(sqlite3.connect(path)) as c:
        return {row[0] for row in c.execute("SELECT student_id FROM class_answers")}


def restored_copy(bucket: Path, where: Path) -> Path:
    """The bucket's newest complete snapshot, restored as the app would (never opened in the bucket)."""
    target = where / "restored.sqlite3"
    target.unlink(missing_ok=True)
    assert backup.restore(target, bucket) is not None
    return target


# ------------------------------------------------------------------ snapshots


def test_a_snapshot_taken_while_threads_write_holds_every_answer_committed_before_it(tmp_path):
    db_path, bucket = tmp_path / "local" / "classes.sqlite3", tmp_path / "bucket"
    bucket.mkdir()
    db, (question,) = class_db(db_path)
    committed: dict[str, float] = {}  # student -> when put_answer returned (the student's "received")
    latencies, done = [], threading.Event()

    def student(worker: int) -> None:
        n = 0
        while not done.is_set():
            student_id, started = f"writer-{worker}-{n:05d}", time.perf_counter()
            db.put_answer(question, student_id, "1", "1", time.time())
            latencies.append(time.perf_counter() - started)
            committed[student_id] = time.time()
            n += 1

    threads = [threading.Thread(target=student, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    try:
        for round_ in range(4):
            wait_until(lambda: len(committed) >= 50 * (round_ + 1))
            record = backup.take_snapshot(db_path, bucket)
            copy = restored_copy(bucket, tmp_path)
            with closing(sqlite3.connect(copy)) as c:
                assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            before = {s for s, t in list(committed.items()) if t < record["taken_at"]}
            present = answers_in(copy)
            assert before and before <= present, sorted(before - present)[:5]
    finally:
        done.set()
        for t in threads:
            t.join()
    print(f"\n{len(committed)} answers written by 4 threads while 4 snapshots were taken; the slowest write "
          f"took {max(latencies) * 1000:.1f} ms")


def test_a_snapshot_of_a_100_student_class_takes_milliseconds(tmp_path):
    """Measured, not asserted: a class of 100 students who answered 20 questions."""
    db_path, bucket = tmp_path / "local" / "classes.sqlite3", tmp_path / "bucket"
    bucket.mkdir()
    db, asked = class_db(db_path, students=100, questions=20)
    times = []
    for _ in range(5):
        started = time.perf_counter()
        record = backup.take_snapshot(db_path, bucket)
        times.append(time.perf_counter() - started)
    assert len(answers_in(restored_copy(bucket, tmp_path))) == 100
    print(f"\nsnapshot of a 100-student class (20 questions, 2,000 answers, {record['bytes'] / 1024:.0f} KiB): "
          f"median {sorted(times)[2] * 1000:.1f} ms, slowest {max(times) * 1000:.1f} ms")


def test_the_older_snapshot_goes_only_after_the_newer_and_its_record_are_closed(tmp_path, monkeypatch):
    db_path, bucket = tmp_path / "local" / "classes.sqlite3", tmp_path / "bucket"
    bucket.mkdir()
    class_db(db_path, students=3)
    events = []
    write_once, unlink = backup.write_once, Path.unlink

    def logged_write(target, chunks):
        result = write_once(target, chunks)
        events.append(("closed", target.name))
        return result

    def logged_unlink(self, missing_ok=False):
        if self.parent == bucket:
            events.append(("removed", self.name))
        return unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(backup, "write_once", logged_write)
    monkeypatch.setattr(Path, "unlink", logged_unlink)
    records = [backup.take_snapshot(db_path, bucket) for _ in range(4)]
    sequences = [r["sequence"] for r in records]
    assert sequences == sorted(set(sequences))  # unique and increasing
    assert sorted(os.listdir(bucket)) == sorted(n for s in sequences[-backup.KEEP:] for n in backup.names(s))
    removed = [i for i, (kind, _) in enumerate(events) if kind == "removed"]
    assert len(removed) == 2 * (4 - backup.KEEP)
    for i in removed:
        gone = int(events[i][1].split("-")[1].split(".")[0])
        newer_closed = {name for kind, name in events[:i] if kind == "closed"}
        later = [s for s in sequences if s > gone]
        assert any(set(backup.names(s)) <= newer_closed for s in later[backup.KEEP - 1:]), events
    # A record is removed before its snapshot: a record never names a missing file for long.
    assert [events[i][1].endswith(".json") for i in removed] == [True, False] * (4 - backup.KEEP)


# ------------------------------------------------------------------ restore


def two_snapshots(tmp_path) -> tuple[Path, Path, list[dict]]:
    """A bucket with two complete snapshots: 3 answers, then 5."""
    db_path, bucket = tmp_path / "local" / "classes.sqlite3", tmp_path / "bucket"
    bucket.mkdir()
    db, (question,) = class_db(db_path, students=3)
    first = backup.take_snapshot(db_path, bucket)
    for s in (3, 4):
        db.put_answer(question, f"student-{s:04d}", "1", "1", time.time())
    second = backup.take_snapshot(db_path, bucket)
    db.engine.dispose()
    return db_path, bucket, [first, second]


def damage(kind: str, bucket: Path, good: dict) -> None:
    """A newest snapshot as a crash, a stale listing or a bad upload leaves it, written by hand."""
    snapshot, record = backup.names(good["sequence"] + 1000)
    full = (bucket / good["snapshot"]).read_bytes()

    def honest(data: bytes) -> dict:
        return {**good, "snapshot": snapshot, "sequence": good["sequence"] + 1000, "bytes": len(data),
                "sha256": hashlib.sha256(data).hexdigest()}

    if kind == "truncated":  # its record written for the whole file, half of it arrived (or a stale half)
        (bucket / snapshot).write_bytes(full[: len(full) // 2])
        (bucket / record).write_text(json.dumps(honest(full)))
    elif kind == "garbled record":
        (bucket / snapshot).write_bytes(full)
        (bucket / record).write_text('{"snapshot": "classes-')
    elif kind == "no record":  # killed between the snapshot's close and its record
        (bucket / snapshot).write_bytes(full)
    elif kind == "no snapshot":  # the record seen before the snapshot (eventual consistency)
        (bucket / record).write_text(json.dumps(honest(full)))
    elif kind == "not a database":  # bytes that match their record, but not SQLite's
        garbage = b"x" * len(full)
        (bucket / snapshot).write_bytes(garbage)
        (bucket / record).write_text(json.dumps(honest(garbage)))


@pytest.mark.parametrize("kind", ["truncated", "garbled record", "no record", "no snapshot", "not a database"])
def test_restore_takes_the_newest_complete_snapshot_and_skips_a_damaged_one(kind, tmp_path, caplog):
    db_path, bucket, (first, second) = two_snapshots(tmp_path)
    damage(kind, bucket, second)
    shutil.rmtree(db_path.parent)
    with caplog.at_level(logging.WARNING, logger=backup.__name__):
        restored = backup.restore(db_path, bucket)
    assert restored["snapshot"] == second["snapshot"]
    assert sorted(p.name for p in db_path.parent.iterdir()) == ["classes.sqlite3"]  # no temporary file left
    assert answers_in(db_path) == {f"student-{s:04d}" for s in range(5)}
    assert (kind == "no record") == ("skipped" not in caplog.text), caplog.text  # a snapshot alone is not news


def test_restore_falls_back_to_the_snapshot_before_when_the_newest_is_damaged(tmp_path):
    db_path, bucket, (first, second) = two_snapshots(tmp_path)
    (bucket / second["snapshot"]).unlink()
    (bucket / second["snapshot"]).write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)  # (a test may rewrite)
    shutil.rmtree(db_path.parent)
    assert backup.restore(db_path, bucket)["snapshot"] == first["snapshot"]
    assert answers_in(db_path) == {f"student-{s:04d}" for s in range(3)}


def test_no_restore_over_a_local_database(tmp_path, monkeypatch):
    db_path, bucket, _ = two_snapshots(tmp_path)
    db, (question,) = class_db(tmp_path / "other" / "classes.sqlite3", students=1)
    db.engine.dispose()
    shutil.copy(tmp_path / "other" / "classes.sqlite3", db_path)
    for leftover in db_path.parent.glob("classes.sqlite3-*"):
        leftover.unlink()
    assert backup.restore(db_path, bucket) is None
    assert answers_in(db_path) == {"student-0000"}
    monkeypatch.setenv("LAB_DATA_DIR", str(db_path.parent))
    monkeypatch.setenv("LAB_BACKUP_DIR", str(bucket))
    assert stores.get().count(question) == 1  # the app's store too: the local database is the truth


def test_without_a_bucket_nothing_is_copied_or_restored(tmp_path):
    db = stores.get()
    assert db.committed is None and backup.current() is None
    assert backup.restore_if_missing(db.url) is None and backup.folder() is None
    start = sessions.class_start("no bucket")
    assert sessions.class_overview(start["lecturer_key"])["code"] == start["code"]
    assert not [t for t in threading.enumerate() if t.name == "class backup"]
    assert sorted(p.name for p in (tmp_path / "local").iterdir()) == ["classes.sqlite3", "classes.sqlite3-shm",
                                                                      "classes.sqlite3-wal"]


def test_with_postgresql_there_is_nothing_to_back_up(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("LAB_BACKUP_DIR", str(tmp_path / "bucket"))
    monkeypatch.setattr(backup, "_said_postgres", False)
    server = SimpleNamespace(url="postgresql+psycopg://lab@127.0.0.1:5432/lab", sqlite=False, committed=None)
    with caplog.at_level(logging.INFO, logger=backup.__name__):
        assert backup.attach(server) is None and backup.attach(server) is None
    assert caplog.text.count("nothing to back up") == 1 and server.committed is None
    assert backup.restore_if_missing(server.url) is None


def test_the_app_store_restores_a_class_after_its_local_folder_is_wiped(tmp_path, monkeypatch):
    """In one process: answers through sessions, the bucket a snapshot behind at most, the store closed, the
    local folder deleted (a Space restart), the store opened again."""
    monkeypatch.setenv("LAB_BACKUP_DIR", str(tmp_path / "bucket"))
    monkeypatch.setenv("LAB_BACKUP_INTERVAL_S", "0.1")
    start = sessions.class_start("restart")
    question = sessions.class_ask(start["lecturer_key"], "number", "How many?")["question_id"]
    for s in range(10):
        sessions.class_answer(start["code"], f"restart-student-{s:03d}", str(s))
    acknowledged = time.time()
    copier = backup.current()
    wait_until(lambda: copier.last is not None and copier.last["taken_at"] > acknowledged)
    stores.reset()
    shutil.rmtree(tmp_path / "local")
    sessions._snapshots.clear()
    assert stores.get().count(question) == 10
    assert sessions.class_overview(start["lecturer_key"])["current"]["answers"] == 10
    assert backup.current() is not copier and backup.current().sequence == 0  # a new thread, nothing written yet


def test_a_bucket_that_is_away_never_stops_the_class(tmp_path, monkeypatch, caplog):
    away = tmp_path / "not-a-folder"
    away.write_text("a file where the bucket should be mounted")
    monkeypatch.setenv("LAB_BACKUP_DIR", str(away))
    monkeypatch.setenv("LAB_BACKUP_INTERVAL_S", "0.05")
    with caplog.at_level(logging.WARNING, logger=backup.__name__):
        start = sessions.class_start("no bucket after all")
        question = sessions.class_ask(start["lecturer_key"], "number", "How many?")["question_id"]
        wait_until(lambda: "class backup to" in caplog.text)
        for s in range(5):
            sessions.class_answer(start["code"], f"away-student-{s:03d}", str(s))
    assert stores.get().count(question) == 5
    assert caplog.text.count("class backup to") == 1  # said once, not at every try


def test_the_local_database_is_never_on_a_spaces_data_disk(monkeypatch, tmp_path):
    monkeypatch.delenv("LAB_DATA_DIR")
    monkeypatch.setenv("SPACE_ID", "someone/lm-lab")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert stores.data_dir() == tmp_path / ".local" / "share" / "lm-lab"


# ------------------------------------------------------------------ what the lecturer is told


def test_on_a_space_without_a_bucket_the_lecturer_is_told_a_restart_forgets_the_class(tmp_path):
    note = backup.lecturer_note({"SPACE_ID": "someone/lm-lab"})
    assert "restart" in note and "wipes" in note and "LAB_BACKUP_DIR" in note and "storage bucket" in note
    with_bucket = backup.lecturer_note({"SPACE_ID": "someone/lm-lab", "LAB_BACKUP_DIR": "/data/a/long/path"})
    assert "every 2 s" in with_bucket and "last few seconds" in with_bucket and "/data" not in with_bucket
    assert "every 5 s" in backup.lecturer_note({"LAB_BACKUP_DIR": "/b", "LAB_BACKUP_INTERVAL_S": "5"})
    assert backup.lecturer_note({}) == ""  # a laptop's disk keeps its classes
    on_its_disk = {"SPACE_ID": "someone/lm-lab", "LAB_BACKUP_DIR": str(tmp_path / "data" / "backups")}
    assert backup.lecturer_note(on_its_disk, data=tmp_path / "local") == backup.NOT_A_BUCKET_NOTE  # no bucket there
    assert backup.lecturer_note({"SPACE_ID": "someone/lm-lab", "LAB_CLASS_DB": "postgresql://x@h/db"}) == ""


# ------------------------------------------------------------------ hf-mount's rules


def under_rules(code: str, bucket: Path, violations: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, LAB_BACKUP_DIR=str(bucket), HFMOUNT_RULES_VIOLATIONS=str(violations),
               PYTHONPATH=os.pathsep.join(p for p in (str(RULES), str(ROOT), os.environ.get("PYTHONPATH")) if p))
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


FORBIDDEN = """
import os, shutil, sqlite3, tempfile
b = os.environ["LAB_BACKUP_DIR"]
open(os.path.join(b, "once"), "xb").close()
open(os.path.join(b, "once"), "rb").close()
outside = tempfile.mktemp()
open(outside, "wb").close()
tries = [lambda: open(os.path.join(b, "once"), "wb"), lambda: open(os.path.join(b, "once"), "ab"),
         lambda: open(os.path.join(b, "once"), "r+b"), lambda: open(os.path.join(b, "once"), "xb"),
         lambda: open(os.path.join(b, "new"), "wb"), lambda: open(os.path.join(b, "new"), "x+b"),
         lambda: os.open(os.path.join(b, "new"), os.O_WRONLY | os.O_CREAT),
         lambda: os.replace(os.path.join(b, "once"), os.path.join(b, "moved")),
         lambda: shutil.move(outside, os.path.join(b, "moved-in")),
         lambda: os.truncate(os.path.join(b, "once"), 0),
         lambda: sqlite3.connect(os.path.join(b, "db.sqlite3"))]
refused = 0
for t in tries:
    try:
        t()
    except PermissionError:
        refused += 1
print(refused, len(tries))
"""


def test_the_rules_refuse_what_hf_mount_cannot_do(tmp_path):
    bucket, violations = tmp_path / "bucket", tmp_path / "violations.txt"
    bucket.mkdir()
    run = under_rules(FORBIDDEN, bucket, violations)
    assert run.returncode == 0 and run.stdout.split() == ["11", "11"], run.stderr[-2000:]
    assert "armed" in run.stderr and len(violations.read_text().splitlines()) >= 11  # a move: rename, then write
    assert sorted(os.listdir(bucket)) == ["once"]


SNAPSHOTS = """
import shutil, sys, time
from pathlib import Path
from labs.classroom import backup, store
local, bucket = Path(sys.argv[1]), Path(sys.argv[2])
local.mkdir()
db = store.Store(f"sqlite:///{local / 'classes.sqlite3'}")
session = db.create_session("ABC123", "rules", "k" * 64, time.time())
question = db.add_question(session, time.time(), kind="number", text="Q", model="", settings={}, choices=[],
                           correct=None)
copier = backup.Backup(local / "classes.sqlite3", bucket, 0.05)
db.committed = copier.notify
copier.thread.start()
for s in range(30):
    db.put_answer(question, f"student-{s:04d}", "1", "1", time.time())
    time.sleep(0.01)
copier.stop()
copier.final()
db.engine.dispose()
shutil.rmtree(local)
record = backup.restore(local / "classes.sqlite3", bucket)
print(store.Store(f"sqlite:///{local / 'classes.sqlite3'}").count(question), record["sequence"] == copier.sequence)
"""


def test_snapshots_and_restore_keep_hf_mounts_rules(tmp_path):
    bucket, violations = tmp_path / "bucket", tmp_path / "violations.txt"
    bucket.mkdir()
    run = under_rules(SNAPSHOTS.replace("sys.argv[1]", repr(str(tmp_path / "local")))
                      .replace("sys.argv[2]", repr(str(bucket))), bucket, violations)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "armed" in run.stderr and not violations.exists(), violations.read_text()
    assert run.stdout.split() == ["30", "True"]
    assert len(os.listdir(bucket)) == 2 * backup.KEEP


# ------------------------------------------------------------------ a Space restart, for real


def app_env(local: Path, bucket: Path, violations: Path) -> dict:
    return {"LAB_DATA_DIR": str(local), "LAB_BACKUP_DIR": str(bucket), "SPACE_ID": "someone/lm-lab",
            "HFMOUNT_RULES_VIOLATIONS": str(violations), "LAB_BACKUP_INTERVAL_S": str(backup.DEFAULT_INTERVAL_S),
            "PYTHONPATH": os.pathsep.join(p for p in (str(RULES), os.environ.get("PYTHONPATH")) if p)}


def newest_record(bucket: Path) -> dict | None:
    """The newest completion record in the bucket (one being written may not parse yet: the one before)."""
    for path in sorted(bucket.glob("classes-*.json"), reverse=True):
        try:
            return json.loads(path.read_text())
        except ValueError:
            continue
    return None


def class_answers(client, key) -> set[str]:
    """Every answer the class database holds, from the lecturer's CSV export (each student's word is unique)."""
    rows = list(csv.reader(io.StringIO(client.predict(key, api_name="/class_export")["csv"])))[1:]
    assert all(row[4] == "1" for row in rows)
    return {row[3] for row in rows}


@pytest.mark.app
@pytest.mark.slow
def test_a_space_restart_with_a_bucket_keeps_every_answer_before_the_last_snapshot(tiny_models, tmp_path, request):
    from test_classroom_api import ask, launch, start_class, stop

    local, bucket, violations = tmp_path / "local", tmp_path / "bucket", tmp_path / "violations.txt"
    if Path("/dev/shm").is_dir() and not backup.on_the_same_disk(Path("/dev/shm"), tmp_path):
        bucket = Path(tempfile.mkdtemp(prefix="lmlab-bucket-", dir="/dev/shm"))  # a filesystem of its own, as a mount
        request.addfinalizer(lambda: shutil.rmtree(bucket, ignore_errors=True))
    bucket.mkdir(exist_ok=True)
    env = app_env(local, bucket, violations)
    proc, url = launch(env, "backup-restart.log")
    acknowledged: list[tuple[str, float]] = []  # (the student's word, when the app said "received")
    threads: list[threading.Thread] = []
    try:
        lecturer = api_client(url)
        start = start_class(lecturer)
        key, code = start["lecturer_key"], start["code"]
        ask(lecturer, key, "next_token", "Once upon a", tiny_models["causal"])
        config = urllib.request.urlopen(f"{url}config", timeout=30).read().decode()
        assert "copied to the storage bucket every 2 s" in config  # the lecturer's panel says so
        threads = [threading.Thread(target=keep_answering, args=(url, code, w, acknowledged), daemon=True)
                   for w in range(6)]
        for t in threads:
            t.start()
        # Kill once a snapshot holds some of the answers and more keep arriving (states, not timings).
        wait_until(lambda: len(acknowledged) >= 30 and (newest_record(bucket) or {}).get("taken_at", 0)
                   > acknowledged[20][1], timeout=120)
        count = len(acknowledged)
        wait_until(lambda: len(acknowledged) >= count + 12, timeout=60)
    finally:
        killed_at = time.time()
        stop(proc, signal.SIGKILL)  # no shutdown: no last snapshot at exit
    for t in threads:
        t.join(90)
    shutil.rmtree(local)  # what a Space restart leaves of the local disk
    last = newest_record(bucket)
    proc, url = launch(env, "backup-restart.log")
    try:
        client = api_client(url)
        kept = class_answers(client, key)
        client.predict(code=code, student_id="after-the-restart", answer="again", api_name="/class_answer")
        wait_until(lambda: newest_record(bucket)["sequence"] > last["sequence"], timeout=60)
    finally:
        stop(proc)
    log = (WORK / "backup-restart.log").read_text()
    assert log.count("hfmount_rules: armed") >= 2 and "class database restored from" in log
    assert not violations.exists(), violations.read_text()
    assert {w for w, at in acknowledged if at < last["taken_at"]} <= kept
    lost = [(w, at) for w, at in acknowledged if w not in kept]
    window = killed_at - min((at for _, at in lost), default=killed_at)
    print(f"\nlost {len(lost)} of {len(acknowledged)} acknowledged answers, all acknowledged in the last "
          f"{window:.1f} s before the kill (snapshots every {backup.DEFAULT_INTERVAL_S:g} s; the last one taken "
          f"{killed_at - last['taken_at']:.1f} s before the kill)")


def keep_answering(url: str, code: str, worker: int, acknowledged: list) -> None:
    """One student's phone after another, as fast as the app answers, until the app is gone."""
    client = api_client(url)
    for n in range(100_000):
        word = f"w{worker}x{n}"
        try:
            client.submit(code=code, student_id=f"backup-student-{worker}-{n:05d}", answer=word,
                          api_name="/class_answer").result(timeout=60)
        except Exception:  # the app was killed
            return
        acknowledged.append((word, time.time()))
