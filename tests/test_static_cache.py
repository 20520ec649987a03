"""labs/core/serving/static_cache.py against Gradio's own middleware: the same bytes once decompressed, the right
headers, each file compressed once, and nothing dynamic (the page, its configuration, the theme, the
API, user files) kept. No browser, no model: a small Blocks app served by Starlette's TestClient."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import brotli
import gradio as gr
import pytest
from gradio import routes
from gradio.brotli_middleware import BrotliMiddleware
from starlette.testclient import TestClient

from labs.core.serving import frontend_patch, static_cache

BR = {"Accept-Encoding": "gzip, deflate, br, zstd"}
GZIP = {"Accept-Encoding": "gzip"}
IDENTITY = {"Accept-Encoding": "identity"}


def make_app(cached: bool, tmp_path):
    """A small app (a textbox and a button) with Gradio's middleware or ours."""
    (tmp_path / "note.txt").write_text("a user's file " * 100)
    with gr.Blocks() as demo:
        box = gr.Textbox()
        gr.Button().click(lambda s: s, box, box, api_name="echo")
    original = routes.BrotliMiddleware
    try:
        # Gradio's own middleware for the plain app, even where an app built earlier in this process installed ours
        routes.BrotliMiddleware = BrotliMiddleware
        if cached:
            static_cache.install()
        app, _, _ = demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", allowed_paths=[str(tmp_path)],
                                quiet=True)
    finally:
        routes.BrotliMiddleware = original
    return demo, app


def middleware(client: TestClient):
    """The CachedCompression instance inside the app's middleware stack."""
    layer = client.app.middleware_stack or client.app.build_middleware_stack()
    while layer is not None and not isinstance(layer, static_cache.CachedCompression):
        layer = getattr(layer, "app", None)
    return layer


def raw(client: TestClient, path: str, headers: dict):
    """The response with its body as sent (not decoded by the client)."""
    with client.stream("GET", path, headers=headers) as response:
        return response, b"".join(response.iter_raw())


@pytest.fixture(scope="module")
def clients(tmp_path_factory):
    folder = tmp_path_factory.mktemp("static")
    (plain_demo, plain_app), (our_demo, our_app) = make_app(False, folder), make_app(True, folder)
    gradio_client, ours = TestClient(plain_app), TestClient(our_app)
    ours.get("/")  # builds the middleware stack
    yield gradio_client, ours, folder
    plain_demo.close()
    our_demo.close()


@pytest.fixture(scope="module")
def asset_paths(clients):
    """The files the page names (JavaScript, CSS), as a browser would fetch them."""
    gradio_client, _, _ = clients
    page = gradio_client.get("/", headers=IDENTITY).text
    paths = sorted(set(re.findall(r'(/(?:assets|static)/[^"\'\s?)]+\.(?:js|css))', page)))
    assert paths, "the page names no asset: Gradio's page changed"
    # and what the page imports later: a sample of Gradio's built files, small and large, js, css and svg
    built = sorted(p for p in (Path(gr.__file__).parent / "templates" / "frontend" / "assets").iterdir()
                   if p.suffix in (".js", ".css", ".svg"))
    by_size = sorted(built, key=lambda p: p.stat().st_size)
    sample = by_size[:3] + by_size[-2:] + built[:: max(1, len(built) // 10)]
    return sorted(set(paths) | {f"/assets/{p.name}" for p in sample})


def test_installs_where_gradio_adds_its_middleware(clients):
    _, ours, _ = clients
    assert middleware(ours) is not None
    assert issubclass(static_cache.CachedCompression, BrotliMiddleware)


@pytest.mark.slow
def test_bytes_equal_gradios_own(clients, asset_paths):
    gradio_client, ours, _ = clients
    for path in asset_paths:
        plain = gradio_client.get(path, headers=IDENTITY)
        assert plain.status_code == 200 and "content-encoding" not in plain.headers
        expected = frontend_patch.patched(path, plain.content)  # Gradio's page core as patched (see there)
        response, body = raw(ours, path, BR)
        assert response.status_code == 200
        if len(expected) >= 400:
            assert response.headers["content-encoding"] == "br"
            assert brotli.decompress(body) == expected, path
        else:  # Gradio does not compress small files either
            assert body == expected
        assert response.headers["content-length"] == str(len(body))
        assert "accept-encoding" in response.headers["vary"].lower()
        assert response.headers["content-type"] == plain.headers["content-type"]
        response, body = raw(ours, path, GZIP)
        assert (gzip.decompress(body) if response.headers.get("content-encoding") == "gzip" else body) == expected
        # Gradio's own brotli response decodes to the same bytes too
        theirs, their_body = raw(gradio_client, path, BR)
        if theirs.headers.get("content-encoding") == "br":
            assert brotli.decompress(their_body) == plain.content


def test_each_file_compressed_once_and_cached_by_browsers(clients, asset_paths, monkeypatch):
    _, ours, _ = clients
    path = next(p for p in asset_paths if p.endswith(".js"))
    first, body = raw(ours, path, BR)
    calls = []
    monkeypatch.setattr(static_cache.brotli, "compress", lambda *a, **k: calls.append(1) or b"")
    for _ in range(3):
        again, again_body = raw(ours, path, BR)
        assert again_body == body and again.headers["etag"] == first.headers["etag"]
    assert calls == []  # served from memory
    hashed = static_cache.HASHED_NAME.search(path)
    assert first.headers["cache-control"] == (static_cache.IMMUTABLE if hashed else static_cache.REVALIDATE)
    # a browser that has the file asks again with its ETag: 304, no body
    response, body = raw(ours, path, dict(BR, **{"If-None-Match": first.headers["etag"]}))
    assert response.status_code == 304 and body == b""
    assert response.headers["etag"] == first.headers["etag"]
    # the gzip copy is another representation: another ETag
    gz, _ = raw(ours, path, GZIP)
    assert gz.headers["etag"] != first.headers["etag"]


def test_nothing_dynamic_is_kept(clients):
    _, ours, folder = clients
    cache = middleware(ours).kept
    before = set(cache)
    paths = ["/", "/config", "/theme.css", "/gradio_api/info", "/gradio_api/openapi.json",
             f"/gradio_api/file={folder / 'note.txt'}"]
    for path in paths:
        response = ours.get(path, headers=BR)
        assert "immutable" not in response.headers.get("cache-control", ""), path
    response = ours.post("/gradio_api/run/predict", json={"data": ["hello"], "fn_index": 0}, headers=BR)
    assert response.status_code == 200 and response.json()["data"] == ["hello"]
    assert set(cache) == before
    assert all(path.startswith(("/assets/", "/static/", "/svelte/")) for path, *_ in cache)


def test_missing_files_ranges_and_cors_go_through_gradio(clients, asset_paths):
    gradio_client, ours, _ = clients
    assert ours.get("/assets/no-such-file.js", headers=BR).status_code == gradio_client.get(
        "/assets/no-such-file.js", headers=BR).status_code
    assert not any(key[0] == "/assets/no-such-file.js" for key in middleware(ours).kept)
    assert ours.get("/assets/../../routes.py", headers=BR).status_code in (400, 403, 404)
    path = next(p for p in asset_paths if not frontend_patch.applies_to(p))
    ranged = ours.get(path, headers=dict(IDENTITY, Range="bytes=0-9"))
    assert ranged.status_code == 206 and len(ranged.content) == 10
    cross = ours.get(path, headers=dict(BR, Origin="http://127.0.0.1:9999"))
    assert cross.status_code == 200 and "immutable" not in cross.headers.get("cache-control", "")


def test_the_page_is_gradios_own_built_once_per_root_and_encoding(clients, monkeypatch):
    _, ours, _ = clients
    pages = middleware(ours).pages
    behind = TestClient(middleware(ours).app)  # the same app's own route, behind the middleware
    plain = behind.get("/", headers=IDENTITY)
    assert plain.status_code == 200 and "content-encoding" not in plain.headers  # Gradio sends it as it is
    response, body = raw(ours, "/", BR)
    assert response.headers["content-encoding"] == "br" and brotli.decompress(body) == plain.content
    assert response.headers["content-length"] == str(len(body)) and len(body) < len(plain.content) / 2
    assert "accept-encoding" in response.headers["vary"].lower()
    assert "cache-control" not in response.headers and "etag" not in response.headers
    assert response.headers["content-type"] == plain.headers["content-type"]
    response, body = raw(ours, "/", GZIP)
    assert gzip.decompress(body) == plain.content
    assert raw(ours, "/", IDENTITY)[1] == plain.content
    calls = []
    monkeypatch.setattr(static_cache.brotli, "compress", lambda *a, **k: calls.append(1) or b"")
    kept = len(pages)
    for query in ("", "?tab=next_token&prompt=hi", "?__theme=dark"):  # parameters the page route ignores
        assert brotli.decompress(raw(ours, "/" + query, BR)[1]) == plain.content
    assert calls == [] and len(pages) == kept
    # another root URL (a proxy's host) is another page: Gradio writes the root into the configuration
    proxied = behind.get("/", headers=dict(IDENTITY, **{"X-Forwarded-Host": "lab.example.org"}))
    assert b"lab.example.org" in proxied.content
    monkeypatch.undo()
    assert ours.get("/", headers=dict(BR, **{"X-Forwarded-Host": "lab.example.org"})).content == proxied.content
    for n in range(static_cache.PAGE_VARIANTS + 3):  # made-up hosts cannot fill the memory
        ours.get("/", headers=dict(BR, **{"X-Forwarded-Host": f"h{n}.example.org"}))
    assert len(pages) == static_cache.PAGE_VARIANTS
    # the parameters Gradio's page route reads (however they are spelled), a cross-origin request and HEAD go
    # through Gradio, and none of them leaves a page behind for the others
    before = set(pages)
    for query in ("?page=", "?deep%5Flink=x", "?deep_link=x", "?all_endpoints=1"):
        assert ours.get("/" + query, headers=IDENTITY).content == behind.get("/" + query, headers=IDENTITY).content
    cross = ours.get("/", headers=dict(BR, Origin="http://127.0.0.1:9999"))
    assert cross.status_code == 200 and "content-encoding" not in cross.headers  # Gradio's own answer
    assert ours.head("/", headers=BR).status_code == behind.head("/", headers=BR).status_code == 200
    assert set(pages) == before
    assert b'"deep_link_state":"none"' in brotli.decompress(raw(ours, "/", BR)[1])


def test_every_browser_gets_gradios_page_core_patched(clients):
    """Whatever a browser asks for (an encoding, none, a range, from another origin), the core it runs is patched."""
    gradio_client, ours, _ = clients
    [core] = (Path(gr.__file__).parent / "templates" / "frontend" / "assets").glob("core-*.js")
    path, shipped = f"/assets/{core.name}", core.read_bytes()
    assert gradio_client.get(path, headers=IDENTITY).content == shipped  # what Gradio's own route sends
    served = frontend_patch.patched(path, shipped)
    assert served != shipped
    for headers in (BR, GZIP, IDENTITY, dict(IDENTITY, Range="bytes=0-9"), dict(BR, Origin="http://127.0.0.1:9999")):
        response, body = raw(ours, path, headers)
        encoding = response.headers.get("content-encoding")
        decoded = brotli.decompress(body) if encoding == "br" else gzip.decompress(body) if encoding == "gzip" else body
        assert response.status_code == 200 and decoded == served, headers
        assert "accept-ranges" not in response.headers
    cross, _ = raw(ours, path, dict(BR, Origin="http://127.0.0.1:9999"))
    assert cross.headers.get("access-control-allow-origin") == gradio_client.get(
        path, headers=dict(BR, Origin="http://127.0.0.1:9999")).headers.get("access-control-allow-origin")


def test_a_pages_own_scripts_asked_with_its_origin_are_kept_with_gradios_cors_headers(clients, asset_paths):
    """A browser asks for a page's module scripts with the page's origin (Vite's crossorigin attribute)."""
    gradio_client, ours, _ = clients
    path = next(p for p in asset_paths if p.endswith(".js") and not frontend_patch.applies_to(p))
    own = dict(BR, Origin="http://testserver")  # TestClient's Host
    theirs = gradio_client.get(path, headers=own)
    first, body = raw(ours, path, own)
    assert brotli.decompress(body) == gradio_client.get(path, headers=IDENTITY).content
    for name in ("access-control-allow-origin", "access-control-allow-credentials", "vary"):
        assert (first.headers.get(name) or "").lower().replace("accept-encoding", "").strip(", ") == (
            theirs.headers.get(name) or "").lower().replace("accept-encoding", "").strip(", "), name
    assert (path, "br", "http://testserver") in middleware(ours).kept
    again, again_body = raw(ours, path, own)
    assert again_body == body and again.headers["etag"] == first.headers["etag"]
