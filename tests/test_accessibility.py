"""Accessibility (WCAG 2.1 A and AA): axe-core, through axe-playwright-python, on every tab after its
first result is drawn, in the normal view, in presenter view and on a phone (390×844). No serious or critical
violation is allowed, except those listed in GRADIO_ALLOWED: they come from Gradio's own markup and cannot be
fixed from the app (docs/accessibility.md, "Known issues", names them with the Gradio version).

axe does not check that a chart has a text alternative (WCAG 1.1.1); this test does, as a rule of its own,
"chart-text-alternative": every visible plotly chart is a figure with a name, a summary it is described by and
a "Show as table" control with its numbers (labs/core/ui/figure_text.py).

The allow-list is explicit: a rule id and a regular expression that every offending node's CSS
selector must match. A violation of that rule anywhere else still fails, and so does a new rule."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from conftest import tab_groups
from walks import DESKTOP, PHONE, charts

# What each tab draws first (from each lab's own browser test): audited once it is on screen.
FIRST_RESULT = {
    "Tokens": ".lab-token-row",
    "Fill in the blank": ".js-plotly-plot",
    "Next token": "#nt-chart .js-plotly-plot",
    "Masks": ".js-plotly-plot",
    "Attention": ".js-plotly-plot",
    "Embeddings": ".js-plotly-plot",
    "Pre-training": "text=Training signal:",
    "Choosing a model": "text=What this shows, and what it does not",
    "Fine-tune": "text=Trainable:",
    "Cost & scale": ".js-plotly-plot:visible >> nth=3",  # compute, devices, memory, scaling
    "Part A & B workbook": "#lab-part-b-card h3",
    "Ask the class": "text=Lecturer: start a class",
}
AXE_OPTIONS = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]},
               "resultTypes": ["violations"]}
SEVERE = ("serious", "critical")

# (rule id, pattern the offending node must match, why). The pattern is searched in the node's CSS
# selector followed by its opening HTML (axe's `target` and `html`), since axe's selector for Gradio's
# nodes is sometimes just ".large".
GRADIO_ALLOWED: list[tuple[str, str, str]] = [
    ("aria-prohibited-attr", r'<div aria-label="Empty value" class="empty svelte-',
     "Gradio 6.31.0's Empty placeholder (an output with no value yet: an Image, Label, JSON, Plot) is a "
     "<div aria-label=\"Empty value\"> with no role; the attribute is Gradio's (@gradio/atoms Empty.svelte)."),
    ("aria-required-children", r'<div role="grid" class="table-wrap svelte-',
     "Gradio 6.31.0's Dataframe is a virtual table: a grid whose rows are drawn only while it is on screen, so a "
     "table below the fold of a phone's screen is a grid without rows (@gradio/dataframe)."),
]
# Serious violations from a lab's own markup, in a file this test's owner does not edit: each names
# the fix. Remove the entry once the lab is fixed (the test then keeps it fixed).
LAB_PENDING: list[tuple[str, str, str]] = []  # a lab's own finding waiting for its fix: none now


def allowed(rule: str, node: str) -> bool:
    return any(rule == r and re.search(pattern, node) for r, pattern, _ in GRADIO_ALLOWED + LAB_PENDING)


def audit(page) -> list[tuple[str, str, str]]:
    """Serious and critical violations on the page as it is now: (rule, impact, selector + HTML) per node."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page, options=AXE_OPTIONS).response
    found = [(v["id"], v["impact"], " ".join(map(str, node["target"])) + " " + node["html"][:200])
             for v in results["violations"] if v["impact"] in SEVERE for node in v["nodes"]]
    return found + [("chart-text-alternative", "serious", f"{c['name'] or 'a chart'}: {c}") for c in charts(page)
                    if not (c["role"] == "figure" and c["name"] and c["summary"] and c["control"] == "Show as table"
                            and len(c["rows"]) > 1)]


def wait_for_first_result(page, title: str) -> None:
    selector = FIRST_RESULT[title]
    page.locator(selector).locator("visible=true").first.wait_for(timeout=90000)
    # Let the other outputs of the tab's first run land and plotly finish drawing.
    page.wait_for_function("() => !document.querySelector('.progress-text, .eta-bar')", timeout=60000)
    page.wait_for_timeout(500)


def audit_every_tab(page, url: str, query: str = "", screenshots: str | None = None,
                    strict: bool = True) -> dict[str, list]:
    """Open the app (with `query`), then each tab in turn: {tab title: its serious violations}."""
    page.goto(url + query, wait_until="load")
    page.get_by_role("tab").first.wait_for(timeout=30000)
    found = {}
    titles = [(group, title) for group, labs in tab_groups() for title in labs]
    for group, title in titles:
        page.get_by_role("tab", name=group, exact=True).dispatch_event("click")
        page.get_by_role("tab", name=title, exact=True).dispatch_event("click")
        if title in FIRST_RESULT:
            try:
                wait_for_first_result(page, title)
            except Exception:
                if strict:
                    raise
                print(f"{title}: first result not seen, audited as it is", flush=True)
        found[title] = audit(page)
        if screenshots:
            name = re.sub(r"[^a-z0-9]+", "_", title.lower()).strip("_")
            page.screenshot(path=screenshots.format(name=name), full_page=True)
    return found


def summary(found: dict[str, list]) -> str:
    lines = []
    for title, violations in found.items():
        counts = Counter(rule for rule, _, _ in violations)
        lines.append(f"{title}: {sum(counts.values())} " + ", ".join(f"{r}={n}" for r, n in counts.most_common()))
    return "\n".join(lines)


def unexpected(found: dict[str, list]) -> dict[str, list]:
    return {title: bad for title, violations in found.items()
            if (bad := [v for v in violations if not allowed(v[0], v[2])])}


@pytest.mark.parametrize("query, view", [("", DESKTOP), ("?present=1", DESKTOP), ("", PHONE)],
                         ids=["normal", "presenter", "phone"])
def test_no_serious_violation_on_any_tab(browser, app_server, query, view):
    context = browser.new_context(**view)
    page = context.new_page()
    try:
        found = audit_every_tab(page, app_server["url"], query)
    finally:
        context.close()
    assert set(FIRST_RESULT) <= set(found), f"tabs not audited: {set(FIRST_RESULT) - set(found)}"
    assert unexpected(found) == {}, summary(found)


def test_the_theme_reaches_aa_contrast():
    """The colours the theme sets, checked with WCAG's formula (axe checks what it sees on the page)."""
    from labs.core.ui import theme

    for name, (fg, bg, needed) in theme.CONTRAST_PAIRS.items():
        assert theme.contrast(fg, bg) >= needed, (name, fg, bg, theme.contrast(fg, bg))


def test_every_chart_helper_gives_a_title():
    from labs.core.ui import plots

    fig = plots.bar_chart(["a", "b"], [0.6, 0.4])
    assert fig.layout.title.text, "bar_chart needs a title that says what it shows"
    fig = plots.heatmap([[1, 0], [0.5, 0.5]], ["a", "b"])
    assert fig.layout.title.text
    fig = plots.bars_side_by_side([("one", ["a"], [1.0]), ("two", ["b"], [0.5])])
    assert fig.layout.title.text
