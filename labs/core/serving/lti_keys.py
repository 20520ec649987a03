"""LM Lab's own signing key for the LMS (LTI 1.3): an RSA key generated at first use into the data folder, the
JWKS the platforms read it from, and its rotation.

The key signs what LM Lab sends a platform (the deep-linking response, the request for a grade-book token). The
JWKS lists the current key and the one before it, so that a token signed just before a rotation still verifies;
`rotate()` makes a new current key and drops any older than the previous one. The private keys stay in
<data folder>/lti/ (mode 0600), never in the database that PostgreSQL front-ends share over the network."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from pylti1p3.registration import Registration

KEEP = 2  # the current key and the previous one are published
_folder: Path | None = None
_lock = threading.Lock()
_cache: dict[Path, tuple[float, str, str]] = {}  # path: (mtime, private PEM, public PEM)


def configure(folder: Path | None) -> None:
    """The folder the keys live in (app.py: <data folder>/lti)."""
    global _folder
    _folder = Path(folder) if folder is not None else None


def folder() -> Path:
    if _folder is None:
        from labs.core.serving.lti_store import NotSetUp

        raise NotSetUp("This server runs without the LMS connection.")
    return _folder


def _key_files() -> list[Path]:
    return sorted(folder().glob("tool-*.pem"))  # named by creation time: the last is the current key


def _new_key() -> Path:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    folder().mkdir(parents=True, exist_ok=True)
    path = folder() / f"tool-{time.time_ns():020d}.pem"
    temporary = path.with_suffix(".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    temporary.replace(path)  # whole or absent: a second front-end never reads half a key
    return path


def _read(path: Path) -> tuple[str, str]:
    mtime = path.stat().st_mtime
    cached = _cache.get(path)
    if cached and cached[0] == mtime:
        return cached[1], cached[2]
    private = path.read_bytes()
    key = serialization.load_pem_private_key(private, password=None)
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    _cache[path] = (mtime, private.decode(), public)
    return private.decode(), public


def current() -> tuple[str, str]:
    """(private PEM, public PEM) of the key LM Lab signs with now; made at first use."""
    with _lock:
        files = _key_files()
        if not files:
            files = [_new_key()]
        return _read(files[-1])


def jwks() -> dict:
    """The public keys a platform verifies LM Lab's signatures with: the current one first."""
    current()
    with _lock:
        files = _key_files()[-KEEP:]
        return {"keys": [dict(Registration.get_jwk(_read(path)[1])) for path in reversed(files)]}


def rotate() -> str:
    """A new current key; keys older than the previous one are deleted. Returns the new key's id."""
    with _lock:
        _new_key()
        files = _key_files()
        for old in files[:-KEEP]:
            old.unlink(missing_ok=True)
            _cache.pop(old, None)
        return Registration.get_jwk(_read(files[-1])[1])["kid"]


def registration_secret() -> str:
    """The secret in LM Lab's Dynamic Registration URL (/lti/register/<secret>): LAB_LTI_REGISTRATION_KEY, else one
    made at first use in the key folder. Only whoever has it can register a platform."""
    if os.environ.get("LAB_LTI_REGISTRATION_KEY"):
        return os.environ["LAB_LTI_REGISTRATION_KEY"]
    import secrets

    path = folder() / "registration-key"
    with _lock:
        if not path.exists():
            folder().mkdir(parents=True, exist_ok=True)
            fd = os.open(path.with_suffix(".tmp"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_urlsafe(24))
            path.with_suffix(".tmp").replace(path)
        return path.read_text().strip()
