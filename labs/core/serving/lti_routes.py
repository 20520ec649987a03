"""LM Lab as an LTI 1.3 tool for a course's LMS (Moodle, Canvas, …): the HTTP routes (`/lti/...`) on the app's server
for the JWKS, the OIDC login, the launch, a student's checks with their grades sent back, the lecturer's deep links.

It sits in labs/core/serving, not in a lab of its own: every folder of labs/ is a tab, and a lab may not import
another; the LMS connection serves the workbook (the handout's questions), the labs (their links) and Ask the class
(its join links) alike. So it imports no lab: the workbook's questions and checks are its API endpoints called by
name (labs.core.work.services: `part_b_questions`, `check_part_b`), a lab or a class session is a link the app
already opens (`?tab=…`, `?class=CODE`), and app.py hands it the class database's engine, the data folder (its
key) and the labs' ids and titles (`configure`). The protocol itself is pylti1p3's (labs.core.serving.lti_adapter)."""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

from pylti1p3.deep_link_resource import DeepLinkResource
from pylti1p3.exception import LtiException, OIDCException, ToolConfException
from pylti1p3.lineitem import LineItem
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse
from starlette.routing import Route

from labs.core.errors import LabError
from labs.core.serving import lti_adapter, lti_grades, lti_keys, lti_pages, lti_register, lti_store
from labs.core.work import services

log = logging.getLogger(__name__)
CLAIM = lti_adapter.CLAIM
DL_CLAIM = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
REFUSED = (LtiException, OIDCException, ToolConfException, LabError)  # what a refusal page explains
LECTURER_ROLES = ("#Instructor", "#Administrator", "#ContentDeveloper", "#TeachingAssistant")
_labs: list[tuple[str, str]] = []


def configure(engine_of: Callable | None, data_dir: Path | None, labs: list[tuple[str, str]] = ()) -> None:
    """What app.py hands over: the class database's engine (opened on first use), the data folder, the labs."""
    lti_store.configure(engine_of)
    lti_keys.configure(Path(data_dir) / "lti" if data_dir is not None else None)
    _labs[:] = list(labs)


def base_url(request: Request) -> str:
    """The address the LMS reaches LM Lab at: LAB_PUBLIC_URL, else the request's own."""
    return os.environ.get("LAB_PUBLIC_URL", "").rstrip("/") or str(request.base_url).rstrip("/")


def html(result: tuple[str, int]) -> HTMLResponse:
    return HTMLResponse(result[0], status_code=result[1], headers={"Cache-Control": "no-store"})


async def params_of(request: Request) -> dict:
    found = dict(request.query_params)
    if request.method == "POST":
        found.update({k: v for k, v in (await request.form()).items() if isinstance(v, str)})
    return found


def tool_request(request: Request, params: dict) -> lti_adapter.StarletteRequest:
    secure = request.url.scheme == "https" or request.headers.get("x-forwarded-proto") == "https"
    return lti_adapter.StarletteRequest(params, dict(request.cookies), secure)


def client_of(claims: dict) -> str:
    aud = claims.get("aud")
    return aud[0] if isinstance(aud, list) else aud


def is_lecturer(roles) -> bool:
    return any(str(role).endswith(LECTURER_ROLES) for role in roles or ())


# ---- the protocol's routes -----------------------------------------------------------------------------------
def jwks(request: Request) -> JSONResponse:
    try:
        return JSONResponse(lti_keys.jwks())
    except lti_store.NotSetUp as exc:
        return JSONResponse({"error": str(exc)}, status_code=503)


async def login(request: Request):
    params = await params_of(request)

    def run():
        target = params.get("target_link_uri") or f"{base_url(request)}/lti/launch"
        if not urlsplit(target).path.endswith("/lti/launch"):  # the browser comes back to LM Lab's launch, nowhere else
            raise LtiException("The launch address is not LM Lab's.")
        oidc = lti_adapter.StarletteLogin(tool_request(request, params), lti_adapter.DatabaseToolConf())
        if request.headers.get("sec-fetch-dest") == "iframe" and params.get("lti1p3_new_window") is None:
            oidc.enable_check_cookies()  # framed: a browser that blocks its cookies gets a new window instead
        return oidc.redirect(target)

    try:
        return await run_in_threadpool(run)
    except REFUSED as exc:
        return html(lti_pages.refused(f"The LMS's sign-in was refused: {exc}"))


async def launch(request: Request):
    params = await params_of(request)

    def run():
        message = lti_adapter.StarletteLaunch(tool_request(request, params), lti_adapter.DatabaseToolConf())
        claims = message.get_launch_data()  # validates: state, nonce (taken), issuer, audience, signature, expiry
        return claims, message

    try:
        claims, message = await run_in_threadpool(run)
    except REFUSED as exc:
        log.info("LTI launch refused: %s", exc)
        return html(lti_pages.refused(f"This launch was refused: {exc}"))
    return await run_in_threadpool(opened, request, lti_adapter.kept(claims))


def new_session(claims: dict) -> str:
    """A launched page's key: the launch's kept claims under a random id (the page sends it with each action)."""
    key = "page-" + secrets.token_urlsafe(24)
    lti_store.put_value(key, claims, lti_adapter.LAUNCH_LIFETIME_S)
    return key


def session_of(key) -> dict | None:
    return lti_store.get_value(key) if isinstance(key, str) and key.startswith("page-") else None


def opened(request: Request, claims: dict):
    """What a valid launch opens: the lecturer's choice (deep linking), a workbook activity, a lab or a class."""
    custom = claims.get(CLAIM + "custom") or {}
    kind = custom.get("lmlab_kind", "workbook")
    roles = claims.get(CLAIM + "roles")
    if claims.get(CLAIM + "message_type") == "LtiDeepLinkingRequest":
        if not is_lecturer(roles):
            return html(lti_pages.refused("Only a lecturer can add activities to a course."))
        return html(lti_pages.chooser(new_session(claims), workbook_questions(), _labs))
    if kind == "lab":
        query = dict(parse_qsl(custom.get("lmlab_params", "")))
        query["tab"] = custom.get("lmlab_lab", "")
        return RedirectResponse("../?" + urlencode(query), status_code=303)  # relative: a server under a path too
    if kind == "class":
        return RedirectResponse("../?" + urlencode({"class": custom.get("lmlab_class", "")}), status_code=303)
    return RedirectResponse(f"activity?{urlencode({'session': new_session(claims)})}", status_code=303)


def workbook_questions(ids=None) -> list[dict]:
    listed = services.get("part_b_questions")()["questions"]
    if ids is None:
        return listed
    wanted = set(ids)
    return [q for q in listed if q["id"] in wanted]


def activity_of(claims: dict) -> tuple[str, list[dict], str | None]:
    """(title, the activity's questions, its line item URL or None) of a workbook launch."""
    custom = claims.get(CLAIM + "custom") or {}
    questions = workbook_questions([q for q in str(custom.get("lmlab_questions", "")).split(",") if q])
    title = (claims.get(CLAIM + "resource_link") or {}).get("title") or "LM Lab workbook"
    return title, questions, (claims.get(AGS_CLAIM) or {}).get("lineitem")


def activity(request: Request):
    key = request.query_params.get("session")
    claims = session_of(key)
    if claims is None:
        return html(lti_pages.refused("This page's launch has expired: open the activity again from your course."))
    title, questions, lineitem = activity_of(claims)
    if not questions:
        return html(lti_pages.refused("This activity names no workbook question LM Lab knows.", 404))
    if lineitem:
        platform = lti_store.platform(claims["iss"], client_of(claims))
        if platform is None:
            return html(lti_pages.refused("This course's LMS is no longer registered with LM Lab."))
        score_max = sum(1 for q in questions if q["kind"] == lti_grades.MARKED)
        lti_store.put_line_item(lineitem, platform.id, title, [q["id"] for q in questions], score_max,
                                claims.get(AGS_CLAIM))
    if is_lecturer(claims.get(CLAIM + "roles")):
        rows = lti_store.scores_of(lineitem) if lineitem else []
        return html(lti_pages.lecturer(title, questions, rows, key))
    return html(lti_pages.student(title, questions, key, graded=bool(lineitem)))


async def check(request: Request):
    """A launched student's check: the workbook's verdicts on the activity's questions, the score stored and sent."""
    try:
        body = await request.json()
    except ValueError:
        return JSONResponse({"error": "Send JSON: {session, answers}."}, status_code=400)
    claims = session_of(body.get("session") if isinstance(body, dict) else None)
    if claims is None:
        return JSONResponse({"error": "This page's launch has expired: open the activity again."}, status_code=403)
    return await run_in_threadpool(checked, claims, body.get("answers") or {})


def checked(claims: dict, answers) -> JSONResponse:
    title, questions, lineitem = activity_of(claims)
    if not isinstance(answers, dict):
        return JSONResponse({"error": "The answers must be {question id: {field: answer}}."}, status_code=400)
    ids = {q["id"] for q in questions}
    mine = {qid: given for qid, given in answers.items() if qid in ids}  # only this activity's questions
    try:
        results = services.get("check_part_b")(mine)["results"] if mine else []
    except LabError as exc:
        return JSONResponse({"error": str(exc)}, status_code=400)
    score = lti_grades.score_of(questions, results)
    summary = f"{score['score_given']:g} of {score['score_maximum']:g} right"
    if lineitem and lti_store.line_item(lineitem) is not None:
        lti_store.put_score(lineitem, claims["sub"], score)
        lti_grades.send_later(lineitem, claims["sub"])
        summary += ", sent to your course's grade book"
    return JSONResponse({"results": results, "score": {k: score[k] for k in ("score_given", "score_maximum",
                         "activity_progress", "grading_progress")}, "summary": summary + "."})


async def send_again(request: Request):
    try:
        body = await request.json()
    except ValueError:
        body = {}
    claims = session_of(body.get("session") if isinstance(body, dict) else None)
    if claims is None or not is_lecturer(claims.get(CLAIM + "roles")):
        return JSONResponse({"error": "Only the course's lecturer, launched from the LMS, can send scores again."},
                            status_code=403)
    lineitem = (claims.get(AGS_CLAIM) or {}).get("lineitem")
    if not lineitem:
        return JSONResponse({"error": "This activity has no grade-book column."}, status_code=400)
    return JSONResponse(await run_in_threadpool(lti_grades.send_again, lineitem))


async def deep_link(request: Request):
    """The lecturer's choice, signed and posted back to the LMS as a deep-linking response."""
    form = await request.form()
    claims = session_of(form.get("session"))
    if claims is None or claims.get(CLAIM + "message_type") != "LtiDeepLinkingRequest" \
            or not is_lecturer(claims.get(CLAIM + "roles")):
        return html(lti_pages.refused("Only a lecturer, launched from the LMS's \"add an activity\", can add one."))
    try:
        resource = resource_of(form, f"{base_url(request)}/lti/launch")
    except LabError as exc:
        return html(lti_pages.refused(str(exc), 400))
    return html(await run_in_threadpool(response_form, claims, resource))


def resource_of(form, launch_url: str) -> DeepLinkResource:
    kind = form.get("kind")
    resource = DeepLinkResource().set_url(launch_url)
    if kind == "workbook":
        questions = workbook_questions(form.getlist("question"))
        if not questions:
            raise LabError("Tick at least one question.")
        title = (form.get("title") or "LM Lab workbook").strip()[:200]
        resource.set_title(title).set_custom_params({"lmlab_kind": "workbook",
                                                     "lmlab_questions": ",".join(q["id"] for q in questions)})
        marked = sum(1 for q in questions if q["kind"] == lti_grades.MARKED)
        if marked:
            resource.set_lineitem(LineItem().set_score_maximum(marked).set_label(title).set_tag("lm-lab-workbook")
                                  .set_resource_id("lmlab:" + ",".join(q["id"] for q in questions)))
        return resource
    if kind == "lab":
        lab = form.get("lab", "")
        titles = dict(_labs)
        if lab not in titles:
            raise LabError("Pick one of the labs.")
        params = (form.get("params") or "").strip().lstrip("?")
        return resource.set_title(f"LM Lab: {titles[lab]}").set_custom_params(
            {"lmlab_kind": "lab", "lmlab_lab": lab, "lmlab_params": urlencode(parse_qsl(params))})
    if kind == "class":
        code = "".join(ch for ch in (form.get("class_code") or "") if ch.isalnum()).upper()
        if not code:
            raise LabError("Type the class's join code.")
        return resource.set_title(f"LM Lab: class {code}").set_custom_params({"lmlab_kind": "class",
                                                                              "lmlab_class": code})
    raise LabError("Choose what to add.")


def response_form(claims: dict, resource: DeepLinkResource) -> tuple[str, int]:
    from pylti1p3.deep_link import DeepLink

    platform = lti_store.platform(claims["iss"], client_of(claims))
    settings = claims.get(DL_CLAIM) or {}
    link = DeepLink(lti_adapter.registration_of(platform), claims[CLAIM + "deployment_id"], settings)
    token = link.get_response_jwt([resource])
    return lti_pages.auto_post(settings["deep_link_return_url"], {"JWT": token})


async def register(request: Request):
    """LTI Dynamic Registration: the LMS opens /lti/register/<secret>?openid_configuration=…&registration_token=…"""
    params = dict(request.query_params)

    def run():
        if not lti_register.allowed(request.path_params.get("secret", "")):
            raise LtiException("This registration address is not this server's: ask its administrator for the "
                               "current one (python -m tools.lti_admin url).")
        if not params.get("openid_configuration", "").startswith(("https://", "http://")):
            raise LtiException("The LMS did not say where its configuration is (openid_configuration).")
        exchange = lti_register.Registration(base_url(request), params["openid_configuration"],
                                             params.get("registration_token"))
        exchange.register()
        return exchange.complete_html()

    try:
        return HTMLResponse(await run_in_threadpool(run), headers={"Cache-Control": "no-store"})
    except (*REFUSED, AssertionError, KeyError, OSError) as exc:
        log.info("LTI registration refused: %s", exc)
        return html(lti_pages.refused(f"The registration was refused: {exc}"))


ROUTES = [Route("/lti/jwks", jwks, methods=["GET"]), Route("/lti/login", login, methods=["GET", "POST"]),
          Route("/lti/launch", launch, methods=["POST"]), Route("/lti/activity", activity, methods=["GET"]),
          Route("/lti/check", check, methods=["POST"]), Route("/lti/send_again", send_again, methods=["POST"]),
          Route("/lti/deep_link", deep_link, methods=["POST"]),
          Route("/lti/register/{secret}", register, methods=["GET"])]
