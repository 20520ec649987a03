"""`GET /lab/status-version`: whether the status line changed, outside Gradio's event machinery.

Every page shows the status line (device, the loaded models, set-up problems), which changes when a model
loads. The page asks this route every few seconds (assets/js/status.js) and runs the status line's Gradio
event only when the answer changed. A Gradio timer did it before: an event every five seconds from every
open page, and on the page each event updates the loading status of every component an event has had
(measured: a fifth of a core per idle page in the browser, and 20 events a second from a class of 100)."""

from __future__ import annotations

import hashlib

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from labs.core.ui import status

PATH = "/lab/status-version"


def version() -> str:
    """A short fingerprint of what the status line says now."""
    return hashlib.sha256(status.status_line().encode()).hexdigest()[:16]


def status_version(request: Request) -> JSONResponse:
    # A plain (not async) function: Starlette runs it in its thread pool.
    return JSONResponse({"version": version()}, headers={"Cache-Control": "no-store"})


ROUTES = [Route(PATH, status_version, methods=["GET"])]
