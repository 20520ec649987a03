"""The app shell as a user and a script see it: the page, the tabs, the status line, the models API."""

from __future__ import annotations

from conftest import screenshot

from labs import models

TAB_TITLES = ["Fill in the blank", "Next token", "Masks", "Attention", "Fine-tune"]


def test_page_answers_quickly(app_server):
    # Generous bound for a noisy machine; the measured figure goes in the closing note.
    assert app_server["startup_seconds"] < 30


def test_models_endpoint_lists_the_offline_models(client, tiny_models):
    described = client.predict(api_name="/models")
    names = {m["name"]: m for m in described["models"]}
    assert described["online"] is False
    assert names[models.SMOLLM2_NAME]["family"] == "causal"
    assert names[tiny_models["masked"]]["source"] == "local"


def test_five_tabs_in_order_and_the_status_line_says_offline(page):
    tabs = page.get_by_role("tab")
    titles = [t.inner_text().strip() for t in tabs.all()]
    assert titles[:5] == TAB_TITLES
    status = page.locator("#lab-status")
    status.get_by_text("offline").wait_for(timeout=20000)
    for title in TAB_TITLES:
        page.get_by_role("tab", name=title).click()
        page.wait_for_timeout(300)
        screenshot(page, f"tab-{title.lower().replace(' ', '-')}")
    assert page.outside_requests == []
