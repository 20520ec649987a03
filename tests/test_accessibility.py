"""Accessibility (WCAG 2.1 A and AA) and the projector. axe-core, through axe-playwright-python, audits every
lab's page once its first result is drawn, in each view's walk: the desktop (tests/test_keyboard.py), the phone
(tests/test_phone.py) and, here, presenter view on a 1280×720 projector, where each lab's main result must also
be on the first screen with the explainer and the API box hidden. The rules, the allow-list of Gradio's own
markup and the chart-text-alternative rule are in tests/walks.py ("axe-core")."""

from __future__ import annotations

import re

import pytest
from conftest import screenshot
from walks import PAGES, PRESENTER, assert_accessible, lab_page

# Each lab's main result in presenter view, where it must start on the projector's first screen.
PRESENTER_RESULTS = {"Tokens": ".lab-token-row", "Fill in the blank": ".js-plotly-plot",
                     "Next token": "#nt-chart .js-plotly-plot", "Masks": ".js-plotly-plot",
                     "Attention": "iframe", "Embeddings": ".js-plotly-plot", "Fine-tune": "#ft-run"}
FIRST_SCREEN = PRESENTER["viewport"]["height"]


@pytest.mark.parametrize("lab", PAGES, ids=[lab.id for lab in PAGES])
def test_every_lab_in_presenter_view_is_accessible_with_its_main_result_on_the_first_screen(browser, app_server,
                                                                                            lab):
    with lab_page(browser, app_server["url"], lab, PRESENTER, "&present=1") as page:
        page.wait_for_function("() => document.body.classList.contains('lab-present')")
        assert_accessible(page, lab)
        if lab.title in PRESENTER_RESULTS:
            main = page.locator(PRESENTER_RESULTS[lab.title]).locator("visible=true").first
            main.wait_for(timeout=60000)
            screenshot(page, "presenter-" + re.sub(r"[^a-z0-9]+", "-", lab.title.lower()).strip("-"))
            box = main.bounding_box()
            assert box["y"] >= 0 and box["y"] + min(box["height"], 200) <= FIRST_SCREEN, (lab.title, box)
            assert page.locator(".lab-explainer:visible, .lab-result-json:visible").count() == 0


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
