"""Lab 1, Fill in the blank: oracle tests against pipeline("fill-mask"), the masking simulator,
bad input, the API and the browser."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import open_tab, screenshot
from gradio_client.exceptions import AppError

from labs.core.errors import BadInput
from labs.core.models import models
from labs.core.work import lm
from labs.fill_mask import compute as fill_mask
from labs.fill_mask import tab as fill_mask_tab

SENTENCES = ["The [MASK] sat on the mat.", "Paris is the [MASK] of France.",
             "The doctor told the [MASK] that [MASK] needed rest.", "___ went to the bank to get [MASK] money."]


@pytest.fixture(scope="module")
def oracle(tiny_models):
    from transformers import pipeline

    loaded = models.load(tiny_models["masked"])
    return pipeline("fill-mask", model=loaded.model, tokenizer=loaded.tokenizer, device="cpu")


@pytest.mark.parametrize("sentence", SENTENCES)
@pytest.mark.parametrize("top_k", [1, 5, 20])
def test_predictions_equal_the_fill_mask_pipeline(oracle, tiny_models, sentence, top_k):
    result = fill_mask.predict(tiny_models["masked"], sentence, top_k)
    expected = oracle(lm.with_mask_token(sentence, "[MASK]"), top_k=top_k)
    if isinstance(expected[0], dict):  # the pipeline returns a flat list for one blank
        expected = [expected]
    assert len(result.masks) == len(expected)
    for blank, exp in zip(result.masks, expected):
        assert [p.token_id for p in blank.predictions] == [e["token"] for e in exp]
        np.testing.assert_allclose([p.prob for p in blank.predictions], [e["score"] for e in exp], atol=1e-5)
        assert result.tokens[blank.index] == "[MASK]"


def test_blank_spellings_and_json_shape(tiny_models):
    a = fill_mask.predict(tiny_models["masked"], "The [MASK] sat.", 3).to_json()
    b = fill_mask.predict(tiny_models["masked"], "The ___ sat.", 3).to_json()
    c = fill_mask.predict(tiny_models["masked"], "The <mask> sat.", 3).to_json()
    assert a["masks"] == b["masks"] == c["masks"]
    assert a["source"] == "local" and a["tokens"][0] == "[CLS]"
    probs = [p["prob"] for p in a["masks"][0]["predictions"]]
    assert probs == sorted(probs, reverse=True)


@pytest.mark.parametrize("text,top_k,message", [
    ("The cat sat on the mat.", 5, "no blank"),
    ("   ", 5, "Type a sentence"),
    (" ".join(["[MASK]"] * 11), 5, "at most 10"),
    ("The [MASK] sat.", 0, "1 to 20"),
    ("The [MASK] sat.", 21, "1 to 20"),
    ("The [MASK] sat.", 2.5, "whole number"),
    ("The [MASK] " + "word " * 200, 5, "at most 128"),
])
def test_bad_input_is_refused_with_a_reason(tiny_models, text, top_k, message):
    with pytest.raises(BadInput, match=message):
        fill_mask.predict(tiny_models["masked"], text, top_k)


def test_a_causal_model_is_not_a_masked_lm(tiny_models):
    with pytest.raises(BadInput, match="not a masked language model"):
        fill_mask.predict(tiny_models["causal"], "The [MASK] sat.", 5)


def test_guess_reports_probability_rank_and_subword_split(tiny_models):
    result = fill_mask.predict(tiny_models["masked"], "The [MASK] sat.", 1)
    top = result.masks[0].predictions[0]
    g = fill_mask.guess(tiny_models["masked"], "The [MASK] sat.", 1, top.token)
    assert g["rank"] == 1 and g["prob"] == pytest.approx(top.prob, abs=1e-6)
    long_word = fill_mask.guess(tiny_models["masked"], "The [MASK] sat.", 1, "unbelievableness")
    assert not long_word["single_token"] and len(long_word["pieces"]) > 1
    with pytest.raises(BadInput, match="1 blank"):
        fill_mask.guess(tiny_models["masked"], "The [MASK] sat.", 2, "cat")


def test_left_context_is_the_text_before_the_first_blank():
    assert fill_mask.left_context("The [MASK] sat on the mat") == "The"
    assert fill_mask.left_context("___ sat on the mat") == ""


def test_left_only_predictions_equal_the_causal_models_next_token(tiny_models):
    import torch

    out = fill_mask.left_only_predictions(tiny_models["causal"], "The cat [MASK] on the mat", 5)
    loaded = models.load(tiny_models["causal"])
    ids = loaded.tokenizer("The cat", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        probs = loaded.model(ids).logits[0, -1].softmax(-1)
    values, idx = probs.topk(5)
    assert [p["token_id"] for p in out["predictions"]] == idx.tolist()
    np.testing.assert_allclose([p["prob"] for p in out["predictions"]], values.tolist(), atol=1e-5)


def test_compute_takes_the_loaded_model(tiny_models):
    loaded = fill_mask.masked_lm(tiny_models["masked"])
    assert fill_mask.masked_lm(loaded) is loaded
    by_name = fill_mask.predict(tiny_models["masked"], "The [MASK] sat.", 3).to_json()
    assert fill_mask.predict(loaded, "The [MASK] sat.", 3).to_json() == by_name
    causal = fill_mask.causal_lm(tiny_models["causal"])
    assert fill_mask.left_only_predictions(causal, "The cat [MASK].", 3)["model"] == tiny_models["causal"]
    with pytest.raises(BadInput, match="not a masked language model"):
        fill_mask.masked_lm(causal)


@pytest.fixture
def lookups(monkeypatch):
    """Every models.load and registry look-up (get_choice) made while a test runs."""
    counted = {"load": 0, "get_choice": 0}

    def counting(name, fn):
        def wrapper(*args, **kwargs):
            counted[name] += 1
            return fn(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(models, "load", counting("load", models.load))
    if hasattr(models, "get_choice"):  # what load looks a name up with, while it lives beside load
        monkeypatch.setattr(models, "get_choice", counting("get_choice", models.get_choice))
    return counted


@pytest.mark.parametrize("handler, args", [
    ("on_predict", ("The [MASK] sat on the [MASK].", "{m}", 5)),
    ("on_guess", ("The [MASK] sat on the mat.", "{m}", 1, "dog")),
    ("on_left", ("The cat [MASK] on the mat.", "{c}", 5)),
])
def test_a_click_looks_its_model_up_once(tiny_models, lookups, handler, args):
    args = [a.format(m=tiny_models["masked"], c=tiny_models["causal"]) if isinstance(a, str) else a for a in args]
    getattr(fill_mask_tab, handler)(*args)
    assert lookups["load"] == 1 and lookups["get_choice"] <= 1, lookups  # before: 2 and 2 for on_predict


def test_every_token_gets_its_own_chip_with_its_id(tiny_models):
    text = "The <b>cat</b> [MASK] unbelievably."
    _, _, _, tokens, _ = fill_mask_tab.on_predict(text, tiny_models["masked"], 3)
    result = fill_mask.predict(tiny_models["masked"], text, 3)
    chips = tokens.split('<div class="lab-pieces">')[1]
    assert chips.count('<span class="lab-piece') == len(result.tokens)
    for token, token_id in zip(result.tokens, result.token_ids):
        assert f">{fill_mask_tab.ui.esc(token)}<sub>{token_id}</sub></span>" in chips
    assert "&lt;" in chips and "<b>cat" not in tokens  # the typed tag is tokens' text, escaped
    assert 'lab-piece lab-piece-special' in chips and "#fecaca" in chips  # [CLS]/[SEP], the blank
    offline = fill_mask_tab.on_tokens_only(None, "The [MASK] sat.")
    assert offline.count('<span class="lab-piece') == 6  # [CLS] the [MASK] sat . [SEP]


def test_the_first_example_gives_the_left_only_panel_something_to_go_on():
    """SmolLM2 after "The" alone guesses "-" (p 0.42); the first example leaves it a real clause on
    the left, and keeps words on the right that only the masked LM reads."""
    assert fill_mask.EXAMPLES[0] == fill_mask.EXAMPLE
    context = fill_mask.left_context(fill_mask.EXAMPLE)
    assert len(context.split()) >= 4 and fill_mask.EXAMPLE.split("[MASK]")[1].strip(" .")
    out = fill_mask.left_only_predictions(fill_mask.causal_lm(models.SMOLLM2_NAME), fill_mask.EXAMPLE, 5)
    top = out["predictions"][0]
    assert top["token"].strip().isalpha() and top["prob"] > 0.3, out["predictions"]
    assert top["token"].strip() == "coffee"  # "with lemon and honey", on the right, says tea
    # The examples still contrast the two sides: one leaves the causal LM a single word.
    assert any(fill_mask.left_context(e) == "The" for e in fill_mask.EXAMPLES[1:])


# ------------------------------------------------------------ the masking simulator (B1)


def test_corruption_is_reproducible_and_skips_special_tokens():
    ids, special = list(range(100, 140)), [True] + [False] * 38 + [True]
    a = fill_mask.corrupt(ids, special, 103, 30522, seed=7)
    assert a == fill_mask.corrupt(ids, special, 103, 30522, seed=7)
    assert a != fill_mask.corrupt(ids, special, 103, 30522, seed=8)
    assert not a[0]["chosen"] and not a[-1]["chosen"]
    for e in a:
        if e["action"] == "mask":
            assert e["new"] == 103
        if e["action"] == "keep" or not e["chosen"]:
            assert e["new"] == e["original"]


def test_corruption_frequencies_converge_to_15_and_80_10_10():
    ids, special = list(range(1000, 1050)), [False] * 50
    f = fill_mask.corruption_frequencies(ids, special, 103, 30522, seed=0, draws=2000)
    n_tokens, n_chosen = f["counts"]["tokens"], f["counts"]["chosen"]
    se = np.sqrt(0.15 * 0.85 / n_tokens)
    assert abs(f["chosen_rate"] - 0.15) < 4 * se
    for key, target in (("mask", 0.8), ("random", 0.1), ("keep", 0.1)):
        assert abs(f[key] - target) < 4 * np.sqrt(target * (1 - target) / n_chosen), (key, f[key])


def test_simulated_loss_is_minus_log_prob_of_the_original(tiny_models):
    import torch

    sim = fill_mask.simulate(tiny_models["masked"], "the quick brown fox jumps over the lazy dog " * 3, seed=1)
    chosen = [e for e in sim["entries"] if e["chosen"]]
    assert chosen and sim["loss"] == pytest.approx(sum(e["loss"] for e in chosen))
    loaded = models.load(tiny_models["masked"])
    corrupted = torch.tensor([[e["new"] for e in sim["entries"]]])
    with torch.no_grad():
        log_probs = loaded.model(input_ids=corrupted).logits[0].log_softmax(-1)
    for e in chosen:
        assert e["loss"] == pytest.approx(float(-log_probs[e["position"], e["original"]]), abs=1e-4)


def test_simulator_works_without_a_masked_lm():
    sim = fill_mask.simulate(None, "the quick brown fox", seed=2)
    assert sim["loss"] is None and not sim["have_model"]
    assert [e["token"] for e in sim["entries"]][:2] == ["[CLS]", "the"]


# ------------------------------------------------------------ API and browser


def test_fill_mask_api(client, tiny_models):
    result = client.predict("The [MASK] sat on the mat.", tiny_models["masked"], 5, api_name="/fill_mask")
    assert result["model"] == tiny_models["masked"] and result["source"] == "local"
    assert len(result["masks"]) == 1 and len(result["masks"][0]["predictions"]) == 5
    assert result["tokens"][result["masks"][0]["index"]] == "[MASK]"


@pytest.mark.parametrize("args,message", [
    (("The cat sat.", None, 5), "no blank"),
    (("The [MASK] sat.", "<img src=x onerror=alert(1)>", 5), "no model called '<img src=x onerror=alert\\(1\\)>'"),
    (("The [MASK] sat.", "no-such-model", 5), "no model called"),
    (("", None, 5), "Type a sentence"),
])
def test_fill_mask_api_bad_input(client, tiny_models, args, message):
    text, model, k = args
    with pytest.raises(AppError, match=message):
        client.predict(text, model or tiny_models["masked"], k, api_name="/fill_mask")


def test_fill_mask_tab_draws_bars_for_every_blank(page, tiny_models):
    open_tab(page, "Fill in the blank")
    page.get_by_label("Your sentence (write [MASK] or ___ for a blank)").fill(
        "<img src=x onerror=alert(1)> The [MASK] told the [MASK].")
    page.locator("div.lab-explainer:visible").first.wait_for()
    page.get_by_text("Best guesses filled in").wait_for(timeout=60000)  # the first load's example
    page.get_by_role("button", name="Predict the blanks").click()
    bars = page.locator(".js-plotly-plot:visible").first.locator("g.barlayer g.trace")
    bars.nth(1).wait_for(timeout=60000)  # the typed sentence's second blank is drawn
    assert bars.count() == 2  # one bar trace per blank
    assert page.locator("img[src=x]").count() == 0  # typed HTML is shown, never rendered
    screenshot(page, "fill-mask")
    assert page.outside_requests == []
