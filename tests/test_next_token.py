"""Lab 2, Next token: oracle tests against softmax and model.generate, bad input, API, browser."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from conftest import open_tab, screenshot
from gradio_client.exceptions import AppError
from walks import settle

from labs.core.errors import BadInput
from labs.core.models import models
from labs.next_token import compute as next_token
from labs.next_token import generation, tab_distribution, tab_generate, tab_step

PROMPT = "The cat sat on the"


def hand_softmax(logits, t):
    z = [v / t for v in logits]
    m = max(z)
    e = [np.exp(v - m) for v in z]
    return [v / sum(e) for v in e]


@pytest.mark.parametrize("t", [0.5, 1.0, 1.7])
def test_distribution_is_softmax_of_logits_over_t(tiny_models, t):
    loaded = models.load(tiny_models["causal"])
    ids = loaded.tokenizer(PROMPT, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logits = loaded.model(ids).logits[0, -1].double().tolist()
    # The softmax is checked exactly on the logits the lab read; those logits against the model's own
    # forward pass at float32 precision (the lab runs the head at the last position only, and how a
    # CPU's kernels round that matmul differs from machine to machine by ~1e-7: 4e-9 in a probability).
    _, read, _ = next_token.next_logits(loaded, PROMPT)
    np.testing.assert_allclose(read, logits, atol=1e-5)
    expected = hand_softmax(read.astype(np.float64).tolist(), t)
    dist = next_token.distribution(tiny_models["causal"], PROMPT, t, 0, 1.0)
    assert len(dist.entries) == 20
    for e in dist.entries:
        assert e.prob == pytest.approx(expected[e.token_id], abs=1e-9)
        assert e.logit == pytest.approx(logits[e.token_id], abs=1e-5)
    assert [e.token_id for e in dist.entries] == list(np.argsort(-np.array(expected), kind="stable")[:20])
    full = np.array(expected)
    assert dist.entropy == pytest.approx(float(-(full * np.log(full)).sum()), abs=1e-9)


def test_temperature_zero_is_greedy(tiny_models):
    dist = next_token.distribution(tiny_models["causal"], PROMPT, 0, 0, 1.0)
    assert dist.entries[0].prob == 1.0 and all(e.prob == 0 for e in dist.entries[1:])
    assert dist.entropy == 0.0


def hand_kept(logits, t, k, p):
    """top-k then top-p, written the way the lecture describes them."""
    probs = hand_softmax(logits, t)
    order = sorted(range(len(logits)), key=lambda i: -logits[i])
    kept = set(order[:k]) if k else set(order)
    mass = sum(probs[i] for i in kept)
    kept_p, total = set(), 0.0
    for i in sorted(kept, key=lambda i: -probs[i]):
        if total >= p:
            break
        kept_p.add(i)
        total += probs[i] / mass
    return kept_p


@pytest.mark.parametrize("t,k,p", [(1.0, 5, 1.0), (1.0, 0, 0.5), (0.7, 10, 0.8), (1.5, 3, 0.9), (1.0, 0, 1.0)])
def test_kept_flags_match_a_hand_implementation(tiny_models, t, k, p):
    _, logits, _ = next_token.next_logits(tiny_models["causal"], PROMPT)
    expected = hand_kept(logits.tolist(), t, k, p)
    _, kept = next_token.shape(logits, t, k, p)
    assert set(np.flatnonzero(kept).tolist()) == expected


def test_hf_warpers_agree_on_kept_tokens(tiny_models):
    """A second, independent oracle: transformers' own top-k / top-p logits processors."""
    from transformers import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

    _, logits, _ = next_token.next_logits(tiny_models["causal"], PROMPT)
    scores = torch.tensor(logits).unsqueeze(0)
    for proc in (TemperatureLogitsWarper(0.8), TopKLogitsWarper(12), TopPLogitsWarper(0.7)):
        scores = proc(None, scores)
    _, kept = next_token.shape(logits, 0.8, 12, 0.7)
    assert set(np.flatnonzero(kept).tolist()) == set(torch.isfinite(scores[0]).nonzero().flatten().tolist())


def reference_generate(model_name, prompt, **kwargs):
    from transformers import set_seed

    loaded = models.load(model_name)
    ids = loaded.tokenizer(prompt, return_tensors="pt")["input_ids"]
    set_seed(kwargs.pop("seed", 0))
    with torch.no_grad():
        out = loaded.model.generate(ids, attention_mask=torch.ones_like(ids), pad_token_id=loaded.tokenizer.eos_token_id,
                                    **kwargs)
    return loaded.tokenizer.batch_decode(out[:, ids.shape[1]:], skip_special_tokens=True)


def test_greedy_equals_generate(tiny_models):
    ours = generation.generate(tiny_models["causal"], PROMPT, "greedy", 15)
    assert [c["text"] for c in ours["completions"]] == reference_generate(
        tiny_models["causal"], PROMPT, max_new_tokens=15, do_sample=False)
    streamed = list(generation.stream(tiny_models["causal"], PROMPT, "greedy", 15, 1.0, 0, 1.0, 1, 0))
    assert streamed[-1] == ours["completions"][0]["text"]


def test_beam_equals_generate_and_lists_every_beam_best_first(tiny_models):
    ours = generation.generate(tiny_models["causal"], PROMPT, "beam", 12, num_beams=4)
    ref = reference_generate(tiny_models["causal"], PROMPT, max_new_tokens=12, do_sample=False, num_beams=4,
                             num_return_sequences=4, early_stopping=True)
    assert [c["text"] for c in ours["completions"]] == ref
    scores = [c["score"] for c in ours["completions"]]
    assert len(scores) == 4 and scores == sorted(scores, reverse=True)


def test_sampling_with_a_seed_equals_generate_and_is_reproducible(tiny_models):
    kwargs = dict(temperature=0.9, top_k=20, top_p=0.95)
    a = generation.generate(tiny_models["causal"], PROMPT, "sample", 15, seed=123, **kwargs)
    b = generation.generate(tiny_models["causal"], PROMPT, "sample", 15, seed=123, **kwargs)
    assert a == b
    ref = reference_generate(tiny_models["causal"], PROMPT, max_new_tokens=15, do_sample=True, seed=123, **kwargs)
    assert [c["text"] for c in a["completions"]] == ref
    streamed = list(generation.stream(tiny_models["causal"], PROMPT, "sample", 15, 0.9, 20, 0.95, 1, 123))
    assert streamed[-1] == ref[0]


def test_stopping_the_stream_frees_the_worker(tiny_models):
    import threading

    before = threading.active_count()
    gen = generation.stream(tiny_models["causal"], PROMPT, "sample", 200, 1.0, 0, 1.0, 1, 0)
    next(gen)
    gen.close()  # what Stop does
    assert threading.active_count() <= before


def test_long_prompt_keeps_the_end(tiny_models):
    dist = next_token.distribution(tiny_models["causal"], "word " * 400, 1.0, 0, 1.0)
    assert "only the end was kept" in dist.note


@pytest.mark.parametrize("kwargs,message", [
    (dict(prompt=""), "Type a prompt"),
    (dict(max_new_tokens=0), "1 to 200"),
    (dict(max_new_tokens=201), "1 to 200"),
    (dict(num_beams=9), "Beams"),
    (dict(temperature=-0.1), "Temperature"),
    (dict(temperature=5.5), "Temperature"),
    (dict(top_p=0), "Top-p"),
    (dict(top_p=1.2), "Top-p"),
    (dict(top_k=-1), "Top-k"),
    (dict(seed=1.5), "Seed"),
    (dict(seed="abc"), "Seed"),
    (dict(strategy="nucleus"), "Strategy"),
])
def test_bad_generate_settings(tiny_models, kwargs, message):
    args = dict(prompt=PROMPT, strategy="greedy", max_new_tokens=5, temperature=1.0, top_k=0, top_p=1.0,
                num_beams=1, seed=0) | kwargs
    with pytest.raises(BadInput, match=message):
        generation.generate(tiny_models["causal"], **args)


def test_softmax_by_hand_matches_exercise_b2():
    r = next_token.softmax_by_hand(next_token.B2_LOGITS, 1.0)
    assert r["probs"] == pytest.approx(hand_softmax(next_token.B2_LOGITS, 1.0))
    assert round(r["probs"][0], 3) == 0.579  # P(sat) at T = 1: e^2.5 / (e^2.5 + e^1 + e^0.5 + e^1.5)
    assert sum(next_token.softmax_by_hand(next_token.B2_LOGITS, 0.5)["probs"]) == pytest.approx(1.0)


# ------------------------------------------------------------ resolve once, pass on


def test_compute_takes_a_loaded_model_and_looks_nothing_up(tiny_models, lookups):
    name = tiny_models["causal"]
    by_name = next_token.distribution(name, PROMPT, 0.8, 5, 0.9).to_json()
    greedy_by_name = generation.generate(name, PROMPT, "greedy", 6)
    loaded = models.load(name, "causal")
    lookups.clear()
    assert next_token.distribution(loaded, PROMPT, 0.8, 5, 0.9).to_json() == by_name
    token_id = next_token.greedy_token(loaded, PROMPT)
    assert token_id == by_name["distribution"][0]["token_id"]
    assert next_token.entry_for(loaded, PROMPT, token_id, 0.8, 5, 0.9).token == by_name["distribution"][0]["token"]
    assert next_token.sample_tokens(loaded, PROMPT, 0.8, 5, 0.9, 3, 0) == next_token.sample_tokens(
        loaded, PROMPT, 0.8, 5, 0.9, 3, 0)
    assert generation.generate(loaded, PROMPT, "greedy", 6) == greedy_by_name
    assert list(generation.stream(loaded, PROMPT, "greedy", 6, 1.0, 0, 1.0, 1, 0))[-1] == \
        greedy_by_name["completions"][0]["text"]
    settings = generation.check_generate(PROMPT, "greedy", 6, 1.0, 0, 1.0, 1, 0)
    assert repr(loaded.choice.location) in generation.generate_code(loaded, settings)
    assert lookups == []


def test_each_click_resolves_the_model_once(tiny_models, lookups):
    """The handler resolves the name (models.load) and passes the LoadedModel on: one look-up per click."""
    name, request = tiny_models["causal"], SimpleNamespace(session_hash="resolve-once")
    greedy = next_token.distribution(name, PROMPT, 1.0, 0, 1.0).entries[0]
    clicks = {
        "show": lambda: tab_distribution.on_show(PROMPT, name, 1.0, 0, 1.0),
        "take": lambda: tab_step.on_take(PROMPT, name, [], 1.0, 0, 1.0),
        "sample": lambda: tab_step.on_sample(PROMPT, name, [], 1.0, 0, 1.0, 0),
        "pick": lambda: tab_step.on_pick(PROMPT, name, [], greedy.token_id, 1.0, 0, 1.0),
        "bar click": lambda: tab_step.on_bar_click(PROMPT, name, [], f"{greedy.token_id}:123", 1.0, 0, 1.0),
        "draw": lambda: tab_step.on_draw(PROMPT, name, 1.0, 0, 1.0, 0),
        "generate": lambda: list(tab_generate.on_generate(PROMPT, name, "greedy", 5, 1.0, 0, 1.0, 2, 0, request)),
        "beams": lambda: list(tab_generate.on_generate(PROMPT, name, "beam", 5, 1.0, 0, 1.0, 2, 0, request)),
        "compare": lambda: tab_generate.on_compare(PROMPT, name, 5, 1.0, 0, 1.0, 2, 0),
    }
    out = {}
    for click, run in clicks.items():
        lookups.clear()
        out[click] = run()
        assert lookups == [("load", name, ("causal",))], click
    new_prompt, history = out["take"][:2]
    assert new_prompt == PROMPT + greedy.token and history == [[1, tab_distribution.shown(greedy.token),
                                                                round(greedy.prob, 4), "most likely"]]
    assert out["pick"][:2] == (new_prompt, [history[0][:3] + ["picked"]])
    assert out["bar click"][:2] == (new_prompt, [history[0][:3] + ["clicked"]])
    assert out["show"][0].startswith("Entropy:") and out["show"][2]["distribution"][0]["token_id"] == greedy.token_id
    text, _, result, code = out["generate"][-1]
    assert text == generation.generate(name, PROMPT, "greedy", 5)["completions"][0]["text"] == out["compare"][0]
    assert result["model"] == name and repr(models.load(name).choice.location) in code
    assert len(out["beams"][-1][2]["completions"]) == 2


# ------------------------------------------------------------ the real SmolLM2


def test_smollm2_continues_once_upon_a_fluently():
    out = generation.generate(models.SMOLLM2_NAME, "Once upon a", "greedy", 12)
    text = out["completions"][0]["text"]
    assert text.strip().lower().startswith("time")
    words = text.split()
    assert len(words) >= 6 and all(w.strip(",.").isalpha() for w in words[:6])
    dist = next_token.distribution(models.SMOLLM2_NAME, "Once upon a", 1.0, 0, 1.0)
    _, logits, _ = next_token.next_logits(models.SMOLLM2_NAME, "Once upon a")
    probs, _ = next_token.shape(logits, 1.0, 0, 1.0)
    assert probs.sum() == pytest.approx(1.0, abs=1e-9)
    assert dist.entries[0].token.strip() == "time"


# ------------------------------------------------------------ API and browser


def test_next_token_and_generate_api(client, tiny_models):
    out = client.predict(PROMPT, tiny_models["causal"], 1.0, 5, 1.0, api_name="/next_token")
    assert client.predict(PROMPT, tiny_models["causal"], 4.0, 0, 1.0, api_name="/next_token")["entropy"] > 0
    result = out
    assert len(result["distribution"]) == 20
    assert sum(e["kept"] for e in result["distribution"]) == 5
    gen = client.predict(PROMPT, tiny_models["causal"], "beam", 8, 1.0, 0, 1.0, 3, 0, api_name="/generate")
    assert gen["strategy"] == "beam" and len(gen["completions"]) == 3


@pytest.mark.parametrize("args,message", [
    (("", 1.0, 0, 1.0), "Type a prompt"),
    ((PROMPT, 7.0, 0, 1.0), "Temperature"),
    ((PROMPT, -1.0, 0, 1.0), "Temperature"),
    ((PROMPT, 1.0, -3, 1.0), "Top-k"),
    ((PROMPT, 1.0, 0, 0.0), "Top-p"),
])
def test_next_token_api_bad_input(client, tiny_models, args, message):
    prompt, t, k, p = args
    with pytest.raises(AppError, match=message):
        client.predict(prompt, tiny_models["causal"], t, k, p, api_name="/next_token")


def test_generate_api_bad_input(client, tiny_models):
    with pytest.raises(AppError, match="Beams"):
        client.predict(PROMPT, tiny_models["causal"], "beam", 8, 1.0, 0, 1.0, 12, 0, api_name="/generate")


def test_next_token_tab_draws_the_chart_and_streams(page):
    open_tab(page, "Next token")
    page.get_by_text("Entropy:").wait_for(timeout=60000)
    bars = page.locator(".js-plotly-plot:visible").first.locator("g.barlayer path")
    bars.nth(9).wait_for(timeout=60000)
    assert bars.count() >= 10
    page.get_by_role("button", name="Generate", exact=True).click()
    box = page.locator("#generate-output textarea")
    page.wait_for_function("el => el.value.length > 5", arg=box.element_handle(), timeout=60000)
    settle(page)  # the last outputs drawn before the picture
    screenshot(page, "next-token")
    assert page.outside_requests == []


def test_clicking_a_bar_appends_that_token(page):
    open_tab(page, "Next token")
    bars = page.locator("#nt-chart .js-plotly-plot g.point path")
    bars.nth(2).wait_for(timeout=60000)
    prompt = page.get_by_label("Prompt").first
    before = prompt.input_value()
    third = page.evaluate("() => document.querySelector('#nt-chart .js-plotly-plot').data[0].y[2]")
    box = bars.nth(2).bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)  # as a student clicks
    page.wait_for_function("([el, old]) => el.value !== old", arg=[prompt.element_handle(), before], timeout=30000)
    appended = prompt.input_value()[len(before):]
    assert repr(appended)[1:-1] == third  # the chart labels tokens as repr() without quotes
    page.get_by_text("clicked", exact=True).first.wait_for(state="attached")  # the record says how it was chosen


def test_stop_then_generate_again_starts_a_new_text(page):
    """Stop ends the text (the run finishes normally), and a Generate clicked right after runs."""
    open_tab(page, "Next token")
    page.get_by_text("Entropy:").wait_for(timeout=60000)
    page.get_by_role("radio", name="sample", exact=True).check()  # (other panels have "samples")
    box = page.locator("#generate-output textarea")
    page.get_by_role("button", name="Generate", exact=True).click()
    page.wait_for_function("el => el.value.length > 5", arg=box.element_handle(), timeout=60000)
    first = box.input_value()[:12]
    page.get_by_label("Seed (sampling)").fill("7")  # read when Generate is clicked
    page.get_by_role("button", name="Stop", exact=True).click()
    page.get_by_role("button", name="Generate", exact=True).click()  # at once, as an impatient student does
    page.wait_for_function("([el, old]) => el.value.length > 5 && !el.value.startsWith(old)",
                           arg=[box.element_handle(), first], timeout=120000)
