"""What a careless or curious student sends to the API: wrongly typed values, huge prompts. Every
one ends in a friendly sentence (never "Something went wrong" or a Gradio internal), quickly, and
never holds up another student's request."""

from __future__ import annotations

import threading
import time

import pytest
from conftest import open_tab, screenshot
from gradio_client.exceptions import AppError

from labs.core.errors import GENERIC_MESSAGE

HUGE = "word " * 20_000  # 100,000 characters

# (endpoint, positional arguments with one bad value) for each value of the item 8.
# {m}, {c}: the tiny masked and causal models.
BAD_CALLS = [  # (endpoint, arguments with one bad value, what the message names)
    ("/next_token", ["The cat", "{c}", 1.0, "nan", 1.0], "Top-k"),
    ("/next_token", ["The cat", "{c}", 1.0, "inf", 1.0], "Top-k"),
    ("/next_token", ["The cat", "{c}", 1.0, "1e999", 1.0], "Top-k"),
    ("/next_token", ["The cat", ["{c}"], 1.0, 5, 1.0], "model must be a name"),
    ("/next_token", ["The cat", {"name": "{c}"}, 1.0, 5, 1.0], "model must be a name"),
    ("/next_token", [12345, "{c}", 1.0, 5, 1.0], "must be text"),
    ("/generate", ["The cat", "{c}", "sample", 5, 1.0, "nan", 1.0, 1, 0], "Top-k"),
    ("/generate", ["The cat", "{c}", "sample", 5, 1.0, "1e999", 1.0, 1, 0], "Top-k"),
    ("/generate", ["The cat", "{c}", "sample", 5, 1.0, 5, 1.0, 1, 10**18], "Seed"),
    ("/generate", ["The cat", "{c}", "sample", 5, 1.0, 5, 1.0, 1, -1], "Seed"),
    ("/generate", ["The cat", "{c}", ["greedy"], 5, 1.0, 5, 1.0, 1, 0], "Strategy"),
    ("/masks", [None, "{m}", "{c}"], "must be text"),
    ("/attention", ["The cat sat", ["{m}"], "", 0, 0], "model must be a name"),
    ("/attention", ["The cat sat", "{m}", 12345, 0, 0], "must be text"),
    ("/attention", ["The cat sat", "{m}", "", "nan", 0], "layer"),
    ("/attention", ["The cat sat", "{m}", "", 0, 10**18], "head"),
    ("/fill_mask", ["The [MASK] sat.", "{m}", None], "Top-k"),
    ("/fill_mask", ["The [MASK] sat.", "{m}", "abc"], "Top-k"),
    ("/fill_mask", ["The [MASK] sat.", "{m}", "1e999"], "Top-k"),
    ("/fill_mask", ["The [MASK] sat.", ["{m}"], 5], "model must be a name"),
    ("/finetune", ["{m}", "full", "nan", 1, 8, 16, 0, False], "earning rate"),
    ("/finetune", ["{m}", "full", 1e-3, 1, 8, 16, 10**18, False], "eed"),
    ("/finetune", ["{m}", "full", 1e-3, 1, 8, 16, 0, "maybe"], "compare_scratch"),
    ("/finetune", [["{m}"], "full", 1e-3, 1, 8, 16, 0, False], "model must be a name"),
    ("/tokenize", ["playing", [1]], "list of model names"),
    ("/tokenize", [["playing"], []], "must be text"),
    ("/bpe", ["low 5", "nan", "lowest"], "merges"),
    ("/bpe", ["low 5", 5, ["lowest"]], "must be text"),
    ("/score", [12345, "{c}"], "must be text"),
    ("/score", ["The cat sat.", ["{c}"]], "model must be a name"),
    ("/logit_lens", ["The cat sat", "{c}", "nan"], "Top-k"),
    ("/beam_tree", ["The cat", "{c}", "1e999", 4], "beams"),
    ("/beam_tree", ["The cat", "{c}", 3, None], "New tokens"),
]


def _fill(value, tiny):
    if isinstance(value, str):
        return value.format(m=tiny["masked"], c=tiny["causal"])
    if isinstance(value, list):
        return [_fill(v, tiny) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, tiny) for k, v in value.items()}
    return value


@pytest.mark.parametrize("endpoint, args, names", BAD_CALLS, ids=[f"{c[0]}-{i}" for i, c in enumerate(BAD_CALLS)])
def test_a_wrongly_typed_value_gets_a_friendly_message(client, tiny_models, endpoint, args, names):
    with pytest.raises(AppError) as caught:
        client.predict(*_fill(args, tiny_models), api_name=endpoint)
    message = str(caught.value)
    assert GENERIC_MESSAGE not in message
    assert "preprocess" not in message and "Traceback" not in message
    assert names in message
    assert len(message) < 300 and message.rstrip().endswith((".", "?", ")")), message


def test_masks_reports_a_wrongly_typed_model_name_on_its_side(client, tiny_models):
    """/masks draws both sides: a bad name on one side is that side's friendly error."""
    result = client.predict("The cat sat", ["x"], tiny_models["causal"], api_name="/masks")
    assert "must be a name from the list" in result["real"]["encoder"]["error"]
    assert result["real"]["causal"]["max_above_diagonal"] == 0.0


def test_fill_mask_accepts_top_k_as_text_like_every_other_endpoint(client, tiny_models):
    result = client.predict("The [MASK] sat.", tiny_models["masked"], "3", api_name="/fill_mask")
    assert len(result["masks"][0]["predictions"]) == 3


HUGE_CALLS = [
    ("/next_token", [HUGE, "{c}", 1.0, 5, 1.0]),
    ("/generate", [HUGE, "{c}", "beam", 20, 1.0, 5, 1.0, 8, 0]),
    ("/fill_mask", [HUGE + "[MASK]", "{m}", 5]),
    ("/masks", [HUGE, "{m}", "{c}"]),
    ("/attention", [HUGE, "{m}", "", 0, 0]),
    ("/attention", ["The cat", "{m}", HUGE, 0, 0]),
    ("/tokenize", [HUGE, []]),
    ("/bpe", [HUGE, 5, "lowest"]),
    ("/score", [HUGE, "{c}"]),
    ("/logit_lens", [HUGE, "{c}", 5]),
    ("/beam_tree", [HUGE, "{c}", 8, 12]),
]


@pytest.mark.parametrize("endpoint, args", HUGE_CALLS, ids=[f"{e}-{i}" for i, (e, _) in enumerate(HUGE_CALLS)])
def test_a_100k_character_prompt_is_refused_at_once_and_holds_nobody_up(client, tiny_models, endpoint, args):
    outcome = {}

    def huge():
        started = time.perf_counter()
        try:
            client.predict(*_fill(args, tiny_models), api_name=endpoint)
        except AppError as exc:
            outcome["message"] = str(exc)
        outcome["seconds"] = time.perf_counter() - started

    thread = threading.Thread(target=huge)
    thread.start()
    started = time.perf_counter()
    normal = client.predict("The cat sat on the", tiny_models["causal"], 1.0, 5, 1.0, api_name="/next_token")
    normal_seconds = time.perf_counter() - started
    thread.join(60)
    assert "characters long" in outcome["message"] and "Shorten it" in outcome["message"]
    assert outcome["seconds"] < 5
    assert sum(row["kept"] for row in normal["distribution"]) == 5 and normal_seconds < 5


def test_fill_mask_without_a_chosen_model_says_pick_one(client):
    with pytest.raises(AppError, match="No model was chosen. Pick one from the list."):
        client.predict("The [MASK] sat.", "", 5, api_name="/fill_mask")


TYPED = """<img src=x onerror=alert(1)> & "q" 'a'"""  # what a script may send as a name
SHORT = "<b>&'</b>"  # short enough to be quoted whole where a value is shortened
QUOTING_CALLS = [  # (endpoint, arguments with one typed value that the message quotes)
    ("/fill_mask", ["The [MASK] sat.", TYPED, 5]),
    ("/fill_mask", ["The [MASK] sat.", "{m}", SHORT]),
    ("/next_token", ["The cat", TYPED, 1.0, 5, 1.0]),
    ("/generate", ["The cat", "{c}", SHORT, 5, 1.0, 5, 1.0, 1, 0]),
    ("/tokenize", ["playing", [TYPED]]),
    ("/attention", ["The cat sat", TYPED, "", 0, 0]),
    ("/score", ["The cat sat.", TYPED]),
    ("/finetune", [TYPED, "full", 1e-3, 1, 8, 16, 0, False]),
]


@pytest.mark.parametrize("endpoint, args", QUOTING_CALLS, ids=[f"{c[0]}-{i}" for i, c in enumerate(QUOTING_CALLS)])
def test_api_errors_quote_typed_text_as_plain_text(client, tiny_models, endpoint, args):
    """A script reads the message as a string: what it sent comes back as it was, never as HTML
    entities (only the browser's pop-up, which renders HTML, gets it escaped)."""
    with pytest.raises(AppError) as caught:
        client.predict(*_fill(args, tiny_models), api_name=endpoint)
    message = str(caught.value)
    for entity in ("&lt;", "&gt;", "&#x27;", "&amp;", "&quot;", "&#"):
        assert entity not in message, message
    assert (SHORT if SHORT in args else "<img src=x onerror=alert(1)>") in message, message


HOSTILE = '<b id="bold">bold</b> <a id="link" href="/x">link</a> <img id="evil" src="/x">'


def test_typed_html_shows_as_text_in_pop_ups_notices_and_chart_titles(page):
    fetched = []
    page.on("request", lambda r: fetched.append(r.url) if r.url.endswith("/x") else None)
    open_tab(page, "Fill in the blank")
    page.get_by_text("Best guesses filled in").wait_for(timeout=60000)  # the first load's example
    page.get_by_label("Your sentence (write [MASK] or ___ for a blank)").fill(f'<b id="bold">A</b> [MASK] sat. {HOSTILE}')
    page.get_by_role("button", name="Predict the blanks").click()
    # The left-only chart's title quotes the words before the blank (short here, so whole): as text, tags and all.
    page.locator(".gtitle", has_text='<b id="bold">A</b>').wait_for(timeout=60000)
    # "Best guesses filled in" quotes the tokenizer's decoding of it (spaced out): as text too.
    page.locator("p", has_text="Best guesses filled in").filter(has_text="link").first.wait_for()
    model = page.get_by_label("Masked LM")
    model.fill(HOSTILE)
    model.press("Enter")
    page.get_by_role("button", name="Predict the blanks").click()
    page.get_by_text("There is no model called").first.wait_for(timeout=60000)
    assert '<img id="evil"' in page.get_by_text("There is no model called").first.inner_text()
    screenshot(page, "hostile-text")
    assert page.locator("#bold, #link, #evil").count() == 0  # no element was created from typed text
    assert fetched == []  # an <img src> or <a> made from the text would have fetched or linked /x
