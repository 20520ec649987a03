"""Every lab's page on a projector and on the desktop, drawn once for both views' checks. It opens in presenter
view (?present=1, 1280×720) as a lecturer's slide link opens it: axe-core's audit (tests/walks.py), the lab's main
result on the projector's first screen, the explainer and the API box hidden. The header's toggle then turns
presenter view off, as a lecturer does, on a desktop screen (1400×900): axe's audit again, then the keyboard alone
(Tab, Shift+Tab, Enter, Space): every lab's input, run button and result are reached with keys, with a handful of
stops at most between the run button and its result; an API JSON box costs one stop until it is opened. And:
"Skip to the lab" is the page's first tab stop and lands in the open lab; the focus ring is visible (3:1 against
the page); the explainer and the status line stay open (a phone folds them)."""

from __future__ import annotations

import re

import pytest
from conftest import screenshot
from walks import (
    DESKTOP,
    LABS,
    PAGES,
    PRESENTER,
    TABBABLE_JS,
    KeptPages,
    assert_accessible,
    json_box_stops,
    keyboard_walk,
    settle,
)

from labs.core.ui import theme

HANDFUL = 5  # tab stops from a run button to its result, at most
# Each lab's main result in presenter view, where it must start on the projector's first screen.
PRESENTER_RESULTS = {"Tokens": ".lab-token-row", "Fill in the blank": ".js-plotly-plot",
                     "Next token": "#nt-chart .js-plotly-plot", "Masks": ".js-plotly-plot",
                     "Attention": "iframe", "Embeddings": ".js-plotly-plot", "Fine-tune": "#ft-run"}
FIRST_SCREEN = PRESENTER["viewport"]["height"]


@pytest.fixture(scope="module")
def desktop_pages(browser, app_server):
    """The walk keeps Tokens' desktop page for the checks below that only move the focus or open a fold."""
    pages = KeptPages(browser, app_server["url"], DESKTOP)
    yield pages
    pages.close()


KEPT = ("tokens",)


def assert_presented(page, lab) -> None:
    """Presenter view's checks: axe, and the main result on the first screen with the explainer and API box hidden."""
    page.wait_for_function("() => document.body.classList.contains('lab-present')")
    assert_accessible(page, lab)
    if lab.title in PRESENTER_RESULTS:
        main = page.locator(PRESENTER_RESULTS[lab.title]).locator("visible=true").first
        main.wait_for(timeout=60000)
        screenshot(page, "presenter-" + re.sub(r"[^a-z0-9]+", "-", lab.title.lower()).strip("-"))
        box = main.bounding_box()
        assert box["y"] >= 0 and box["y"] + min(box["height"], 200) <= FIRST_SCREEN, (lab.title, box)
        assert page.locator(".lab-explainer:visible, .lab-result-json:visible").count() == 0


def leave_presenter_view(page) -> None:
    """The header's toggle, as a lecturer turns presenter view off at a desk; the page then has the desktop's size."""
    page.get_by_role("button", name="Presenter view").click()
    page.wait_for_function("() => !document.body.classList.contains('lab-present')"
                           " && !new URLSearchParams(location.search).has('present')")
    page.set_viewport_size(DESKTOP["viewport"])
    page.locator(".lab-explainer:visible").first.wait_for()
    settle(page)  # plotly redraws its charts at the new size


def assert_skip_link_lands_in_the_lab(desk) -> None:
    """"Skip to the lab" is the page's first tab stop, shown once it has the focus, and lands in the open lab."""
    # The keys start from the top of the page again, as on a page just opened: the focus (on the header's toggle)
    # moves to a mark before everything, which then goes.
    desk.evaluate("() => { const mark = document.createElement('span'); mark.tabIndex = -1;"
                  " document.body.prepend(mark); mark.focus(); mark.remove(); window.scrollTo(0, 0); }")
    desk.keyboard.press("Tab")
    assert desk.evaluate("() => document.activeElement.id") == "lab-skip"
    assert desk.locator("#lab-skip").bounding_box()["y"] >= 0  # shown once it has the focus
    desk.keyboard.press("Enter")
    desk.keyboard.press("Tab")
    where = desk.evaluate("() => { const p = document.activeElement.closest('[role=tabpanel]');"
                          " return p && p.querySelector('.lab-explainer') ? 'lab' : document.activeElement.tagName; }")
    assert where == "lab"


@pytest.mark.parametrize("lab", PAGES, ids=[lab.id for lab in PAGES])
def test_every_lab_in_presenter_view_then_on_the_desktop_is_accessible_and_runs_from_the_keyboard_alone(
        desktop_pages, tiny_models, lab):
    # Fine-tune trains for real when its button is pressed: on the tiny model, so that the walk stays short.
    query = f"&model={tiny_models['masked']}" if lab.id == "finetune" else ""
    with desktop_pages.walk(lab, query + "&present=1", view=PRESENTER, keep=lab.id in KEPT) as desk:
        assert_presented(desk, lab)
        leave_presenter_view(desk)
        assert_accessible(desk, lab)  # before the keyboard walk runs the lab
        if lab.id == "masks":  # one lab's page is enough for the page's own first stop
            assert_skip_link_lands_in_the_lab(desk)
        if not lab.run:
            return
        assert all(stops <= 1 for stops in json_box_stops(desk)), json_box_stops(desk)
        walk = keyboard_walk(desk, lab)
        assert walk.get("to_input") and walk.get("to_run") is not None, walk
        assert walk.get("to_result") is not None and walk["to_result"] <= HANDFUL, walk
        # And back: Shift+Tab returns to the run button the way it came.
        for _ in range(walk["to_result"]):
            desk.keyboard.press("Shift+Tab")
        assert desk.evaluate("() => document.activeElement.innerText.trim()") == lab.run


def _hex(rgb: str) -> str:
    r, g, b = (int(v) for v in rgb[rgb.index("(") + 1:rgb.index(")")].split(",")[:3])
    return f"#{r:02x}{g:02x}{b:02x}"


@pytest.mark.parametrize("selector", ["button.primary", "textarea", "button[role=tab]", ".lab-result-json button"])
def test_the_focus_ring_is_visible_on_every_kind_of_control(desktop_pages, selector):
    desk = desktop_pages.page(LABS[0])  # Tokens
    target = desk.locator(selector).locator("visible=true").first
    target.focus()
    desk.keyboard.press("Shift+Tab")
    desk.keyboard.press("Tab")  # focus from the keyboard: :focus-visible
    style = target.evaluate("(e) => { const s = getComputedStyle(e); return [s.outlineStyle, s.outlineWidth,"
                            " s.outlineColor, document.activeElement === e]; }")
    assert style[3], f"{selector} did not take the focus back"
    assert style[0] != "none" and float(style[1].rstrip("px")) >= 2, style
    assert theme.contrast(_hex(style[2]), "#ffffff") >= 3, style


def test_the_desktop_keeps_the_explainer_and_status_open_without_fold_buttons(desktop_pages):
    desk = desktop_pages.page(LABS[0])  # Tokens, the front page's tab (the phone folds them: tests/test_phone.py)
    assert desk.locator(".lab-explainer .prose").first.is_visible()
    desk.locator("#lab-status .prose").first.wait_for()
    assert desk.locator(".lab-fold-toggle:visible").count() == 0
    assert desk.locator(".lab-phone-note:visible").count() == 0


def test_a_json_box_is_one_tab_stop_until_it_is_opened_with_the_keyboard(desktop_pages):
    desk = desktop_pages.page(LABS[0])  # Tokens: its tokenizers' JSON
    fold = desk.locator(".lab-result-json:visible").first
    header = fold.get_by_role("button").first
    assert desk.evaluate(f"(e) => ({TABBABLE_JS})(e).length", fold.element_handle()) == 1
    header.focus()
    desk.keyboard.press("Enter")
    fold.locator(".json-node, [data-testid=json]").first.wait_for()
    assert desk.evaluate(f"(e) => ({TABBABLE_JS})(e).length", fold.element_handle()) > 10  # the tree, once asked for
