"""Who may do what in a class, and how they reach it: the join code (6 characters a projector shows without
doubt), the lecturer key (kept only as its SHA-256), the rate limit on unknown codes and wrong keys per client,
and the public links (join, lecturer)."""

from __future__ import annotations

import hashlib
import ipaddress
import os
import re
import secrets
import threading
from urllib.parse import urlencode

import cachetools

from labs.core.errors import BadInput, LabError

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, no 1/I: read off a projector without doubt
CODE_LENGTH = 6
CODE_PATTERN = re.compile(r"[\s\-]")
FAILED_LIMIT = 30  # unknown codes or wrong keys per client per minute: a lecture hall behind one address typos
STARTS_LIMIT = 60  # classes started by one client within ten minutes of each other: a script cannot fill the disk


class Refused(LabError):
    """A lecturer's action without the lecturer's key, or a join with a code that is not a class."""


_failures: cachetools.TTLCache = cachetools.TTLCache(maxsize=65536, ttl=60)
_starts: cachetools.TTLCache = cachetools.TTLCache(maxsize=65536, ttl=600)
_lock = threading.Lock()


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def clean_code(code) -> str:
    """A code as typed ("abc-def", " ABC DEF ") in the form it is stored; BadInput for what cannot be one."""
    if not isinstance(code, str):
        raise BadInput("The class code must be text: the 6 letters and digits on the projector.")
    code = CODE_PATTERN.sub("", code).upper()
    if len(code) != CODE_LENGTH or any(c not in CODE_ALPHABET for c in code):
        raise BadInput("A class code is 6 letters and digits, as on the projector (for example KX7-M2Q).")
    return code


def shown_code(code: str) -> str:
    """The code as the projector writes it: two groups of three."""
    return f"{code[:3]}-{code[3:]}"


# ------------------------------------------------------------------ who is asking


def client_of(request) -> str:
    """Who a request came from, for the rate limit. Behind a proxy (the direct peer is a private or loopback
    address, as on a Space) the address the proxy appended last to X-Forwarded-For, which a client cannot
    forge; otherwise the peer itself."""
    client = getattr(request, "client", None)
    peer = getattr(client, "host", None) or "local"
    headers = getattr(request, "headers", None)
    forwarded = headers.get("x-forwarded-for", "") if hasattr(headers, "get") else ""
    try:
        proxied = ipaddress.ip_address(peer).is_private or ipaddress.ip_address(peer).is_loopback
    except ValueError:
        proxied = peer == "local"
    if forwarded and proxied:
        return forwarded.split(",")[-1].strip()
    return peer


def failed(request) -> None:
    """Count a failed join or a wrong key from this client; refuse when there were too many this minute."""
    client = client_of(request)
    with _lock:
        _failures[client] = _failures.get(client, 0) + 1


def check_not_blocked(request) -> None:
    with _lock:
        failures = _failures.get(client_of(request), 0)
    if failures >= FAILED_LIMIT:
        raise Refused("Too many wrong class codes or keys from this network in the last minute. "
                      "Wait a minute, then type the code from the projector again.")


def check_start_allowed(request) -> None:
    """Count a class started by this client; refuse past STARTS_LIMIT."""
    client = client_of(request)
    with _lock:
        _starts[client] = _starts.get(client, 0) + 1
        started = _starts[client]
    if started > STARTS_LIMIT:
        raise Refused("Too many classes were started from this network in the last minutes. Use the class you "
                      "started (your lecturer link), or wait ten minutes.")


def public_url(request) -> str:
    """The app's address as students reach it: LAB_PUBLIC_URL, else the request's (behind a proxy, its
    X-Forwarded-Host and -Proto, as on a Space)."""
    if os.environ.get("LAB_PUBLIC_URL"):
        return os.environ["LAB_PUBLIC_URL"].rstrip("/")
    headers = getattr(request, "headers", None) or {}
    url = getattr(request, "url", None)
    host = headers.get("x-forwarded-host") or headers.get("host") or getattr(url, "netloc", "") or "127.0.0.1:7860"
    scheme = headers.get("x-forwarded-proto") or getattr(url, "scheme", "") or "http"
    return f"{scheme.split(',')[0].strip()}://{host.split(',')[0].strip()}"


def join_url(base: str, code: str) -> str:
    return f"{base}/?{urlencode({'class': code})}"


def lecturer_url(base: str, key: str) -> str:
    return f"{base}/?{urlencode({'tab': 'classroom', 'lecturer': key})}"


MAX_LINK_CHARS = 500


def check_link(link) -> str:
    """A link to the lab a question comes from: a link of this app ("?tab=…", "/?tab=…") or an http(s) address;
    shown on the projector as a link, so never anything a browser would run."""
    link = (link or "").strip() if isinstance(link, str) or link is None else None
    if link is None or len(link) > MAX_LINK_CHARS or any(c.isspace() or c in "<>\"'`" for c in link):
        raise BadInput(f"A question's link must be one line of at most {MAX_LINK_CHARS} characters, without spaces "
                       "or quotes.")
    if link and not link.startswith(("?", "/?", "https://", "http://")):
        raise BadInput("A question's link is a link of this app (?tab=…) or an https:// address.")
    return link
