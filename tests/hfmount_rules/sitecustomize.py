"""hf-mount's rules for the folder LAB_BACKUP_DIR names, enforced in any Python started with this folder on its
PYTHONPATH (tests/test_class_backup.py starts the app so). A Storage Bucket mounted through hf-mount keeps a
file that was written once, front to back, and closed (it is uploaded at close); it has no file locking and
no multi-writer support, so SQLite must never open a file there. Each refused operation raises
PermissionError and is recorded, one line, in the file HFMOUNT_RULES_VIOLATIONS names:

- `open` of a path in the folder other than read-only, or write-only with exclusive create (`open(p, "xb")`);
  and any open for writing of a path that exists already (no rewrite, no append, no truncate);
- `os.rename` / `os.replace` (and so `shutil.move`) into, out of or inside the folder;
- `os.truncate` of a path in the folder;
- `sqlite3.connect` on a database in the folder.

Reading, listing, creating folders and deleting files are allowed: hf-mount does them. This module imports
nothing else's sitecustomize and, outside those few audit events, costs one set lookup per event."""

import os
import sys

FOLDER = os.environ.get("LAB_BACKUP_DIR", "").strip()
VIOLATIONS = os.environ.get("HFMOUNT_RULES_VIOLATIONS", "").strip()
WATCHED = frozenset({"open", "os.rename", "os.truncate", "sqlite3.connect"})
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_TRUNC | os.O_CREAT


def inside(path) -> bool:
    """Whether `path` (str, bytes or path-like; not a file descriptor) names something in the folder."""
    if isinstance(path, int) or path is None:
        return False
    path = os.fsdecode(os.fspath(path))
    if path.startswith("file:"):  # sqlite3.connect(uri=True)
        path = path[5:].split("?", 1)[0]
    if not path or path == ":memory:":
        return False
    full = os.path.abspath(path)
    return full == ROOT or full.startswith(ROOT + os.sep)


def refuse(event: str, detail: str) -> None:
    line = f"{event}: {detail}"
    if VIOLATIONS:
        with open(VIOLATIONS, "a") as out:  # outside the folder: not refused here
            out.write(line + "\n")
    raise PermissionError(f"hf-mount rules: {line}")


def check_open(path, mode, flags) -> None:
    if not inside(path):
        return
    access = flags & os.O_ACCMODE
    if not flags & WRITE_FLAGS and access == os.O_RDONLY:
        return  # read-only
    exclusive = flags & os.O_CREAT and flags & os.O_EXCL and access == os.O_WRONLY
    if not exclusive or flags & (os.O_APPEND | os.O_TRUNC):
        refuse("open", f"{path!r} mode={mode!r} flags={flags:#o}: only read-only or exclusive create")
    if os.path.lexists(path):
        refuse("open", f"{path!r} exists already: a file there is written once")


def hook(event: str, args: tuple) -> None:
    if event not in WATCHED:
        return
    if event == "open":
        check_open(*args[:3])
    elif event == "os.rename":
        if inside(args[0]) or inside(args[1]):
            refuse(event, f"{args[0]!r} -> {args[1]!r}: hf-mount cannot rename")
    elif event == "os.truncate":
        if inside(args[0]):
            refuse(event, f"{args[0]!r}: a file there is written once")
    elif inside(args[0]):  # sqlite3.connect
        refuse(event, f"{args[0]!r}: SQLite needs locks and in-place writes a bucket does not have")


if FOLDER:
    ROOT = os.path.abspath(FOLDER)
    sys.addaudithook(hook)
    sys.stderr.write(f"hfmount_rules: armed for {ROOT}\n")
