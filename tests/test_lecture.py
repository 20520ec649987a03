"""Lecture workflow: a link opens a tab with its inputs and draws the result; bad links fall back to
the defaults with a note; "Copy link" writes the link; presenter view keeps each tab's main result on
the first screen at 1280×720."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse

import pytest
from conftest import open_root, open_tab

from labs.core.ui import links

SPECS = {"next_token": {"prompt": links.Spec("text", max_chars=20), "model": links.Spec("choice", choices=("gpt2",)),
                        "temperature": links.Spec("number", low=0, high=2),
                        "top_k": links.Spec("number", low=0, high=100, integer=True)}}


def test_a_link_is_read_back_as_it_was_written():
    q = links.query("next_token", {"prompt": "Once <b>", "model": "gpt2", "temperature": 0.5, "top_k": 5})
    params = {k: v[0] for k, v in parse_qs(urlparse(q).query).items()}
    tab, values, notes = links.read(params, ["next_token"], SPECS)
    assert tab == "next_token" and notes == []
    assert values == {("next_token", "prompt"): "Once <b>", ("next_token", "model"): "gpt2",
                      ("next_token", "temperature"): 0.5, ("next_token", "top_k"): 5}


@pytest.mark.parametrize("param, value, note", [
    ("model", "<script>x</script>", "is not offered here"),
    ("temperature", "nan", "between 0 and 2"),
    ("temperature", "9", "between 0 and 2"),
    ("temperature", "warm", "not a number"),
    ("top_k", "2.5", "whole number"),
    ("prompt", "x" * 21, "characters long"),
])
def test_a_bad_value_is_left_out_with_a_note(param, value, note):
    tab, values, notes = links.read({"tab": "next_token", param: value, "unknown": "ignored"}, ["next_token"], SPECS)
    assert tab == "next_token" and (tab, param) not in values
    assert len(notes) == 1 and note in notes[0] and "default" in notes[0]


def test_an_unknown_tab_opens_the_first_tab_with_a_note():
    tab, values, notes = links.read({"tab": "nope"}, ["next_token"], SPECS)
    assert (tab, values) == (None, {}) and len(notes) == 1 and "does not have" in notes[0]
    assert links.read({}, ["next_token"], SPECS) == (None, {}, [])


def open_link(page, app_server, **params):
    page.goto(app_server["url"] + "?" + urlencode(params), wait_until="load")


@pytest.mark.parametrize("params, field, result, shown", [
    ({"tab": "tokens", "text": "Seven geese fly north"}, "Your text", "table:visible, .lab-token-row", "geese"),
    ({"tab": "fill_mask", "text": "The [MASK] ran home.", "model": "{m}", "top_k": "3"},
     "Your sentence (write [MASK] or ___ for a blank)", ".js-plotly-plot", ""),
    # The chart's title names the prompt's last token: the tiny GPT-2's last piece of "fly" ("Next token after “…y”").
    ({"tab": "next_token", "prompt": "Seven geese fly", "model": "{c}", "temperature": "0.5"}, "Prompt",
     "#nt-chart .js-plotly-plot", "…y”"),
    ({"tab": "masks", "text": "Seven geese fly north", "encoder": "{m}", "causal": "{c}"}, "Your sentence",
     ".js-plotly-plot", "geese"),
    ({"tab": "attention", "text": "Linked bank sentence", "text_b": "", "model": "{m}", "layer": "1", "head": "1"},
     "Sentence A", ".js-plotly-plot", ""),
    ({"tab": "embeddings", "sentences": "A linked bank.\nThe river bank.", "word": "bank", "model": "{m}",
      "layer": "1"}, "Sentences that share a word (one per line; optional | sense)", ".js-plotly-plot", ""),
])
def test_a_link_opens_its_tab_fills_the_inputs_and_draws_the_result(page, app_server, tiny_models, params, field,
                                                                       result, shown):
    """Tokens is the first group's first tab: it sends its select as the page opens, whatever the link names; a
    linked tab sends its own when the link selects it (Masks in the same group, Next token in another). Each reads
    the link itself, so the result on screen is the link's text's, not the default's (labs/core/serving/tab_bar.py)."""
    params = {k: v.format(m=tiny_models["masked"], c=tiny_models["causal"]) for k, v in params.items()}
    open_link(page, app_server, **params)
    text = next(v for k, v in params.items() if k in ("text", "prompt", "sentences"))
    box = page.get_by_label(field, exact=True).locator("visible=true")
    page.wait_for_function("([sel, want]) => [...document.querySelectorAll(sel)].some(e => e.value === want)",
                           arg=["textarea, input", text], timeout=30000)
    assert box.first.input_value() == text
    assert page.locator(f"button[role=tab][data-tab-id='{params['tab']}']").get_attribute("aria-selected") == "true"
    drawn = page.locator(result).locator("visible=true")
    (drawn.filter(has_text=shown) if shown else drawn).first.wait_for(timeout=60000)


def test_a_hostile_link_runs_nothing_and_falls_back_with_a_note(page, app_server, tiny_models):
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    open_link(page, app_server, tab="fill_mask", text="<img src=x onerror=alert(1)> The [MASK] sat.",
              model="<img src=x onerror=alert(2)>", top_k="abc")
    page.get_by_text("is not offered here").wait_for(timeout=30000)
    page.get_by_text("was not used (the top_k").wait_for()
    page.locator(".js-plotly-plot:visible").first.wait_for(timeout=60000)
    assert dialogs == [] and page.locator("img[src=x]").count() == 0


def test_copy_link_gives_a_link_that_opens_the_same_example(page, app_server, tiny_models):
    open_tab(page, "Next token")
    page.get_by_label("Prompt", exact=True).fill("A copied prompt")
    page.get_by_role("button", name="Copy a link to this example").locator("visible=true").first.click()
    box = page.get_by_placeholder("A link that opens this tab").locator("visible=true").first
    page.wait_for_function("() => [...document.querySelectorAll('textarea, input')].some("
                           "e => e.value.startsWith('http') && e.value.includes('A+copied+prompt'))", timeout=30000)
    url = box.input_value()
    assert parse_qs(urlparse(url).query)["tab"] == ["next_token"]
    page.goto(url, wait_until="load")
    page.wait_for_function("() => [...document.querySelectorAll('textarea')].some(e => e.value === 'A copied prompt')",
                           timeout=30000)


def test_results_download_as_json_csv_png_and_svg(page, tiny_models):
    open_tab(page, "Fill in the blank")
    chart = page.locator(".js-plotly-plot:visible").first
    chart.wait_for(timeout=60000)
    page.locator(".lab-result-json:visible").first.get_by_text("Result (as the API returns it)").click()  # unfold
    with page.expect_download() as caught:
        page.locator("button:visible", has_text="⬇ JSON").first.click()
    result = json.loads(Path(caught.value.path()).read_text())
    assert result["masks"][0]["predictions"] and result["tokens"][0] == "[CLS]"
    chart.hover()
    with page.expect_download() as caught:
        chart.locator("[data-title='Download plot as SVG']").click()
    assert Path(caught.value.path()).read_text().lstrip().startswith("<svg")
    with page.expect_download() as caught:
        chart.locator("[data-title='Download plot as a PNG']").click()
    assert Path(caught.value.path()).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    open_tab(page, "Tokens")
    page.get_by_text("The corpus now", exact=True).wait_for(timeout=60000)
    with page.expect_download() as caught:  # the first table on the tab is the BPE corpus
        page.locator("button:visible", has_text="⬇ CSV").first.click()
    rows = Path(caught.value.path()).read_text().splitlines()
    assert rows[0] == "word,count,symbols now" and rows[1] == "low,5,l o w </w>"


def test_the_status_line_says_when_it_runs_on_a_space(monkeypatch):
    from labs.core.ui import status

    monkeypatch.setenv("SPACE_ID", "a-course/lm-lab")
    assert status.status_line().startswith("Running on the Hugging Face Space a-course/lm-lab · Device:")
    monkeypatch.delenv("SPACE_ID")
    assert status.status_line().startswith("Device:")


def test_the_header_toggle_switches_presenter_view_and_keeps_it_in_the_url(page):
    open_root(page)
    page.get_by_role("button", name="Presenter view").click()
    page.wait_for_function("() => document.body.classList.contains('lab-present')")
    assert "present=1" in page.url and not page.locator(".lab-explainer").first.is_visible()
    page.get_by_role("button", name="Presenter view").click()
    page.wait_for_function("() => !document.body.classList.contains('lab-present')")
    assert "present" not in page.url


def test_a_fine_tune_link_sets_the_strategy_and_settings_without_starting_a_run(page, app_server, tiny_models):
    open_link(page, app_server, tab="finetune", model=tiny_models["masked"], strategy="lora", n="8",
              learning_rate="0.001", epochs="2")
    page.get_by_text("lora_r8").wait_for(timeout=60000)  # "Trainable: … with lora_r8 on tiny-bert-mlm"
    assert page.locator("button[role=tab][data-tab-id='finetune']").get_attribute("aria-selected") == "true"
    assert page.get_by_label("Learning rate", exact=True).input_value() == "0.001"
    line = page.locator("p:visible", has_text="Trainable:").first.inner_text()
    assert line.endswith(f"with lora_r8 on {tiny_models['masked']}."), line
    assert page.get_by_text("Stopped.").count() == 0 and page.get_by_text(re.compile(r"step \d+ of")).count() == 0
