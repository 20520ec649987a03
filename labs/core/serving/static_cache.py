"""Gradio's own files (its web page's JavaScript, CSS and fonts) compressed once per server, not once per
student. Gradio's BrotliMiddleware compresses every response anew at quality 4, although the files it
ships never change while a server runs: measured, 0.17 s of CPU per page open, two thirds of what a
page open cost, and a class opens the page at the same moment.

`CachedCompression` is Gradio's BrotliMiddleware (the same settings, installed where Gradio installs
it) that keeps the compressed bytes of the files under /assets/, /static/ and /svelte/ (the folders of
the gradio package; no user file, upload, page, configuration or API response is under them) after
the first request, and sends them with an ETag and browser caching: a file whose name carries Vite's
content hash (`Blocks-D1GWYZdr.js`) is immutable for a year, the rest is revalidated (a 304). Whatever
else passes through Gradio's own middleware unchanged. A page asks for its scripts with its origin
(Vite's `crossorigin`), and Gradio's CORS middleware answers each origin with headers of its own: they
are kept per origin, for the server's own origins (its Host); another site's request goes through
Gradio. Gradio's page core (`assets/core-*.js`) is sent as labs/core/serving/frontend_patch.py patches
it, to every browser (a range or another site's request included). Written for gradio 6.31 (pinned in
requirements.txt); tests/test_static_cache.py checks the bytes against Gradio's own responses.

The page itself (GET /) is the same for every student of a server without a login (LM Lab has none):
Gradio writes the app's configuration into it (750 KB for LM Lab's ten labs: every component and
event), copied and rewritten for each request, and sends it uncompressed (its middleware compresses
only names with a file extension): measured, a third of a page open's CPU. `CachedCompression` keeps
it too, once per root URL (what Gradio derives from the Host and X-Forwarded-* headers and the root
path) and encoding, compressed at PAGE_QUALITY, for at most PAGE_VARIANTS roots. What Gradio's page
route reads from the query (`page`, `deep_link`, `all_endpoints`), a cross-origin request (CORS
headers name the caller), a HEAD, and a page with a deep link's state go through Gradio. The browser
is not told to cache it.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import re
from urllib.parse import parse_qsl, urlsplit

import anyio
import brotli
import cachetools
from gradio import routes
from gradio.brotli_middleware import BrotliMiddleware
from starlette.datastructures import Headers, MutableHeaders
from starlette.types import Message, Receive, Scope, Send

from labs.core.serving import frontend_patch

# Folders of files that ship inside the gradio package (routes.py: BUILD_PATH_LIB, STATIC_PATH_LIB, svelte).
PACKAGE_FILES = re.compile(r"^/(assets|static|svelte)/[^?#]+$")
HASHED_NAME = re.compile(r"-[A-Za-z0-9_-]{8}\.[a-z0-9]+$")  # Vite's content hash: the name changes with the bytes
IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"
QUALITY = 11  # computed once per server, so the smallest bytes: 100 students download each file
PAGE_VARIANTS = 8  # root URLs whose page is kept (one on a Space; a made-up Host header cannot fill memory)
PAGE_QUALITY = 5  # 750 KB in 6 ms (49 KB; 11 gives 42 KB in 0.5 s): a made-up Host header costs little CPU
DEEP_LINK_NONE = b'"deep_link_state":"none"'  # in the configuration Gradio writes into a page without one
PAGE_PARAMS = {"page", "deep_link", "all_endpoints"}  # what Gradio's page route reads (routes.py: main, get_api_info)
# What Gradio derives the page's root URL from (route_utils.get_root_url: request.url and these headers).
ROOT_HEADERS = (b"host", b"x-forwarded-host", b"x-gradio-server", b"x-forwarded-proto")


class CachedCompression(BrotliMiddleware):
    """BrotliMiddleware that compresses each of Gradio's package files once (brotli, or gzip for a
    browser without brotli) and answers later requests from memory."""

    def __init__(self, app, **kwargs) -> None:
        super().__init__(app, **kwargs)
        self.kept: dict[tuple, tuple[int, list, bytes]] = {}  # (path, encoding, origin): status, headers, body
        self.origins: set[str] = set()  # the server's own origins whose requests are kept
        self.pages = cachetools.LRUCache(PAGE_VARIANTS)  # (root, encoding): the page (one event loop: no lock)
        self._pending: dict[tuple, asyncio.Future] = {}

    def _encoding(self, scope: Scope) -> str | None:
        """The encoding to keep for this request, or None where it goes through Gradio's middleware."""
        if scope["type"] != "http" or scope.get("method") != "GET" or self._is_handler_excluded(scope):
            return None
        path = self._path(scope)
        if not PACKAGE_FILES.match(path) or ".." in path or not self._is_compressible_file_type(scope):
            return None
        headers = Headers(scope=scope)
        patched = frontend_patch.applies_to(path)  # every browser gets the patched script, whatever it asks
        if "range" in headers and not patched:
            return None
        accept = headers.get("accept-encoding", "")
        fallback = "identity" if patched else None
        return "br" if "br" in accept else "gzip" if self.gzip_fallback and "gzip" in accept else fallback

    def _own_origin(self, scope: Scope, origin: str) -> bool:
        """Whether a request's Origin is this server's own (its Host, or the host a proxy forwarded), and one of
        the first PAGE_VARIANTS such origins (made-up Host headers cannot fill memory)."""
        headers = Headers(scope=scope)
        hosts = {headers.get("host"), headers.get("x-forwarded-host")} - {None}
        if urlsplit(origin).netloc not in hosts:
            return False
        if origin not in self.origins and len(self.origins) < PAGE_VARIANTS:
            self.origins.add(origin)
        return origin in self.origins

    @staticmethod
    def _path(scope: Scope) -> str:
        path, root = scope.get("path", ""), scope.get("root_path", "")
        return path[len(root):] if root and path.startswith(root) else path

    def _page_key(self, scope: Scope) -> tuple | None:
        """The key of the page's kept copy for this request, or None where it goes through Gradio."""
        if scope["type"] != "http" or scope.get("method") != "GET" or self._path(scope) != "/":
            return None
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        if any(name in PAGE_PARAMS for name, _ in query):  # decoded as Gradio reads them (deep%5Flink too)
            return None
        headers = Headers(scope=scope)
        if "origin" in headers or "range" in headers:
            return None
        accept = headers.get("accept-encoding", "")
        encoding = "br" if "br" in accept else "gzip" if self.gzip_fallback and "gzip" in accept else "identity"
        root = tuple(headers.get(h.decode(), "") for h in ROOT_HEADERS)
        server = tuple(scope.get("server") or ())
        return ("page", scope.get("scheme"), server, scope.get("root_path", ""), *root, encoding)

    async def _kept_once(self, store: dict, key: tuple, compute) -> tuple[int, list, bytes] | None:
        """store[key], computed by the first request; the ones arriving meanwhile wait for it."""
        if key not in store:  # (a 404 is asked for again each time, through Gradio's own path)
            pending = self._pending.get(key)
            if pending is None:
                pending = self._pending[key] = asyncio.get_running_loop().create_future()
                try:
                    kept = await compute()
                    if kept is not None:  # only what exists: a stream of made-up names keeps nothing
                        store[key] = kept
                finally:
                    pending.set_result(None)
                    del self._pending[key]
            else:
                await pending
        return store.get(key)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        page_key = self._page_key(scope)
        if page_key is not None:
            page = await self._kept_once(self.pages, page_key,
                                         lambda: self._compute(scope, receive, page_key[-1], page=True))
            if page is None:
                return await super().__call__(scope, receive, send)
            status, headers, body = page
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        encoding = self._encoding(scope)
        if encoding is None:
            return await super().__call__(scope, receive, send)
        # A page's scripts are asked for with its origin (Vite's `crossorigin`), and Gradio's CORS middleware
        # answers each origin with headers of its own: kept per origin, for the server's own origins only.
        origin = Headers(scope=scope).get("origin")
        if origin is not None and not self._own_origin(scope, origin):
            if not frontend_patch.applies_to(self._path(scope)):
                return await super().__call__(scope, receive, send)
            kept = await self._compute(scope, receive, encoding)  # another site's: patched, not kept
        else:
            key = (self._path(scope), encoding, origin)
            kept = await self._kept_once(self.kept, key, lambda: self._compute(scope, receive, encoding))
        if kept is None:  # not a file (a 404) or not ours to keep: Gradio's own path
            return await super().__call__(scope, receive, send)
        status, headers, body = kept
        if _etag_matches(Headers(scope=scope).get("if-none-match"), dict(headers)[b"etag"]):
            keep = {b"etag", b"cache-control", b"vary", b"last-modified"}
            await send({"type": "http.response.start", "status": 304,
                        "headers": [(k, v) for k, v in headers if k in keep]})
            await send({"type": "http.response.body", "body": b""})
            return
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _compute(self, scope: Scope, receive: Receive, encoding: str,
                       page: bool = False) -> tuple[int, list, bytes] | None:
        """The response as Gradio's route gives it, compressed once; None if it is not a plain 200. A
        file gets an ETag and browser caching; the page gets neither (a new server may send another)."""
        start: Message = {}
        chunks: list[bytes] = []

        async def capture(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        # The whole file: a range of a patched script would be a range of Gradio's own bytes.
        asked = [(k, v) for k, v in scope["headers"] if k not in (b"if-none-match", b"range")]
        await self.app(dict(scope, headers=asked), receive, capture)
        raw = Headers(raw=start.get("headers", []))
        if start.get("status") != 200 or "content-encoding" in raw:
            return None
        body = b"".join(chunks)
        if page and DEEP_LINK_NONE not in body:  # a page made for one deep link is not every student's
            return None
        shipped = body
        if not page:
            body = frontend_patch.patched(self._path(scope), body)  # Gradio's page core, faster (see there)
        headers = MutableHeaders(raw=list(start["headers"]))
        if len(body) >= self.minimum_size and encoding != "identity":  # Gradio leaves small files as they are
            if encoding == "br":
                quality = PAGE_QUALITY if page else QUALITY
                body = await anyio.to_thread.run_sync(
                    lambda: brotli.compress(body, quality=quality, mode=self.mode, lgwin=self.lgwin))
            else:
                body = await anyio.to_thread.run_sync(lambda: gzip.compress(body, compresslevel=9, mtime=0))
            headers["Content-Encoding"] = encoding
        if body is not shipped and "accept-ranges" in headers:
            del headers["accept-ranges"]  # a range of these bytes is not what Gradio's route serves
        headers["Content-Length"] = str(len(body))
        headers.add_vary_header("Accept-Encoding")
        if page:
            return 200, headers.raw, body
        headers["ETag"] = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
        headers["Cache-Control"] = IMMUTABLE if HASHED_NAME.search(self._path(scope)) else REVALIDATE
        return 200, headers.raw, body


def _etag_matches(if_none_match: str | None, etag: bytes) -> bool:
    if not if_none_match:
        return False
    tags = {t.strip().removeprefix("W/") for t in if_none_match.split(",")}
    return "*" in tags or etag.decode() in tags


def install() -> None:
    """Make every Gradio app created from now on use CachedCompression (Gradio adds its middleware in
    App.create_app, at launch)."""
    routes.BrotliMiddleware = CachedCompression
