"""Every lab's page on the desktop (1280×900), drawn once for all of its checks: axe-core's audit (tests/walks.py),
then the keyboard alone (Tab, Shift+Tab, Enter, Space): every lab's input, run button and result are reached with
keys, with a handful of stops at most between the run button and its result; an API JSON box costs one stop
until it is opened. And: "Skip to the lab" is the page's first tab stop and lands in the open lab; the focus ring
is visible (3:1 against the page)."""

from __future__ import annotations

import pytest
from walks import (
    DESKTOP,
    LABS,
    PAGES,
    TABBABLE_JS,
    assert_accessible,
    json_box_stops,
    keyboard_walk,
    lab_page,
    open_lab,
)

from labs.core.ui import theme

HANDFUL = 5  # tab stops from a run button to its result, at most


@pytest.fixture
def desk(browser):
    context = browser.new_context(**DESKTOP)
    yield context.new_page()
    context.close()


@pytest.mark.parametrize("lab", PAGES, ids=[lab.id for lab in PAGES])
def test_every_lab_on_the_desktop_is_accessible_and_runs_from_the_keyboard_alone(browser, app_server, tiny_models,
                                                                                  lab):
    # Fine-tune trains for real when its button is pressed: on the tiny model, so that the walk stays short.
    query = f"&model={tiny_models['masked']}" if lab.id == "finetune" else ""
    with lab_page(browser, app_server["url"], lab, DESKTOP, query) as desk:
        assert_accessible(desk, lab)  # first: the keyboard walk runs the lab
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


def test_a_json_box_is_one_tab_stop_until_it_is_opened_with_the_keyboard(desk, app_server):
    open_lab(desk, app_server["url"], LABS[0])  # Tokens: its tokenizers' JSON
    fold = desk.locator(".lab-result-json:visible").first
    header = fold.get_by_role("button").first
    assert desk.evaluate(f"(e) => ({TABBABLE_JS})(e).length", fold.element_handle()) == 1
    header.focus()
    desk.keyboard.press("Enter")
    fold.locator(".json-node, [data-testid=json]").first.wait_for()
    assert desk.evaluate(f"(e) => ({TABBABLE_JS})(e).length", fold.element_handle()) > 10  # the tree, once asked for


def test_skip_to_the_lab_is_the_first_tab_stop_and_lands_in_the_open_lab(desk, app_server):
    open_lab(desk, app_server["url"], next(lab for lab in LABS if lab.id == "masks"))
    desk.keyboard.press("Tab")
    assert desk.evaluate("() => document.activeElement.id") == "lab-skip"
    assert desk.locator("#lab-skip").bounding_box()["y"] >= 0  # shown once it has the focus
    desk.keyboard.press("Enter")
    desk.keyboard.press("Tab")
    where = desk.evaluate("() => { const p = document.activeElement.closest('[role=tabpanel]');"
                          " return p && p.querySelector('.lab-explainer') ? 'lab' : document.activeElement.tagName; }")
    assert where == "lab"


def _hex(rgb: str) -> str:
    r, g, b = (int(v) for v in rgb[rgb.index("(") + 1:rgb.index(")")].split(",")[:3])
    return f"#{r:02x}{g:02x}{b:02x}"


@pytest.fixture(scope="module")
def tokens_desk(browser, app_server):
    """One desktop page on Tokens for the checks that only move the focus (they change nothing on it)."""
    with lab_page(browser, app_server["url"], LABS[0], DESKTOP) as page:
        yield page


@pytest.mark.parametrize("selector", ["button.primary", "textarea", "button[role=tab]", ".lab-result-json button"])
def test_the_focus_ring_is_visible_on_every_kind_of_control(tokens_desk, selector):
    desk = tokens_desk
    target = desk.locator(selector).locator("visible=true").first
    target.focus()
    desk.keyboard.press("Shift+Tab")
    desk.keyboard.press("Tab")  # focus from the keyboard: :focus-visible
    style = target.evaluate("(e) => { const s = getComputedStyle(e); return [s.outlineStyle, s.outlineWidth,"
                            " s.outlineColor, document.activeElement === e]; }")
    assert style[3], f"{selector} did not take the focus back"
    assert style[0] != "none" and float(style[1].rstrip("px")) >= 2, style
    assert theme.contrast(_hex(style[2]), "#ffffff") >= 3, style
