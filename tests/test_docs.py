"""The docs stay true: docs/api.md is what `python -m tools.api_docs` writes from the endpoints now registered,
every endpoint has a description, every relative link (and its anchor) in the README, CONTRIBUTING.md and docs/
points at something that exists, every `?tab=` example opens a real tab with parameters that tab reads, and each
lab's page lists the lab's own endpoints and link parameters."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote_plus

import pytest

from labs.core.ui import links
from tools import api_docs

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = [README, ROOT / "CONTRIBUTING.md", *sorted(DOCS.rglob("*.md"))]
README_LIMIT = 12_000  # the Space card stays short: the rest is in docs/
SUITE_LINE = "<!-- The suite's size and time: the lead updates this line. -->"
MODEL_PARAMETERS = re.compile(r"model|^(encoder|causal)$")  # what a server offers varies: not checked by value


@pytest.fixture(scope="module")
def built():
    """The app built once (not launched), what the generator makes of it, and each tab's link parameters."""
    app, demo, declared = built_app = api_docs.build()
    text, found, app = api_docs.generate(built_app)
    from labs.core.serving import tab_bar

    return {"app": app, "demo": demo, "declared": declared, "endpoints": found, "text": text,
            "link_specs": dict(tab_bar.link_specs)}


def test_api_md_is_what_the_generator_writes_now(built):
    assert api_docs.API_MD.read_text() == built["text"], "docs/api.md is out of date: python -m tools.api_docs"


def test_the_app_registers_exactly_the_endpoints_the_labs_declare(built):
    """One list: what the app serves at /gradio_api/info (Gradio builds it from demo.get_api_info()) is what the labs
    declare in labs/<lab>/endpoints.py (and app.py its own), in that order; services offers the same functions by
    name, and docs/api.md lists each under the lab that declares it."""
    from labs.core.work import services

    registered = [name.lstrip("/") for name in built["demo"].get_api_info()["named_endpoints"]]
    declared = [e.name for group in built["declared"].values() for e in group]
    assert len(declared) == len(set(declared)), "two declarations share a name"
    assert registered == declared
    assert list(built["declared"])[:-1] == [lab.ID for lab in built["app"].LABS]  # every lab's, then the app's
    by_name = {e.name: e for group in built["declared"].values() for e in group}
    assert services.offered() == sorted(declared)
    assert all(services.get(name) is by_name[name].fn for name in declared)
    lab_of = {e.name: lab for lab, group in built["declared"].items() for e in group}
    assert [(e.name, e.lab, e.description) for e in built["endpoints"]] == [
        (name, lab_of[name], by_name[name].description.strip()) for name in declared]


def test_every_endpoint_has_a_description_and_its_section(built):
    api_md = api_docs.API_MD.read_text()
    assert len(built["endpoints"]) >= 50  # every public endpoint the app registered, read from its Blocks
    for endpoint in built["endpoints"]:
        assert f"### `/{endpoint.name}`" in api_md, endpoint.name
    slugs = [slug(h) for h in headings(api_md)]
    assert len(slugs) == len(set(slugs)), "two headings share an anchor: a link to an endpoint would miss it"
    undescribed = [e.name for e in built["endpoints"] if not e.description]
    assert not undescribed, f"endpoints without a description (their Endpoint's description): {undescribed}"
    fill_mask = next(e for e in built["endpoints"] if e.name == "fill_mask")  # the signature, read from the app
    assert [p.name for p in fill_mask.parameters] == ["text", "model", "top_k"] and fill_mask.lab == "fill_mask"


def test_the_hand_kept_notes_and_examples_name_real_endpoints(built):
    names = {e.name for e in built["endpoints"]}
    notes = api_docs.read_notes(api_docs.NOTES.read_text())
    assert set(notes) <= names, f"notes for endpoints that no longer exist: {sorted(set(notes) - names)}"
    assert all(note.get("Returns") for note in notes.values())
    for endpoint in built["endpoints"]:  # a note's inputs start with the parameters, in order: a rename shows
        parameters = [p.name for p in endpoint.parameters]
        inputs = notes.get(endpoint.name, {}).get("Inputs", "")
        assert inputs.startswith(f"`{', '.join(parameters)}`" if parameters else "none"), (endpoint.name, inputs)
    called = set(re.findall(r'api_name="/(\w+)"', api_docs.EXAMPLES.read_text()))
    assert called and called <= names, sorted(called - names)


def without_code(text: str) -> str:
    """Markdown with its code blocks and code spans blanked (a link in code is no link)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text, lower case, without punctuation, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def headings(text: str) -> list[str]:
    return re.findall(r"^#{1,6} (.+)$", re.sub(r"^```.*?^```", "", text, flags=re.M | re.S), flags=re.M)


def anchors(path: Path) -> set[str]:
    """A page's anchors; a heading met again gets -1, -2, … as on GitHub."""
    found, counts = set(), {}
    for heading in headings(path.read_text()):
        base = slug(heading)
        found.add(f"{base}-{counts[base]}" if base in counts else base)
        counts[base] = counts.get(base, 0) + 1
    return found


def test_the_anchors_are_githubs():
    assert slug("Every tab's link parameters") == "every-tabs-link-parameters"
    assert slug("`/fill_mask`") == "fill_mask"
    assert slug("Cost & scale") == "cost--scale"
    assert slug("Examples with gradio_client") == "examples-with-gradio_client"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_at_something_that_exists(page):
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", without_code(page.read_text())):
        if re.match(r"[a-z]+:", target) or target.startswith("?"):  # the web, or a link inside the app
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"


def tab_examples() -> list[tuple[str, str]]:
    """Every `?tab=…` example in the docs: (page, the query)."""
    found = []
    for page in PAGES:
        for query in re.findall(r"\?(tab=\w[^\s`)\]\"']*)", page.read_text()):
            found.append((str(page.relative_to(ROOT)), query))
    return found


def test_every_tab_example_opens_a_tab_with_parameters_it_reads(built):
    tabs = {lab.ID for lab in built["app"].LABS}
    specs = built["link_specs"]
    examples = tab_examples()
    assert len(examples) >= 20
    for page, query in examples:
        params = dict(part.partition("=")[::2] for part in query.split("&"))
        tab = params.pop("tab")
        assert tab in tabs, f"{page}: ?{query} names no tab"
        for name, raw in params.items():
            if name == links.PRESENT_PARAM:
                continue
            assert name in specs.get(tab, {}), f"{page}: ?{query}: {tab} reads no '{name}'"
            value = unquote_plus(raw)
            if value != "…" and not MODEL_PARAMETERS.search(name):
                links.checked(name, value, specs[tab][name])  # raises when the tab would not use it


def listed(text: str, heading: str) -> list[str]:
    """The code spans (or linked code spans) of one section of a page."""
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"`/?([\w]+)`", section)


def test_every_lab_has_its_page_with_its_own_endpoints_and_link_parameters(built):
    app = built["app"]
    assert {p.stem for p in (DOCS / "labs").glob("*.md")} == {lab.ID for lab in app.LABS}
    for lab in app.LABS:
        text = (DOCS / "labs" / f"{lab.ID}.md").read_text()
        assert text.startswith(f"# {lab.TITLE}\n")
        mine = [e.name for e in built["endpoints"] if e.lab == lab.ID]
        assert mine and listed(text, "Endpoints") == mine, lab.ID
        assert listed(text, "Link parameters") == list(built["link_specs"].get(lab.ID, {})), lab.ID


def test_the_lecturers_table_lists_every_tabs_link_parameters(built):
    text = (DOCS / "lecturers.md").read_text()
    rows = re.findall(r"^\| \[[^\]]+\]\(labs/(\w+)\.md\) \| `\?tab=\w+` \| (.+) \|$", text, flags=re.M)
    assert [tab for tab, _ in rows] == [lab.ID for lab in built["app"].LABS]
    for tab, cell in rows:
        assert re.findall(r"`(\w+)`", cell) == list(built["link_specs"].get(tab, {})), tab


def test_the_readme_is_a_short_card_that_links_every_lab_in_the_tab_bars_order(built):
    text = README.read_text()
    body = text.split("\n---\n", 1)[1]
    assert len(text) < README_LIMIT, f"README.md is {len(text):,} characters (at most {README_LIMIT:,})"
    assert "![LM Lab](assets/screenshots/app.png)" in body and "./lab run" in body and "./lab test --quick" in body
    linked = re.findall(r"\]\(docs/labs/(\w+)\.md\)", body)
    assert linked == [lab.ID for lab in built["app"].LABS]
    for group, _, labs in built["app"].GROUPS:
        assert f"| {group} | [{labs[0].TITLE}](docs/labs/{labs[0].ID}.md) |" in body
    docs_linked = set(re.findall(r"\]\((docs/\w+\.md)\)", body))
    assert {str(p.relative_to(ROOT)) for p in DOCS.glob("*.md")} <= docs_linked and "(CONTRIBUTING.md)" in body
    assert SUITE_LINE in body and "tests in" in body.split(SUITE_LINE, 1)[1].split("\n\n", 1)[0]


def test_the_costliest_test_files_in_the_architecture_page_are_the_measured_ones():
    from tools import costliest_tests

    assert costliest_tests.page_with(costliest_tests.table()) == costliest_tests.PAGE.read_text(), \
        "docs/architecture.md is out of date: python -m tools.costliest_tests"


def test_the_architecture_layout_is_generated_from_the_docstrings():
    from tools import architecture_layout

    assert architecture_layout.page_with(architecture_layout.block()) == architecture_layout.PAGE.read_text(), \
        "docs/architecture.md's layout is out of date: python -m tools.architecture_layout"


def test_the_architecture_layout_names_every_module_under_labs():
    """Every .py file under labs/ has its line in the committed layout (a package's __init__.py: its folder's line)."""
    from tools import architecture_layout

    text = architecture_layout.PAGE.read_text()
    layout = text[text.index(architecture_layout.BEGIN):text.index(architecture_layout.END)]
    named = architecture_layout.named_files(layout)
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "labs").rglob("*.py") if "__pycache__" not in p.parts}
    assert not modules - named, f"not in docs/architecture.md's layout (python -m tools.architecture_layout): " \
                                f"{sorted(modules - named)}"


def test_each_lab_is_named_by_its_tab_title_without_a_number():
    """A lab's package docstring opens with the title the app shows for it (tab.py's TITLE), as the layout does."""
    from tools import architecture_layout

    for folder in sorted(p for p in (ROOT / "labs").iterdir() if architecture_layout.lab_title(p)):
        doc = architecture_layout.docstring(folder / "__init__.py")
        assert doc.startswith(f"{architecture_layout.lab_title(folder)}: "), f"{folder.name}: {doc[:60]!r}"
        assert not re.search(r"\b[Ll]ab \d", doc), f"{folder.name} numbers its lab: {doc[:60]!r}"
