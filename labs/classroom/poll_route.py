"""`GET /class/version?code=CODE`: the one plain HTTP route of LM Lab, outside Gradio's event machinery.

A student's page in a class (assets/js/classroom.js) asks it every few seconds whether the class moved on;
only when the answer changes does the page run its Gradio event to redraw the panel. A Gradio event costs
its queue-free request, the page's session state and the pre- and post-processing of ten outputs (measured:
the class's polls were most of the server's CPU while students waited); this costs one cached look-up.
app.py hands ROUTES to Gradio's FastAPI app (launch's app_kwargs) so that they come before Gradio's own."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from labs.classroom import sessions
from labs.core.errors import BadInput, LabError

PATH = "/class/version"
NO_STORE = {"Cache-Control": "no-store"}  # a proxy or the phone's browser must not answer with an old version


def version_of(code, request=None) -> dict:
    """A number that changes whenever a student's page should change (a question, a reveal, the end), and whether
    the class has ended, from the session as this front-end saw it at most a second ago (one database look-up
    per second for the whole class). An unknown code counts as a failed join: the route must not let a script
    find codes faster than the join box does."""
    found = sessions.session_of_code(code, request)
    return {"version": found.session.version, "closed": found.session.closed_at is not None}


def class_version(request: Request) -> JSONResponse:
    # A plain (not async) function: Starlette runs it in its thread pool, as the database may be asked.
    try:
        found = version_of(request.query_params.get("code", ""), request)
    except BadInput as exc:
        return JSONResponse({"error": str(exc)}, status_code=400, headers=NO_STORE)
    except sessions.Refused as exc:  # no such class, or too many wrong codes from this network
        return JSONResponse({"error": str(exc)}, status_code=404, headers=NO_STORE)
    except LabError as exc:  # the class database is not answering: the page tries again later
        return JSONResponse({"error": str(exc)}, status_code=503, headers=NO_STORE)
    return JSONResponse(found, headers=NO_STORE)


ROUTES = [Route(PATH, class_version, methods=["GET"])]
