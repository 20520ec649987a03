"""A student's phone (390×844, touch, Chromium's mobile mode): every lab opened by its link, drawn once for all of
its checks, passes axe-core's audit (tests/walks.py), fits the width, shows every tab name whole, and has its
default example's main result within the first two screens; the status line and the explainer fold behind buttons
(the desktop keeps them open: tests/test_keyboard.py). The screenshots (the first two screens of every lab) go to
tests/screenshots/phone-<lab>.png; assets/screenshots/phone/ holds a set."""

from __future__ import annotations

import pytest
from conftest import SCREENSHOTS
from walks import CLASS, LABS, PAGES, PHONE, KeptPages, assert_accessible, phone_figures

SCREEN = PHONE["viewport"]["height"]


@pytest.fixture(scope="module")
def phone_pages(browser, app_server):
    """The walk keeps Tokens' and Attention's phone pages for the checks below (the folds; bertviz's note)."""
    pages = KeptPages(browser, app_server["url"], PHONE)
    yield pages
    pages.close()


KEPT = ("tokens", "attention")


@pytest.mark.parametrize("lab", PAGES, ids=[lab.id for lab in PAGES])
def test_every_lab_on_a_phone_is_accessible_and_fits_with_its_main_result_in_two_screens(phone_pages, lab):
    with phone_pages.walk(lab, keep=lab.id in KEPT) as phone:
        assert_accessible(phone, lab)
        if lab is CLASS:  # the class's phone pages: tests/test_classroom_browser.py
            return
        figures = phone_figures(phone, lab)
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        phone.screenshot(path=str(SCREENSHOTS / f"phone-{lab.id}.png"), full_page=True,
                         clip={"x": 0, "y": 0, "width": 390, "height": 2 * SCREEN})
        assert figures["overflow"] <= 0, f"{lab.title} scrolls sideways by {figures['overflow']} px"
        assert figures["cut"] == [] and figures["behind_menu"] == [], figures
        main = phone.locator(lab.result).locator("visible=true").first.bounding_box()
        top = main["y"] + phone.evaluate("() => scrollY")
        # At least its first 100 px (a chart's title and top, a result's first lines) on the second screen.
        assert top + min(main["height"], 100) <= 2 * SCREEN, f"{lab.title}'s main result starts at {top:.0f} px"
        widths = phone.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')].filter(e => e.offsetParent)"
                                ".map(e => e.getBoundingClientRect().right)")
        assert all(right <= 390 for right in widths), widths


def test_the_header_status_and_explainer_fold_on_a_phone_and_open_on_a_button(phone_pages):
    phone = phone_pages.page(LABS[0])
    title, toggle = phone.locator("#lab-header h1"), phone.get_by_role("button", name="Presenter view")
    assert abs(title.bounding_box()["y"] + title.bounding_box()["height"] / 2
               - toggle.bounding_box()["y"] - toggle.bounding_box()["height"] / 2) < 24  # one line
    explainer = phone.locator(".lab-explainer:visible").first
    # Gradio 6 gives a Markdown's classes to its block and to its text: the first .prose is the text.
    assert not explainer.locator(".prose").first.is_visible()
    button = explainer.get_by_role("button", name="What is this?")
    assert button.get_attribute("aria-expanded") == "false"
    button.click()
    assert button.get_attribute("aria-expanded") == "true" and explainer.locator(".prose").first.is_visible()
    status = phone.get_by_role("button", name="Device and models")
    assert not phone.locator("#lab-status .prose").first.is_visible()
    status.click()
    phone.locator("#lab-status .prose").first.wait_for()
    assert "Device:" in phone.locator("#lab-status .prose").first.inner_text()


def test_bertviz_gives_way_to_the_heatmaps_on_a_phone_with_a_note(phone_pages):
    phone = phone_pages.page(next(lab for lab in LABS if lab.id == "attention"))
    assert phone.locator("iframe.lab-bertviz:visible").count() == 0
    note = phone.locator(".lab-phone-note:visible")
    assert note.count() >= 1 and "the heatmaps below show the same attention weights" in note.first.inner_text()
    assert phone.locator(".js-plotly-plot:visible").count() >= 2
