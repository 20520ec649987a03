"""The class's two plain HTTP routes, outside Gradio's event machinery: what a lecture hall of phones sends most.

- `GET /class/version?code=CODE`: a student's page in a class (assets/js/classroom.js) asks it every few seconds
  whether the class moved on; only when the answer changes does the page run its Gradio event to redraw the panel.
- `POST /class/answer` (JSON `{code, student_id, answer, confidence, question_id}`): the page's Send. The same function as the
  `/class_answer` endpoint (sessions.class_answer: checked, committed before the reply), and the same answer.

A Gradio event costs its request, the page's session state and the pre- and post-processing of its outputs: 5 to 7
ms of the server's CPU each (measured: tests/loadtest_class.py), where these cost about 1 ms; a hall of 500 sends
500 answers within seconds and 170 version looks a second. app.py hands ROUTES to Gradio's FastAPI app (launch's
app_kwargs) so that they come before Gradio's own."""

from __future__ import annotations

import json

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from labs.classroom import sessions
from labs.classroom.store import QuestionClosed
from labs.core.errors import BadInput, LabError

# How often a waiting page asks (assets/js/classroom.js: POLL_MS): a second vote reaches every phone within 3 s,
# while a hall of 500 asks 200 times a second at about 1 ms of the server's CPU each (tests/loadtest_class.py).
POLL_SECONDS = 2.5
PATH = "/class/version"
ANSWER_PATH = "/class/answer"
MAX_BODY = 4096  # an answer is 40 characters; a bigger body is refused before it is read as JSON
NO_STORE = {"Cache-Control": "no-store"}  # a proxy or the phone's browser must not answer with an old version


def version_of(code, request=None) -> dict:
    """A number that changes whenever a student's page should change (a question, a reveal, the end), and whether
    the class has ended, from the session as this front-end saw it at most a second ago (one database look-up
    per second for the whole class). An unknown code counts as a failed join: the route must not let a script
    find codes faster than the join box does."""
    found = sessions.session_of_code(code, request)
    return {"version": found.session.version, "closed": found.session.closed_at is not None}


def refusal(exc: LabError) -> JSONResponse:
    """A class action's refusal as the page shows it: its message, with the status a script can act on."""
    status = (400 if isinstance(exc, BadInput) else 409 if isinstance(exc, QuestionClosed)
              else 404 if isinstance(exc, sessions.Refused) else 503)  # 503: the database is away, try again
    return JSONResponse({"error": str(exc)}, status_code=status, headers=NO_STORE)


def class_version(request: Request) -> JSONResponse:
    # A plain (not async) function: Starlette runs it in its thread pool, as the database may be asked.
    try:
        found = version_of(request.query_params.get("code", ""), request)
    except LabError as exc:
        return refusal(exc)
    return JSONResponse(found, headers=NO_STORE)


async def class_answer(request: Request) -> JSONResponse:
    body = await request.body()
    if len(body) > MAX_BODY:
        return JSONResponse({"error": "An answer is at most 40 characters."}, status_code=413, headers=NO_STORE)
    try:
        sent = json.loads(body)
        if not isinstance(sent, dict):
            raise ValueError
    except ValueError:
        return JSONResponse({"error": "Send JSON: {code, student_id, answer, confidence, question_id}."}, status_code=400,
                            headers=NO_STORE)
    try:  # the database write waits in the thread pool, not in the event loop
        stored = await run_in_threadpool(sessions.class_answer, sent.get("code", ""), sent.get("student_id", ""),
                                         sent.get("answer"), sent.get("confidence"), sent.get("question_id"), request)
    except LabError as exc:
        return refusal(exc)
    return JSONResponse(stored, headers=NO_STORE)


ROUTES = [Route(PATH, class_version, methods=["GET"]), Route(ANSWER_PATH, class_answer, methods=["POST"])]
