"""A class that survives a Space restart: snapshots of the SQLite class database in a storage bucket.

A Space's own disk is wiped by every restart (a crash, a push, waking from sleep). A Storage Bucket mounted
through hf-mount (LAB_BACKUP_DIR) is kept, but it is no place for SQLite itself: no file locking, no
multi-writer support, eventually consistent (a file can be stale for ~10 s), and a file is uploaded when it
is closed (append-only; a crash before the close loses it). So the database stays on the local disk
(store.data_dir) and a consistent copy of it goes to the bucket within a few seconds of a change, as new files
written once, front to back, then closed:

- `classes-<sequence>.sqlite3`: the snapshot, made by SQLite's online backup API from a read connection of
  its own (consistent as of one moment; the students' writes go on meanwhile: WAL readers never block them);
- `classes-<sequence>.json`, written after the snapshot is closed: its name, size, sha256 and time. A restore
  trusts a snapshot only when such a record says it is complete and its bytes agree.

The older snapshots are deleted only after the new one and its record are closed (the one before is kept too:
a restore that finds the newest damaged takes it). At start, when the local database is missing, the newest
complete snapshot is copied back before the store opens it. Nothing in the bucket is ever renamed, appended
to, truncated, reopened for writing, or opened by SQLite. No Gradio here: the lecturer's note is plain text."""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import re
import sqlite3
import threading
import time
from pathlib import Path

import sqlalchemy as sa

log = logging.getLogger(__name__)

DIR_ENV, INTERVAL_ENV = "LAB_BACKUP_DIR", "LAB_BACKUP_INTERVAL_S"
DEFAULT_INTERVAL_S = 2.0
KEEP = 2  # complete snapshots kept: the newest, and the one before in case the newest cannot be read
NAME = re.compile(r"^classes-(\d{20})\.(sqlite3|json)$")
CHUNK = 1 << 20
# The answers a restart lost, acknowledged at most this long before the kill, with snapshots every 2 s: the
# most of 6 runs of tests/test_class_backup.py's restart test (kill -9 while a class answers; 2 cores). The
# bound is one interval plus one snapshot's time (milliseconds here; on a Space, plus the bucket's upload).
MEASURED_LOSS_S = 1.4
NO_BUCKET_NOTE = ("This Space keeps its classes on its own disk, which a restart (a crash, a push, waking from "
                  "sleep) wipes. To keep them, attach a storage bucket and set LAB_BACKUP_DIR (see docs/hosting.md).")


def folder(environ=None) -> Path | None:
    """The bucket's folder (LAB_BACKUP_DIR), or None: no backups."""
    value = (os.environ if environ is None else environ).get(DIR_ENV, "").strip()
    return Path(value) if value else None


def interval(environ=None) -> float:
    """Seconds between two snapshots at most (LAB_BACKUP_INTERVAL_S, default 2)."""
    value = (os.environ if environ is None else environ).get(INTERVAL_ENV, "").strip()
    try:
        seconds = float(value) if value else DEFAULT_INTERVAL_S
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < 3600:
        log.warning("%s=%r is not a number of seconds: %g s it is", INTERVAL_ENV, value, DEFAULT_INTERVAL_S)
        return DEFAULT_INTERVAL_S
    return seconds


def sqlite_file(url: str) -> Path | None:
    """The database file of a SQLite URL; None for another database (or SQLite in memory)."""
    parsed = sa.engine.make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)


NOT_A_BUCKET_NOTE = ("LAB_BACKUP_DIR is on this Space's own disk, not on a mounted storage bucket: a restart wipes the "
                     "copies with the classes. Attach a bucket at that folder (see docs/hosting.md).")


def on_the_same_disk(dest: Path, data: Path) -> bool:
    """Is the backup folder on the filesystem that holds the database (no bucket mounted there: a duplicated Space
    keeps the variable but not its bucket)?"""
    def filesystem(path: Path) -> int:
        while not path.exists() and path != path.parent:
            path = path.parent
        return path.stat().st_dev
    return filesystem(dest.resolve()) == filesystem(data.resolve())


def lecturer_note(environ=None, data: Path | None = None) -> str:
    """One plain line for the lecturer about what a restart does to their class (`data`: the database's folder);
    empty where it keeps it."""
    env = os.environ if environ is None else environ
    if env.get("LAB_CLASS_DB", "").strip():  # a database server of its own keeps the classes
        return ""
    dest = folder(env)
    if dest is not None and env.get("SPACE_ID") and data is not None and on_the_same_disk(dest, data):
        return NOT_A_BUCKET_NOTE
    if dest is not None:
        every = interval(env)
        measured = f"; measured: {MEASURED_LOSS_S:g} s at most" if every == DEFAULT_INTERVAL_S else ""
        return (f"Classes are copied to the storage bucket every {every:g} s: a restart (a crash, a push, waking "
                f"from sleep) loses at most the answers of the last few seconds ({every:g} s plus one copy's "
                f"time{measured}).")
    return NO_BUCKET_NOTE if env.get("SPACE_ID") else ""


# ------------------------------------------------------------------ the bucket's files


def names(sequence: int) -> tuple[str, str]:
    return f"classes-{sequence:020d}.sqlite3", f"classes-{sequence:020d}.json"


def listing(dest: Path) -> dict[int, set[str]]:
    """The snapshots and records in the bucket: sequence -> {"sqlite3", "json"} (what of it is there)."""
    found: dict[int, set[str]] = {}
    for name in os.listdir(dest):
        match = NAME.match(name)
        if match:
            found.setdefault(int(match[1]), set()).add(match[2])
    return found


def write_once(target: Path, chunks) -> tuple[int, str]:
    """A new file in the bucket: created exclusively (never an existing one), written front to back in one
    pass, flushed, fsynced, closed: hf-mount uploads it at the close. Its size and sha256. A failed write
    leaves no file behind (a partial one would have no record anyway)."""
    digest, size = hashlib.sha256(), 0
    try:
        with open(target, "xb") as out:
            for chunk in chunks:
                out.write(chunk)
                digest.update(chunk)
                size += len(chunk)
            out.flush()
            try:
                os.fsync(out.fileno())
            except OSError:  # a mount without fsync still uploads the file when it is closed
                pass
    except FileExistsError:
        raise
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    return size, digest.hexdigest()


def chunks_of(path: Path):
    with open(path, "rb") as source:
        while chunk := source.read(CHUNK):
            yield chunk


def copy_consistent(db: Path, target: Path) -> None:
    """The database as of one moment, into the local file `target`: SQLite's backup API from a connection of
    its own, all pages in one step under one read transaction (in WAL mode the writers carry on)."""
    if not db.exists():  # sqlite3.connect would create an empty one
        raise FileNotFoundError(db)
    source = sqlite3.connect(db, timeout=30)
    try:
        copy = sqlite3.connect(target)
        try:
            source.backup(copy)
        finally:
            copy.close()
    finally:
        source.close()


def take_snapshot(db: Path, dest: Path, after: int = 0) -> dict:
    """One snapshot of `db` in the bucket `dest` with its record, the older ones pruned; returns the record.
    Its sequence is above `after` and every name in the bucket (a clock that went back cannot reorder them)."""
    temp = db.with_name(db.name + ".backup-tmp")  # local: SQLite may write here as it likes
    temp.unlink(missing_ok=True)
    taken_at = time.time()  # every write committed before this moment is in the snapshot
    try:
        copy_consistent(db, temp)
        sequence = max([time.time_ns(), after + 1, *(s + 1 for s in listing(dest))])
        while True:
            snapshot, record_name = names(sequence)
            try:
                size, digest = write_once(dest / snapshot, chunks_of(temp))
                break
            except FileExistsError:  # (only another writer could have taken this name)
                sequence += 1
    finally:
        temp.unlink(missing_ok=True)
    record = {"snapshot": snapshot, "sequence": sequence, "bytes": size, "sha256": digest, "taken_at": taken_at,
              "written_at": time.time()}
    write_once(dest / record_name, [json.dumps(record).encode()])
    prune(dest, sequence)
    return record


def prune(dest: Path, newest: int) -> None:
    """Delete the snapshots older than the KEEP newest complete ones, now that `newest` and its record are
    closed; a record before its snapshot, so that no record ever names a missing file for long. Files above
    `newest` are not this process's to judge."""
    found = listing(dest)
    older = sorted(s for s, kinds in found.items() if s < newest and kinds == {"sqlite3", "json"})
    keep = {newest, *older[max(0, len(older) - KEEP + 1):]}
    for sequence, kinds in found.items():
        if sequence < newest and sequence not in keep:
            for name in sorted(names(sequence), key=lambda n: not n.endswith(".json")):
                if name.rsplit(".", 1)[1] in kinds:
                    (dest / name).unlink(missing_ok=True)


# ------------------------------------------------------------------ restore at start


def restore(db: Path, dest: Path) -> dict | None:
    """When the local database is missing: the newest complete snapshot in `dest` copied to `db` (its record
    found, its size and sha256 as recorded, SQLite's integrity check ok); a damaged or stale one is skipped
    with a warning for the one before. The record restored, or None."""
    if db.exists():
        return None
    found = listing(dest) if dest.is_dir() else {}
    for sequence in sorted((s for s, kinds in found.items() if "json" in kinds), reverse=True):
        snapshot, record_name = names(sequence)
        try:
            record = read_record(dest / record_name, snapshot)
            restore_one(dest / snapshot, record, db)
        except (OSError, ValueError, sqlite3.Error) as exc:
            log.warning("class backup %s skipped: %s", snapshot, exc)
            continue
        log.info("class database restored from %s (taken %s UTC, %.0f s ago)", dest / snapshot,
                 time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(record["taken_at"])), time.time() - record["taken_at"])
        return record
    if found:
        log.warning("no complete class backup in %s: the classes start empty", dest)
    return None


def read_record(path: Path, snapshot: str) -> dict:
    record = json.loads(path.read_bytes())
    if not (isinstance(record, dict) and record.get("snapshot") == snapshot and isinstance(record.get("bytes"), int)
            and isinstance(record.get("sha256"), str) and isinstance(record.get("taken_at"), (int, float))):
        raise ValueError("its record is not one this version writes")
    return record


def restore_one(snapshot: Path, record: dict, db: Path) -> None:
    """Copied to a local temporary file (read once, front to back, hashed on the way), checked, then renamed
    onto the local path: the store never sees half a database."""
    temp = db.with_name(db.name + ".restore-tmp")
    temp.unlink(missing_ok=True)
    db.parent.mkdir(parents=True, exist_ok=True)
    try:
        digest, size = hashlib.sha256(), 0
        with open(temp, "wb") as out:
            for chunk in chunks_of(snapshot):
                out.write(chunk)
                digest.update(chunk)
                size += len(chunk)
        if size != record["bytes"] or digest.hexdigest() != record["sha256"]:
            raise ValueError(f"its size or sha256 is not its record's ({size} bytes read, {record['bytes']} "
                             "recorded): incomplete or stale")
        check = sqlite3.connect(temp)
        try:
            verdict = check.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            check.close()
        if verdict != "ok":
            raise ValueError(f"SQLite's integrity check says {verdict!r}")
        for leftover in ("-wal", "-shm", "-journal"):  # a log of the database that is gone must not replay
            Path(f"{db}{leftover}").unlink(missing_ok=True)
        os.replace(temp, db)  # on the local disk
    finally:
        temp.unlink(missing_ok=True)


# ------------------------------------------------------------------ the thread that keeps the bucket current


class Backup:
    """The one thread that snapshots the class database at most every `every` seconds while it changes."""

    def __init__(self, db: Path, dest: Path, every: float):
        self.db, self.dest, self.every = db, dest, every
        self.changed, self.stopping = threading.Event(), threading.Event()  # (stop sets both, to wake the thread)
        self.unsaved = False  # a write committed since the last snapshot began
        self.last: dict | None = None  # the newest snapshot's record (and "seconds": how long it took)
        self.sequence = 0
        self._started = float("-inf")  # time.monotonic() of the last snapshot's start
        self._error = ""
        self._lock = threading.Lock()  # one snapshot at a time: the thread's, or the last one at exit
        self.thread = threading.Thread(target=self._run, name="class backup", daemon=True)

    def notify(self) -> None:
        """A write was committed (the store calls this after each): cheap, the thread does the work."""
        self.unsaved = True
        self.changed.set()

    def _run(self) -> None:
        while self.changed.wait() and not self.stopping.is_set():
            pause = self._started + self.every - time.monotonic()
            if pause > 0 and self.stopping.wait(pause):
                return
            self.changed.clear()  # a write after this sets it again: never missed, at worst one more snapshot
            self.unsaved = False
            try:
                self.snapshot()
            except Exception as exc:  # the bucket is away: keep the class going, try again in `every` s
                self.unsaved = True
                self.changed.set()
                if str(exc) != self._error:
                    log.warning("class backup to %s failed (tried again every %g s): %s", self.dest, self.every, exc)
                self._error = str(exc)

    def snapshot(self) -> dict:
        with self._lock:
            first = self.last is None
            self._started = started = time.monotonic()
            record = take_snapshot(self.db, self.dest, self.sequence)
            self.sequence = record["sequence"]
            self.last = {**record, "seconds": time.monotonic() - started}
        # The first one and the first after a failure are news; the others are the routine.
        (log.info if first or self._error else log.debug)(
            "class backup %s written (%d bytes, %.3f s)", record["snapshot"], record["bytes"], self.last["seconds"])
        self._error = ""
        return record

    def final(self) -> None:
        """At a clean exit: what changed since the last snapshot."""
        if self.unsaved:
            self.unsaved = False
            try:
                self.snapshot()
            except Exception as exc:
                log.warning("the last class backup at exit failed: %s", exc)

    def stop(self) -> None:
        self.stopping.set()
        self.changed.set()
        self.thread.join(10)


_current: Backup | None = None
_said_postgres = False


def restore_if_missing(url: str) -> dict | None:
    """At the store's opening: a missing local SQLite database comes back from LAB_BACKUP_DIR."""
    dest, db = folder(), sqlite_file(url)
    if dest is None or db is None:
        return None
    try:
        return restore(db, dest)
    except OSError as exc:  # the bucket cannot even be listed: the class starts empty rather than not at all
        log.warning("class backups in %s cannot be read, none restored: %s", dest, exc)
        return None


def attach(store) -> Backup | None:
    """Snapshots of this store's database from now on (the store calls `committed` after each write)."""
    global _current, _said_postgres
    dest = folder()
    if dest is None:
        return None
    db = sqlite_file(store.url)
    if db is None:
        if not _said_postgres:
            log.info("%s is set, but the classes are in %s, not in a SQLite file: nothing to back up", DIR_ENV,
                     store.url.split(":", 1)[0])
            _said_postgres = True
        return None
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # the thread's snapshots say so again, and retry: the class itself goes on
        log.warning("the class backup folder %s cannot be created: %s", dest, exc)
    stop()
    _current = Backup(db, dest, interval())
    store.committed = _current.notify
    _current.thread.start()
    atexit.register(_current.final)
    log.info("class database %s copied to %s at most every %g s after a change", db, dest, _current.every)
    return _current


def current() -> Backup | None:
    return _current


def stop() -> None:
    """No more snapshots (the store is closed, or another opened)."""
    global _current
    if _current is not None:
        _current.stop()
        atexit.unregister(_current.final)
        _current = None
