"""Gradient accumulation (textbook 20.11.4) on the real offline MiniLM with the lab's classification head: k
micro-batches with the loss / k give the gradient a plain full-batch loss.backward() gives (the oracle: this file's
own tokenisation, cross-entropy and backward pass), and after one AdamW step the same weights; a micro-batch's
forward pass saves fewer bytes for backward than the whole batch's; bad input is refused with a sentence; the result
is the same for a seed; the API, the link and the panel in a browser at 1280 and 390 px."""

from __future__ import annotations

import pytest
import torch
from conftest import at_each_width, linked_inputs, minilm_folder, screenshot
from gradio_client.exceptions import AppError
from transformers import AutoTokenizer

from labs.core.errors import BadInput
from labs.core.models import models
from labs.core.models.registry import SMOLLM2_NAME, ModelUnavailable
from labs.finetune import accumulation as acc
from labs.finetune import tab_accumulation
from labs.finetune.data import builtin_data, take_train

MINILM = models.MINILM_NAME


def flat(values) -> torch.Tensor:
    return torch.cat([v.flatten() for v in values])


def oracle_step(model, tokenizer, rows: list[tuple[str, int]], start: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """From `start`: one plain forward and backward pass on all the rows at once (padded together), the mean
    cross-entropy written here, then torch's AdamW step. Returns the gradient and the new weights (flat)."""
    model.load_state_dict(start)
    model.zero_grad(set_to_none=True)
    params = [p for p in model.parameters() if p.requires_grad]
    encoded = tokenizer([t for t, _ in rows], padding=True, truncation=True, max_length=64, return_tensors="pt")
    logits = model(**encoded).logits
    torch.nn.functional.cross_entropy(logits, torch.tensor([y for _, y in rows])).backward()
    gradient = flat(p.grad if p.grad is not None else torch.zeros_like(p) for p in params)
    torch.optim.AdamW(params, lr=acc.LEARNING_RATE).step()
    return gradient, flat(p.detach() for p in params)


def test_accumulated_gradient_and_adamw_step_equal_a_plain_full_batch_backward():
    r = acc.check_request(MINILM, "sentiment", 16, 4, 3)
    model, rows = acc.prepare(r)
    tokenizer = AutoTokenizer.from_pretrained(minilm_folder())  # the oracle tokenises on its own
    start = {name: value.clone() for name, value in model.state_dict().items()}
    params = [p for p in model.parameters() if p.requires_grad]
    _, parts = acc.passes(rows, r)
    records, accumulated, weights = acc.one_step(model, parts, params, start)
    examples = take_train(builtin_data(), 16, 3)
    gradient, oracle_weights = oracle_step(model, tokenizer, examples, start)
    assert len(records) == 4 and all(p["rows"] == 4 for p in records)
    assert (accumulated - gradient).abs().max() <= 1e-5 * gradient.abs().max()
    assert torch.nn.functional.cosine_similarity(accumulated.double(), gradient.double(), dim=0) > 1 - 1e-9
    before = flat(start[name] for name, p in model.named_parameters() if p.requires_grad)
    assert (oracle_weights - before).abs().max() > 1e-5  # the step moved the weights (lr 5e-5)
    assert (weights - oracle_weights).abs().max() <= 1e-6  # … and both steps moved them alike


@pytest.fixture(scope="module")
def b32_k4() -> dict:
    return acc.gradient_accumulation(MINILM, "sentiment", 32, 4, 0)


def test_the_json_reports_equal_gradients_steps_and_less_memory_per_micro_batch(b32_k4):
    r = b32_k4
    assert r["micro_batch_size"] == 8 and [p["rows"] for p in r["micro"]] == [8] * 4
    assert r["gradient"]["relative"] <= 1e-5 and r["gradient"]["cosine"] > 1 - 1e-9
    assert r["adamw"]["max_abs_difference"] <= 1e-6 < r["adamw"]["max_abs_step"]
    assert r["loss"]["accumulated"] == pytest.approx(r["loss"]["full_batch"], rel=1e-5)
    memory = r["memory"]
    assert 0 < memory["micro_batch_bytes"] < memory["full_batch_bytes"]
    assert all(p["saved_bytes"] < memory["full_batch_bytes"] for p in r["micro"])
    # each micro-batch is padded to its own longest sentence: never longer than the whole batch's
    assert all(p["padded_length"] <= r["full_batch"]["padded_length"] for p in r["micro"])
    assert r["course"]["lines"][-1] == "gradient_accumulation_steps=8, # Effective batch size = 4 * 8 = 32"


@pytest.mark.slow  # three accumulation runs on the real MiniLM: over 10 s
def test_the_result_is_the_same_for_a_seed_and_the_seed_picks_the_examples():
    def without_times(r: dict) -> dict:
        drop = lambda p: {k: v for k, v in p.items() if k != "seconds"}  # noqa: E731
        return {**drop(r), "full_batch": drop(r["full_batch"]), "micro": [drop(p) for p in r["micro"]]}

    first, again = (acc.gradient_accumulation(MINILM, "pair", 8, 2, 5) for _ in range(2))
    assert without_times(first) == without_times(again)
    other = acc.gradient_accumulation(MINILM, "pair", 8, 2, 6)
    assert other["full_batch"]["loss"] != first["full_batch"]["loss"]


@pytest.mark.parametrize(("args", "words"), [
    ((32, 5, 0), "k = 5 does not divide B = 32"),
    ((33, 3, 0), "batch size B"),
    ((1, 1, 0), "batch size B"),
    ((32, 0, 0), "micro-batches k"),
    ((32, 16, 0), "micro-batches k"),
    (("many", 4, 0), "batch size B"),
    ((32, 4, -1), "seed"),
])
def test_bad_input_is_refused_with_a_sentence(args, words):
    with pytest.raises(BadInput, match=words):
        acc.gradient_accumulation(MINILM, "sentiment", *args)


def test_tasks_where_accumulation_is_not_exact_and_non_encoders_are_refused():
    for task, words in (("ner", "word pieces"), ("qa", "padding"), ("poetry", "Unknown task")):
        with pytest.raises(BadInput, match=words):
            acc.gradient_accumulation(MINILM, task, 8, 2, 0)
    with pytest.raises(ModelUnavailable, match="no model called"):
        acc.gradient_accumulation("no-such-model", "sentiment", 8, 2, 0)
    with pytest.raises((BadInput, ModelUnavailable), match="encoder"):
        acc.gradient_accumulation(SMOLLM2_NAME, "sentiment", 8, 2, 0)


def test_the_divisor_hint_lists_what_k_can_be():
    with pytest.raises(BadInput, match="k can be 1, 2, 3, 4, 6, 8"):
        acc.check_request(MINILM, "sentiment", 24, 5, 0)


def test_the_api_and_the_link(client):
    r = client.predict(MINILM, "sentiment", 4, 2, 0, api_name="/gradient_accumulation")
    local = acc.gradient_accumulation(MINILM, "sentiment", 4, 2, 0)
    assert r["gradient"] == local["gradient"] and r["memory"] == local["memory"]
    with pytest.raises(AppError, match="does not divide"):
        client.predict(MINILM, "sentiment", 6, 4, 0, api_name="/gradient_accumulation")
    assert {"acc_task", "acc_batch", "acc_micro", "acc_seed"} <= set(linked_inputs("finetune"))


def test_the_panel_draws_in_a_browser(browser, app_server):
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{app_server['url']}?tab=finetune&acc_batch=32&acc_micro=4", wait_until="load")
    page.locator("#ft-accumulation").wait_for(state="attached", timeout=300000)  # the whole app renders first
    page.get_by_text(tab_accumulation.TITLE).click(timeout=120000)
    page.get_by_role("button", name=tab_accumulation.BUTTON).click()
    words = page.locator("#ft-accumulation-summary")
    for width in at_each_width(page):
        words.get_by_text("B = 32 as 4 micro-batches of 8").wait_for(timeout=300000)
        assert "cosine similarity" in words.inner_text()
        page.locator("#ft-accumulation").get_by_text("micro-batch 4 of 4").wait_for(timeout=60000)
        words.scroll_into_view_if_needed()
        screenshot(page, f"finetune_accumulation_{width}")
    context.close()
