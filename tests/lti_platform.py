"""A real LTI 1.3 platform (an LMS's side, lti1p3platform on FastAPI) for the tests: served by uvicorn in a thread
on a free port, it starts launches (OIDC), signs id_tokens with its own key, takes deep-linking responses,
hands out grade-book tokens and keeps a grade book of the scores LM Lab posts (AGS).

What it can be told to do wrong is what an attacker or a broken LMS does: an expired token, a wrong audience, an
unknown deployment, a token signed by another key, one whose claims were changed after signing; and failing the
next N score posts (a platform down for a moment)."""

from __future__ import annotations

import html
import json
import re
import secrets
import socket
import threading
import time

import jwt
import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract
from lti1p3platform.registration import Registration

LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
AGS_SCOPES = ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
              "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
              "https://purl.imsglobal.org/spec/lti-ags/scope/score"]


def pem_pair() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Platform:
    """The LMS: its registration of LM Lab, its launches, its activities (deep links) and its grade book."""

    def __init__(self, tool_url: str, client_id: str = "lm-lab-client", deployment_id: str = "deployment-1"):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.tool_url = tool_url.rstrip("/")
        self.client_id, self.deployment_id = client_id, deployment_id
        self.private, self.public = pem_pair()
        self.pending: dict[str, dict] = {}  # lti_message_hint: what the launch carries
        self.activities: list[dict] = []  # the deep links the lecturer added (content items)
        self.scores: dict[str, list[dict]] = {}  # line item id: every score posted, in order
        self.tokens_issued = 0
        self.fail_next_posts = 0
        self.registration_token = secrets.token_urlsafe(12)  # what the LMS hands the tool for Dynamic Registration
        self.tool_registration: dict | None = None  # what LM Lab sent when it registered itself
        self.lock = threading.Lock()
        self.app = self._app()

    # ---- registration ----
    def registration(self, client_id: str | None = None) -> Registration:
        """LM Lab as this LMS knows it: typed in by hand, or what LM Lab sent through Dynamic Registration."""
        sent = self.tool_registration or {}
        login = sent.get("initiate_login_uri", f"{self.tool_url}/lti/login")
        launch = sent.get("redirect_uris", [f"{self.tool_url}/lti/launch"])[0]
        return (Registration().set_iss(self.url).set_client_id(client_id or self.client_id)
                .set_deployment_id(self.deployment_id).set_oidc_login_url(login)
                .set_launch_url(launch).set_deeplink_launch_url(launch)
                .set_tool_key_set_url(sent.get("jwks_uri", f"{self.tool_url}/lti/jwks"))
                .set_platform_public_key(self.public).set_platform_private_key(self.private))

    def endpoints(self) -> dict:
        """What a lecturer pastes into LM Lab's registration by hand."""
        return {"issuer": self.url, "client_id": self.client_id, "auth_login_url": f"{self.url}/auth",
                "auth_token_url": f"{self.url}/token", "key_set_url": f"{self.url}/jwks",
                "deployment_ids": [self.deployment_id]}

    # ---- launches ----
    def login_url(self, user_id: str, *, roles=(LEARNER,), deep_link=False, activity: dict | None = None,
                  **hostile) -> str:
        """The address that starts a launch (the LMS's link to the activity): OIDC login initiation at LM Lab."""
        hint = secrets.token_urlsafe(8)
        self.pending[hint] = {"user_id": user_id, "roles": list(roles), "deep_link": deep_link,
                              "activity": activity, **hostile}
        platform = self

        class Login(OIDCLoginAbstract):
            def set_lti_message_hint(self, **kwargs):
                self._lti_message_hint = kwargs["hint"]

            def get_redirect(self, url):
                return url

        login = Login(None, Config(platform))
        login.set_lti_message_hint(hint=hint)
        return login.initiate_login(user_id)

    def _launch_form(self, request: Request) -> Response:
        query = dict(request.query_params)
        wanted = self.pending.get(query.get("lti_message_hint", ""))
        if wanted is None:
            return HTMLResponse("unknown launch", status_code=400)
        platform = self

        class Launch(LTIAdvantageMessageLaunchAbstract):
            def get_preflight_response(self):
                return query

            def render_launch_form(self, launch_data, **kwargs):
                return launch_data

        config = Config(platform)
        launch = Launch(request, config)
        launch.set_user_data(wanted["user_id"], wanted["roles"], full_name="Ada Student",
                             email_address="ada@example.edu")
        activity = wanted.get("activity") or {}
        launch.set_launch_context_claim("course-1", context_title="LM course")
        if wanted["deep_link"]:
            launch.set_dl(f"{self.url}/deep_link_return", title="Add LM Lab",
                          accept_types={"ltiResourceLink"})
        else:
            launch.set_resource_link_claim(activity.get("resource_link_id", "link-1"), title=activity.get("title"))
            launch.set_custom_parameters_claim(activity.get("custom", {}))
            if activity.get("lineitem"):
                launch.set_ags(f"{self.url}/lineitems", activity["lineitem"])
        if wanted.get("expired"):
            launch.set_id_token_expiration(-120)
        extra = {}
        if wanted.get("audience"):
            extra["aud"] = wanted["audience"]
        if wanted.get("deployment"):
            extra["https://purl.imsglobal.org/spec/lti/claim/deployment_id"] = wanted["deployment"]
        if extra:
            launch.set_extra_claims(extra)
        data = launch.lti_launch()
        token = data["id_token"]
        if wanted.get("forged"):  # the same claims, signed by a key that is not the platform's
            body = jwt.decode(token, options={"verify_signature": False})
            stranger, _ = pem_pair()
            token = jwt.encode(body, stranger, algorithm="RS256", headers=jwt.get_unverified_header(token))
        if wanted.get("tampered"):  # a claim changed after signing: the signature no longer matches
            head, _body, sig = token.split(".")
            body = jwt.decode(token, options={"verify_signature": False})
            body["sub"] = "someone-else"
            forged = jwt.utils.base64url_encode(json.dumps(body).encode()).decode()
            token = f"{head}.{forged}.{sig}"
        fields = "".join(f'<input type="hidden" name="{k}" value="{html.escape(v)}"/>'
                         for k, v in (("id_token", token), ("state", data["state"])))
        return HTMLResponse(f'<!doctype html><title>Launching</title><form method="POST" id="form" '
                            f'action="{html.escape(data["launch_url"])}">{fields}</form>'
                            '<script>document.getElementById("form").submit();</script>')

    # ---- the FastAPI app ----
    def _app(self) -> FastAPI:
        app = FastAPI()
        platform = self

        @app.get("/jwks")
        def jwks():
            return {"keys": platform.registration().get_jwks()}

        @app.get("/.well-known/openid-configuration")
        def openid_configuration():
            return {"issuer": platform.url, "authorization_endpoint": f"{platform.url}/auth",
                    "token_endpoint": f"{platform.url}/token", "jwks_uri": f"{platform.url}/jwks",
                    "registration_endpoint": f"{platform.url}/register", "scopes_supported": AGS_SCOPES,
                    "https://purl.imsglobal.org/spec/lti-platform-configuration": {
                        "product_family_code": "lti1p3platform-test", "version": "0.1.8"}}

        @app.post("/register")
        async def register(request: Request):
            if request.headers.get("authorization") != f"Bearer {platform.registration_token}":
                return JSONResponse({"error": "bad registration token"}, status_code=401)
            sent = await request.json()
            platform.tool_registration = sent
            return {**sent, "client_id": platform.client_id,
                    "https://purl.imsglobal.org/spec/lti-tool-configuration": {
                        **sent["https://purl.imsglobal.org/spec/lti-tool-configuration"],
                        "deployment_id": platform.deployment_id}}

        @app.get("/auth")
        def auth(request: Request):
            return platform._launch_form(request)

        @app.post("/token")
        async def token(request: Request):
            form = dict(await request.form())
            try:
                answer = Config(platform).get_access_token(form)
            except Exception as exc:  # noqa: BLE001 - the platform answers 400 to any bad request
                return JSONResponse({"error": str(exc)}, status_code=400)
            with platform.lock:
                platform.tokens_issued += 1
            return answer

        @app.post("/lineitems/{item}/lineitem/scores")
        async def score(item: str, request: Request):
            bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
            try:
                allowed = Config(platform).validate_token(bearer, allowed_scopes=[AGS_SCOPES[2]])
            except Exception as exc:  # noqa: BLE001
                return JSONResponse({"error": str(exc)}, status_code=401)
            if not allowed:
                return JSONResponse({"error": "this token may not post scores"}, status_code=403)
            with platform.lock:
                if platform.fail_next_posts > 0:
                    platform.fail_next_posts -= 1
                    return JSONResponse({"error": "the grade book is down for a moment"}, status_code=503)
                platform.scores.setdefault(f"{platform.url}/lineitems/{item}/lineitem", []).append(
                    await request.json())
            return Response(status_code=200)

        @app.post("/deep_link_return")
        async def deep_link_return(request: Request):
            form = dict(await request.form())
            try:
                items = Config(platform).validate_deeplinking_resp(form)
            except Exception as exc:  # noqa: BLE001
                return HTMLResponse(f"refused: {html.escape(str(exc))}", status_code=400)
            names = []
            for content in items:
                item = dict(content)
                if "lineItem" in item:
                    number = len(platform.activities) + 1
                    item["lineitem_url"] = f"{platform.url}/lineitems/{number}/lineitem"
                platform.activities.append(item)
                names.append(item.get("title", ""))
            return HTMLResponse(f"<h1 id=added>Added: {html.escape(', '.join(names))}</h1>")

        return app

    def gradebook(self, lineitem: str) -> dict:
        """Each student's last score on a line item (the grade book's column)."""
        with self.lock:
            return {s["userId"]: s for s in self.scores.get(lineitem, [])}

    def activity_launch(self, item: dict) -> dict:
        """A deep-linked content item as the launch the LMS makes of it."""
        return {"resource_link_id": f"link-{self.activities.index(item)}", "title": item.get("title"),
                "custom": item.get("custom", {}), "lineitem": item.get("lineitem_url")}

    # ---- serving ----
    def __enter__(self) -> Platform:
        config = uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(10)


class Config(LTI1P3PlatformConfAbstract):
    """lti1p3platform's platform configuration: the one registration of LM Lab."""

    def init_platform_config(self, platform: Platform = None, **kwargs):
        self._platform = platform

    def get_registration_by_params(self, **kwargs):
        return self._platform.registration()

    def __init__(self, platform: Platform):
        super().__init__(platform=platform)
        self.get_registration()


def form_fields(page: str) -> tuple[str, dict]:
    """An auto-posting form's action and hidden fields (what a browser would post)."""
    action = html.unescape(re.search(r'<form[^>]*action=["\']([^"\']+)', page).group(1))
    fields = {html.unescape(m.group(1)): html.unescape(m.group(2))
              for m in re.finditer(r'<input type=["\']?hidden["\']? name=["\']([^"\']+)["\'] value=["\']([^"\']*)',
                                   page)}
    return action, fields
