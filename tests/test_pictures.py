"""The pictures a lecturer sees first stay current: assets/screenshots/manifest.json (written by
`python -m tools.pictures` with the pictures) names a desktop, a presenter and a phone picture of every lab the app
has, under its title and group as the tab bar shows them; every file it names exists at the size it says, and it
names every PNG there; the models that answered are real (the Hub defaults or the two offline models, never the
suite's tiny random ones); no link is a test sentence or markup; and every picture in the README and docs/ is one of
them, with a caption naming its model. No test here takes a screenshot: they read the manifest, the PNG headers, the
docs and, once, the running app's /config."""

from __future__ import annotations

import json
import re
import struct
import urllib.request
from pathlib import Path
from urllib.parse import parse_qsl, urlparse

import pytest

import app
from labs.core.models import registry
from tools import pictures

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "assets" / "screenshots"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
REAL_MODELS = {c.name for c in registry.HUB_MODELS} | {registry.SMOLLM2_NAME, registry.MINILM_NAME}
SIZES = {"desktop": (1280, None), "presenter": (1280, 720), "phone": (390, None)}


@pytest.fixture(scope="module")
def manifest() -> dict:
    return json.loads((SHOTS / pictures.MANIFEST).read_text())


def tabs_of_the_app() -> dict[str, tuple[str, str]]:
    """lab id -> (title, group) as app.py builds the tab bar."""
    return {lab.ID: (lab.TITLE, group) for group, _, labs in app.GROUPS for lab in labs}


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", header[16:24])


def test_every_lab_has_a_desktop_a_presenter_and_a_phone_picture_under_its_tab(manifest):
    tabs = tabs_of_the_app()
    assert {lab.ID for lab in app.LABS} == set(tabs)
    made = {(p["tab"], p["view"]) for p in manifest["pictures"]}
    assert {(lab, view) for lab in tabs for view in pictures.VIEWS} <= made, "python -m tools.pictures"
    for p in manifest["pictures"]:
        assert p["tab"] in tabs, f"{p['file']} shows a tab the app no longer has: {p['tab']}"
        assert (p["title"], p["group"]) == tabs[p["tab"]], f"{p['file']}: the tab is now {tabs[p['tab']]}"
        assert p["view"] in pictures.VIEWS and re.fullmatch(r"\d{4}-\d\d-\d\d", p["date"]) and p["commit"]
    assert manifest["pictures"][0]["file"] == pictures.README_PICTURE
    assert {e.lab for e in pictures.EXAMPLES} | {"classroom"} == set(tabs), "a lab without an example in tools/pictures"


def test_every_picture_named_exists_at_its_size_and_every_png_is_named(manifest):
    named = [p["file"] for p in manifest["pictures"]]
    assert len(named) == len(set(named))
    on_disk = sorted(str(f.relative_to(SHOTS)) for f in SHOTS.rglob("*.png"))
    assert sorted(named) == on_disk, "pictures not in the manifest, or entries without their picture"
    for p in manifest["pictures"]:
        width, height = png_size(SHOTS / p["file"])
        assert [width, height] == p["size"], p["file"]
        want_width, want_height = SIZES[p["view"]]
        assert width == want_width and height == (want_height or height), p["file"]
        assert height <= (pictures.PHONE_SCREENS * 844 if p["view"] == "phone" else 2800), p["file"]
        assert (SHOTS / p["file"]).stat().st_size < 600_000, f"{p['file']} is large: a clip of the first screens"


def test_the_models_are_real_and_the_examples_are_no_test_sentences(manifest):
    for p in manifest["pictures"]:
        assert set(p["models"]) <= REAL_MODELS, f"{p['file']} names a model that is not a real one: {p['models']}"
        assert "tiny" not in json.dumps(p).lower(), p["file"]
        query = urlparse(p["link"]).query
        assert query.startswith(("tab=", "class=")), p["link"]
        for name, value in parse_qsl(query, keep_blank_values=True):
            assert not re.search(r"<(?!the [a-z' ]+>)|onerror|javascript:", value, re.I), (p["file"], name, value)
    readme = manifest["pictures"][0]
    assert readme["view"] == "desktop" and readme["models"], "the README's picture shows a real model's answer"
    # every lab whose picture shows a model's answer names it on each of its three views
    for lab in ("tokens", "embeddings", "attention", "masks", "fill_mask", "next_token", "pretraining", "finetune"):
        assert all(p["models"] for p in manifest["pictures"] if p["tab"] == lab), lab


def image_lines(page: Path) -> list[tuple[str, str, str]]:
    """Each picture of a page: (the image's line, its target, the caption on the next line)."""
    lines = page.read_text().splitlines()
    found = []
    for i, line in enumerate(lines):
        for target in IMAGE.findall(line):
            caption = next((later for later in lines[i + 1:] if later.strip()), "")
            found.append((line, target, caption))
    return found


def test_every_picture_in_the_readme_and_docs_is_in_the_manifest_with_its_caption(manifest):
    by_file = {p["file"]: p for p in manifest["pictures"]}
    shown = {}
    for page in PAGES:
        for line, target, caption in image_lines(page):
            path = (page.parent / target).resolve()
            assert path.is_relative_to(SHOTS), f"{page.name}: {target} is not one of assets/screenshots/"
            file = str(path.relative_to(SHOTS))
            assert file in by_file, f"{page.name}: {target} is not in the manifest"
            shown.setdefault(page.relative_to(ROOT).as_posix(), []).append(file)
            assert caption.startswith(("*", "_")), f"{page.name}: {target} has no caption (the line after it)"
            for model in by_file[file]["models"]:  # the caption names the models the picture shows
                assert model.removesuffix(" (offline)") in caption, f"{page.name}: {target}'s caption names no {model}"
    assert "![LM Lab](assets/screenshots/app.png)" in (ROOT / "README.md").read_text()
    for lab in app.LABS:
        assert f"desktop/{lab.ID}.png" in shown.get(f"docs/labs/{lab.ID}.md", []), f"docs/labs/{lab.ID}.md"
    lecturers = shown.get("docs/lecturers.md", [])
    assert any(f.startswith("presenter/") for f in lecturers) and any(f.startswith("phone/") for f in lecturers)
    assert "python -m tools.pictures" in (ROOT / "docs" / "lecturers.md").read_text()


def test_the_manifest_names_the_running_apps_tabs(app_server, manifest):
    """The tab bar the running app serves (its /config) is the manifest's: ids, titles and groups."""
    with urllib.request.urlopen(app_server["url"] + "config", timeout=30) as answer:
        bar = pictures.tab_bar(json.load(answer))
    served = {lab["id"]: (lab["title"], group["group"]) for group in bar for lab in group["labs"]}
    assert served == tabs_of_the_app()
    assert {p["tab"]: (p["title"], p["group"]) for p in manifest["pictures"]} == served
