"""pylti1p3 on Starlette: the request, cookie, session, redirect and tool-configuration classes the library asks a web
framework for (as its own Flask and Django adapters do), with the platforms read from the class database.

The library does the protocol (OIDC login, the id_token's signature, issuer, audience, expiry and deployment,
deep-linking responses, AGS tokens); this module supplies what it stores. Two choices are LM Lab's own: a nonce is
*taken* when a launch presents it (deleted; a second launch with it is refused), where the library only checks that
it exists; and what is kept of a launch is a short list of claims, so that the LMS's opaque user id is kept and the
student's name, e-mail address and picture, which platforms send too, never are."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta

from pylti1p3.cookie import CookieService
from pylti1p3.deployment import Deployment
from pylti1p3.exception import LtiException
from pylti1p3.launch_data_storage.base import LaunchDataStorage
from pylti1p3.message_launch import MessageLaunch
from pylti1p3.oidc_login import OIDCLogin
from pylti1p3.redirect import Redirect
from pylti1p3.registration import Registration
from pylti1p3.request import Request
from pylti1p3.service_connector import ServiceConnector
from pylti1p3.session import SessionService
from pylti1p3.tool_config.abstract import ToolConfAbstract
from starlette.responses import HTMLResponse, RedirectResponse, Response

from labs.core.serving import lti_keys, lti_store
from labs.core.ui.escape import esc

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
# What is kept of a launch: who (the opaque `sub`) in which role, where, and what the LMS asks for; nothing else.
KEPT_CLAIMS = ("iss", "aud", "azp", "sub", "exp", "iat", CLAIM + "deployment_id", CLAIM + "message_type",
               CLAIM + "version", CLAIM + "target_link_uri", CLAIM + "roles", CLAIM + "context",
               CLAIM + "resource_link", CLAIM + "custom", CLAIM + "launch_presentation",
               "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint",
               "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings")
LAUNCH_LIFETIME_S = 8 * 3600  # a launched page keeps working through a long lab session
KEY_SET_CACHE_S = 300  # a platform's public keys are fetched again after five minutes, or for an unknown key id


def kept(claims: dict) -> dict:
    return {name: claims[name] for name in KEPT_CLAIMS if name in claims}


class StarletteRequest(Request):
    """A request's parameters (query and form, read by the route), its cookies and whether it came over HTTPS."""

    def __init__(self, params: dict, cookies: dict, secure: bool):
        super().__init__()
        self._params, self._cookies, self._secure = params, cookies, secure

    @property
    def session(self):
        return {}

    def get_param(self, key: str):
        return self._params.get(key)

    def get_cookie(self, key: str):
        return self._cookies.get(key)

    def is_secure(self) -> bool:
        return self._secure


class StarletteCookies(CookieService):
    """The OIDC state cookie: set on the redirect to the platform, read at the launch. Over HTTPS it is
    SameSite=None and partitioned, so that an LMS that frames LM Lab still gets it back."""

    def __init__(self, request: StarletteRequest):
        self._request, self._to_set = request, {}

    def _get_key(self, key: str) -> str:
        return f"{self._cookie_prefix}-{key}"

    def get_cookie(self, name: str):
        return self._request.get_cookie(self._get_key(name))

    def set_cookie(self, name: str, value, exp=3600):
        self._to_set[self._get_key(name)] = (value, exp)

    def update_response(self, response: Response) -> Response:
        secure = self._request.is_secure()
        for key, (value, exp) in self._to_set.items():
            response.set_cookie(key, value, max_age=exp, path="/", httponly=True, secure=secure,
                                samesite="none" if secure else "lax", partitioned=secure)
        return response


class DatabaseStorage(LaunchDataStorage):
    """pylti1p3's launch data storage in the class database (lti_store's short-lived values). Keys are random
    (state, nonce, launch id), so they need no browser session cookie: a framed page without cookies still works."""

    def get_session_cookie_name(self):
        return None

    def can_set_keys_expiration(self) -> bool:
        return True

    def get_value(self, key: str):
        return lti_store.get_value(self._prepare_key(key))

    def set_value(self, key: str, value, exp=None) -> None:
        lti_store.put_value(self._prepare_key(key), value, exp or LAUNCH_LIFETIME_S)

    def check_value(self, key: str) -> bool:
        return lti_store.get_value(self._prepare_key(key)) is not None

    def take_value(self, key: str) -> bool:
        return lti_store.take_value(self._prepare_key(key))


class DatabaseSessions(SessionService):
    """The library's session service, with a nonce used once and a launch kept without personal claims."""

    def __init__(self, request: Request):
        self.data_storage = DatabaseStorage()
        self.data_storage.set_request(request)
        self._launch_data_lifetime = LAUNCH_LIFETIME_S

    def check_nonce(self, nonce: str) -> bool:
        return self.data_storage.take_value(self._get_key("nonce", nonce))

    def save_launch_data(self, key: str, jwt_body) -> None:
        self._set_value(self._get_key(key, add_prefix=False), kept(dict(jwt_body)))


class StarletteRedirect(Redirect):
    def __init__(self, location: str, cookies: StarletteCookies | None = None):
        super().__init__()
        self._location, self._cookies = location, cookies

    def _done(self, response: Response) -> Response:
        return self._cookies.update_response(response) if self._cookies else response

    def do_redirect(self):
        return self._done(RedirectResponse(self._location, status_code=302))

    def do_js_redirect(self):
        return self._done(HTMLResponse(f"<script>window.location={esc(repr(self._location))};</script>"))

    def set_redirect_url(self, location: str):
        self._location = location

    def get_redirect_url(self):
        return self._location


def registration_of(row) -> Registration:
    """A stored platform as the library's Registration, with LM Lab's current key."""
    private, public = lti_keys.current()
    registration = (Registration().set_issuer(row.issuer).set_client_id(row.client_id)
                    .set_auth_login_url(row.auth_login_url).set_auth_token_url(row.auth_token_url)
                    .set_key_set_url(row.key_set_url).set_tool_private_key(private).set_tool_public_key(public))
    if row.auth_audience:
        registration.set_auth_audience(row.auth_audience)
    return registration


class DatabaseToolConf(ToolConfAbstract):
    """The platforms registered in the class database; an issuer may have several client ids."""

    def check_iss_has_one_client(self, iss: str) -> bool:
        return False

    def check_iss_has_many_clients(self, iss: str) -> bool:
        return True

    def find_registration_by_issuer(self, iss: str, *args, **kwargs):
        return self.find_registration_by_params(iss, None)

    def find_registration_by_params(self, iss: str, client_id, *args, **kwargs):
        row = lti_store.platform(iss, client_id)
        return registration_of(row) if row is not None else None

    def find_deployment(self, iss: str, deployment_id: str):
        return self.find_deployment_by_params(iss, deployment_id, None)

    def find_deployment_by_params(self, iss: str, deployment_id: str, client_id, *args, **kwargs):
        row = lti_store.platform(iss, client_id)
        if row is None or not deployment_id or not lti_store.has_deployment(row.id, deployment_id):
            return None
        return Deployment().set_deployment_id(deployment_id)


_key_sets: dict[str, tuple[float, dict]] = {}


class StarletteLogin(OIDCLogin):
    """The OIDC login initiation: where the platform sends the browser first."""

    def __init__(self, request: StarletteRequest, tool_config: ToolConfAbstract):
        cookies = StarletteCookies(request)
        super().__init__(request, tool_config, session_service=DatabaseSessions(request), cookie_service=cookies,
                         launch_data_storage=DatabaseStorage())

    def get_redirect(self, url: str):
        return StarletteRedirect(url, self._cookie_service)

    def get_response(self, html: str):
        return HTMLResponse(html)

    def get_cookies_allowed_js_check(self):
        """A framed page whose browser blocks cookies opens LM Lab in a new window (lti1p3_new_window=1)."""
        from urllib.parse import urlencode

        _protocol, params = self.get_cookies_allowed_js_check_params()
        url = "?" + urlencode(params)
        return HTMLResponse(
            "<!doctype html><meta charset=utf-8><title>LM Lab</title><body style='font-family:sans-serif'>"
            "<p id=lti-wait>Opening LM Lab…</p><p id=lti-new hidden>Your browser does not let LM Lab keep its "
            f"sign-in inside this page. <a href='{esc(url)}' target=_blank rel=opener>Open LM Lab in a new window"
            "</a>.</p><script>document.cookie='lti1p3-cookie-check=1; path=/; SameSite=None; Secure';"
            "if (document.cookie.indexOf('lti1p3-cookie-check') >= 0 || window.top === window) {"
            f" window.location.href={esc(repr(url))}; }} else {{ document.getElementById('lti-wait').hidden=true;"
            " document.getElementById('lti-new').hidden=false; }</script>")


class StarletteLaunch(MessageLaunch):
    """A launch (the id_token the platform posts), validated by the library with the storage above; a platform's
    public keys are fetched once per five minutes, and again at once for a key id not seen (a rotated key)."""

    def __init__(self, request: StarletteRequest, tool_config: ToolConfAbstract):
        super().__init__(request, tool_config, session_service=DatabaseSessions(request),
                         cookie_service=StarletteCookies(request), launch_data_storage=DatabaseStorage(),
                         service_connector_cls=CachedTokens)
        self._requests_session.timeout = 10

    def _get_request_param(self, key: str):
        return self._request.get_param(key)

    def fetch_public_key(self, key_set_url: str):
        cached = _key_sets.get(key_set_url)
        if cached and time.monotonic() - cached[0] < KEY_SET_CACHE_S:
            return cached[1]
        key_set = super().fetch_public_key(key_set_url)
        _key_sets[key_set_url] = (time.monotonic(), key_set)
        return key_set

    def get_public_key(self):
        try:
            return super().get_public_key()
        except LtiException:
            url = self._registration.get_key_set_url()
            if url not in _key_sets:
                raise
            _key_sets.pop(url, None)  # perhaps the platform rotated its key: read its key set again, once
            self._registration.set_key_set(None)
            return super().get_public_key()


class CachedTokens(ServiceConnector):
    """The grade-book access token, one per platform and scopes, shared by every post until it expires: a class
    checking at once asks the platform for one token, not a hundred."""

    _tokens: dict[str, tuple[str, datetime]] = {}
    _lock = threading.Lock()

    def _get_cached_access_token(self, scope_key: str):
        token = self._tokens.get(scope_key)
        return token[0] if token and token[1] > datetime.now() else None

    def _cache_access_token(self, scope_key: str, access_token: str, expires_in: float):
        self._tokens[scope_key] = (access_token, datetime.now() + timedelta(seconds=max(0.0, expires_in - 30)))

    def get_access_token(self, scopes):
        with self._lock:  # the first post fetches it; the others wait for it, then read it from the cache
            return super().get_access_token(scopes)

    @classmethod
    def forget(cls) -> None:
        """Drop the cached tokens (a platform refused one)."""
        cls._tokens.clear()
