"""Lab 5, Fine-tune: parameter counts against requires_grad and the LoRA formula, frozen weights
untouched, the loss going down, reproducibility, CSV checks, the real MiniLM run, API, browser."""

from __future__ import annotations

import re
import threading

import pytest
import torch
from conftest import open_tab, screenshot
from gradio_client.exceptions import AppError
from playwright.sync_api import expect
from walks import settle

from labs.core.errors import BadInput
from labs.core.models import models
from labs.finetune import codegen, strategies, training
from labs.finetune import data as datasets

TINY_HIDDEN, TINY_LAYERS = 64, 2  # see conftest.build_tiny_bert


def fresh(name):
    return models.load_for_classification(name, 2, seed=0)[0]


def numel(model, predicate) -> int:
    return sum(p.numel() for n, p in model.named_parameters() if predicate(n))


@pytest.mark.parametrize("strategy", ["full", "freeze_embeddings", "freeze_bottom_1", "freeze_bottom_2", "head_only"])
def test_freezing_counts_equal_requires_grad_and_module_sizes(tiny_models, strategy):
    model = strategies.apply_strategy(fresh(tiny_models["masked"]), strategy)
    trainable, total = strategies.count_params(model)
    assert trainable == sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert total == sum(p.numel() for p in model.parameters())
    # Independent count from the module names.
    embeddings = numel(model, lambda n: n.startswith("bert.embeddings."))
    layer = [numel(model, lambda n, i=i: n.startswith(f"bert.encoder.layer.{i}.")) for i in range(TINY_LAYERS)]
    head = numel(model, lambda n: n.startswith(("bert.pooler.", "classifier.")))
    assert total == embeddings + sum(layer) + head
    expected = {"full": total, "freeze_embeddings": total - embeddings,
                "freeze_bottom_1": total - embeddings - layer[0], "freeze_bottom_2": head, "head_only": head}[strategy]
    assert trainable == expected


@pytest.mark.parametrize("rank,targets,modules", [(4, "query, value", 2), (8, "query, key, value", 3)])
def test_lora_counts_follow_the_formula(tiny_models, rank, targets, modules):
    base = fresh(tiny_models["masked"])
    total_before = sum(p.numel() for p in base.parameters())
    head = numel(base, lambda n: n.startswith(("bert.pooler.", "classifier.")))
    model = strategies.apply_strategy(base, f"lora_r{rank}", targets)
    trainable, total = strategies.count_params(model)
    adapters = TINY_LAYERS * modules * strategies.lora_added(TINY_HIDDEN, TINY_HIDDEN, rank)
    assert trainable == adapters + head
    assert total == total_before + adapters
    assert trainable == sum(p.numel() for n, p in model.named_parameters()
                            if p.requires_grad and "original_module" not in n)


def test_lora_calculator_reproduces_exercise_b6():
    assert strategies.lora_added(768, 768, 16) == 2 * 768 * 16 == 24_576


def run(settings, data, **kw):
    events = list(training.train(settings, data, **kw))
    return events[-1], events


def small_settings(name, **changes):
    values = dict(strategy="full", learning_rate=1e-3, epochs=3, batch_size=8, train_examples=32, seed=0)
    values.update(changes)
    return strategies.Settings(name, **values)


def test_frozen_parameters_are_bit_identical_after_training(tiny_models, monkeypatch):
    captured = {}
    original = training.apply_strategy

    def spy(model, strategy, targets="query, value"):
        model = original(model, strategy, targets)
        captured["model"] = model
        captured["before"] = {n: p.detach().clone() for n, p in model.named_parameters()}
        return model

    monkeypatch.setattr(training, "apply_strategy", spy)
    result, _ = run(small_settings(tiny_models["masked"], strategy="freeze_bottom_1", epochs=1),
                    datasets.builtin_data())
    after = dict(captured["model"].named_parameters())
    for name, before in captured["before"].items():
        frozen = name.startswith("bert.embeddings.") or name.startswith("bert.encoder.layer.0.")
        if frozen:
            assert torch.equal(after[name], before), name
    assert not torch.equal(after["classifier.weight"], captured["before"]["classifier.weight"])
    assert not torch.equal(after["bert.encoder.layer.1.output.dense.weight"],
                           captured["before"]["bert.encoder.layer.1.output.dense.weight"])


def test_training_loss_goes_down_on_a_tiny_model(tiny_models):
    # A random 2-layer BERT cannot generalise from 32 sentences, but it must fit them.
    result, events = run(small_settings(tiny_models["masked"], learning_rate=3e-3, epochs=10), datasets.builtin_data())
    losses = [h["loss"] for h in result.history]
    per_epoch = len(losses) // 10
    first, last = sum(losses[:per_epoch]) / per_epoch, sum(losses[-per_epoch:]) / per_epoch
    assert first > 0.6 and last < 0.5 * first
    assert [e.epoch for e in events if isinstance(e, training.Eval)] == list(range(11))


def test_same_seed_same_history_other_seed_other_history(tiny_models):
    data = datasets.builtin_data()
    a, _ = run(small_settings(tiny_models["masked"], epochs=1), data)
    b, _ = run(small_settings(tiny_models["masked"], epochs=1), data)
    c, _ = run(small_settings(tiny_models["masked"], epochs=1, seed=1), data)
    assert a.history == b.history and a.eval == b.eval
    assert a.history != c.history


def test_stop_ends_the_run_after_the_current_step(tiny_models):
    stop = threading.Event()
    events = training.train(small_settings(tiny_models["masked"], epochs=10), datasets.builtin_data(), stop=stop)
    steps = 0
    for event in events:
        if isinstance(event, training.Step):
            steps += 1
            if steps == 3:
                stop.set()
    assert steps == 3 and event.stopped and len(event.history) == 3


def test_classify_uses_the_fine_tuned_model(tiny_models):
    result, _ = run(small_settings(tiny_models["masked"], epochs=1), datasets.builtin_data())
    probs = training.classify(result.run_id, "A wonderful film.")
    assert set(probs) == {"negative", "positive"} and sum(probs.values()) == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(BadInput, match="Run a fine-tuning first"):
        training.classify("gone", "A wonderful film.")


def test_builtin_data_is_balanced_with_a_fixed_split():
    data = datasets.builtin_data()
    assert len(data.train) + len(data.validation) >= 300
    balance = data.balance()
    assert balance["train"]["positive"] == balance["train"]["negative"]
    assert balance["validation"]["positive"] == balance["validation"]["negative"]
    assert len({t for t, _ in data.train + data.validation}) == len(data.train) + len(data.validation)
    picked = datasets.take_train(data, 200, 0)
    assert sum(y for _, y in picked) == 100  # balanced subset


@pytest.mark.parametrize("kwargs,message", [
    (dict(learning_rate=-1), "at least 0"), (dict(learning_rate=2), "at most 1"), (dict(learning_rate="fast"), "number"),
    (dict(epochs=0), "epochs"), (dict(epochs=11), "epochs"), (dict(epochs=2.5), "whole"),
    (dict(batch_size=1), "batch size"), (dict(batch_size=65), "batch size"),
    (dict(train_examples=7), "train examples"), (dict(train_examples=265), "between 8 and 264"),
    (dict(strategy="bogus"), "Unknown strategy"), (dict(strategy="lora_r0"), "Unknown strategy"),
])
def test_bad_settings(tiny_models, kwargs, message):
    values = dict(model=tiny_models["masked"], strategy="full", learning_rate=5e-5, epochs=3, batch_size=16,
                  train_examples=200, seed=0)
    values.update(kwargs)
    with pytest.raises(BadInput, match=message):
        strategies.check_settings(**values, max_train=len(datasets.builtin_data().train))


def test_one_training_step_is_theta_minus_lr_times_autograds_gradient(tiny_models):
    """training.update (the step every loop of the lab takes, ULMFiT's stages included) against autograd by hand:
    with plain SGD at a constant rate, each weight moves by −lr·∂L/∂θ, and the step returns the batch's loss."""
    model = fresh(tiny_models["masked"]).eval()  # no dropout: the hand pass and the step see the same network
    tokenizer = models.load(tiny_models["masked"], "encoder", "masked").tokenizer
    batch = training.EncodedSentences(tokenizer, datasets.builtin_data().train[:8], "cpu").batch(range(8))
    params = [p for p in model.parameters() if p.requires_grad]
    loss = model(**batch).loss
    grads = torch.autograd.grad(loss, params)
    expected = [(p - 0.1 * g).detach() for p, g in zip(params, grads)]
    optimizer = torch.optim.SGD(params, lr=0.1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    assert training.update(model, batch, optimizer, scheduler) == pytest.approx(loss.item(), rel=1e-6)
    for p, want in zip(params, expected):
        torch.testing.assert_close(p.detach(), want, rtol=1e-5, atol=1e-6)
    assert all(p.grad is None for p in params)  # the gradients are freed after the step


def test_too_many_frozen_layers(tiny_models):
    with pytest.raises(BadInput, match="2 layers"):
        strategies.apply_strategy(fresh(tiny_models["masked"]), "freeze_bottom_3")


def good_csv(rows: int = 20) -> str:
    return "text,label\n" + "".join(f"sentence number {i},{'good' if i % 2 else 'bad'}\n" for i in range(rows))


def test_csv_good_without_and_with_split():
    data = datasets.parse_csv(good_csv(20).encode())
    assert data.labels == ["bad", "good"] and len(data.train) == 16 and len(data.validation) == 4
    with_split = "Text,Label,Split\nnice,pos,train\nbad,neg,train\n" + "".join(
        f"x{i},{'pos' if i % 2 else 'neg'},{'validation' if i < 4 else 'train'}\n" for i in range(10))
    data = datasets.parse_csv(with_split.encode("utf-8-sig"))
    assert len(data.validation) == 4 and len(data.train) == 8
    three = "text,label\n" + "".join(f"s{i},{'abc'[i % 3]}\n" for i in range(30))
    assert datasets.parse_csv(three.encode()).labels == ["a", "b", "c"]


@pytest.mark.parametrize("content,message", [
    (b"sentence,label\nhello,pos\n", "missing: text"),
    (good_csv(20).replace("sentence number 5,good", ",good").encode(), "Row 7 has an empty"),
    ("text,label\n" + "".join(f"s{i},same\n" for i in range(20)), "only one class"),
    (good_csv(20).encode("utf-16"), "not UTF-8"),
    (b"text,label\n" + b"caf\xe9,pos\n" * 20, "not UTF-8"),
    (good_csv(5001), "more than 5,000 rows"),
    ("text,label\n" + "x" * (5 * 1024 * 1024) + ",pos\n", "limit is 5 MB"),
    (good_csv(6), "at least 10"),
])
def test_bad_csv_loads_nothing(content, message):
    with pytest.raises(BadInput, match=message):
        datasets.parse_csv(content.encode() if isinstance(content, str) else content)


def test_generated_code_is_valid_training_arguments(tiny_models):
    from transformers import TrainingArguments

    for strategy in ("full", "freeze_bottom_2", "head_only", "lora_r8"):
        s = strategies.check_settings(tiny_models["masked"], strategy, 2e-5, 4, 8, 100, 3)
        code = codegen.training_code(s, "sentence-transformers/all-MiniLM-L6-v2")
        call = re.search(r"args = (TrainingArguments\(.*?\n\))", code, re.S).group(1)
        args = eval(call, {"TrainingArguments": TrainingArguments})
        assert (args.learning_rate, args.num_train_epochs, args.per_device_train_batch_size, args.seed) == \
            (2e-5, 4, 8, 3)
        assert args.warmup_steps == pytest.approx(0.1)
        compile(code, "<training code>", "exec")


# ------------------------------------------------------------ real model


@pytest.mark.slow
def test_minilm_default_run_beats_from_scratch():
    result = training.finetune(models.MINILM_NAME, "full", 5e-5, 3, 16, 200, 0, True)
    assert result["accuracy_after"] >= 0.85
    assert result["scratch"]["accuracy_after"] <= result["accuracy_after"] - 0.2
    assert result["trainable_params"] == result["total_params"] > 20_000_000
    assert [e["epoch"] for e in result["eval"]] == [1, 2, 3]


# ------------------------------------------------------------ API and browser


def test_finetune_api(client, tiny_models):
    result = client.predict(tiny_models["masked"], "head_only", 1e-3, 1, 8, 32, 0, True, api_name="/finetune")
    assert result["strategy"] == "head_only" and 0 < result["trainable_params"] < result["total_params"]
    assert len(result["history"]) == 4 and result["scratch"] is not None
    assert set(result["eval"][0]) == {"epoch", "loss", "accuracy"}


def test_the_finetune_api_streams_every_step_then_the_result(client, tiny_models):
    job = client.submit(tiny_models["masked"], "head_only", 1e-3, 2, 8, 16, 0, False, api_name="/finetune")
    result = job.result(timeout=300)
    *progress, last = job.outputs()
    assert last == result
    progress = [p for p in progress if p["status"] == "running"]  # (after the queue's place, if it waited)
    assert [p["step"] for p in progress] == [1, 2, 3, 4] and {p["total_steps"] for p in progress} == {4}
    assert [p["loss"] for p in progress] == [h["loss"] for h in result["history"]]


def test_two_students_at_once_each_get_their_own_run(client, tiny_models):
    jobs = [client.submit(tiny_models["masked"], "full", 1e-3, 1, 8, 16, seed, False, api_name="/finetune")
            for seed in (1, 2)]
    results = [job.result(timeout=300) for job in jobs]
    assert results[0]["history"] != results[1]["history"]
    assert all(len(r["history"]) == 2 for r in results)


def test_finetune_api_bad_input(client, tiny_models):
    with pytest.raises(AppError, match="learning rate"):
        client.predict(tiny_models["masked"], "full", -1e-5, 1, 8, 32, 0, False, api_name="/finetune")
    with pytest.raises(AppError, match="Unknown strategy"):
        client.predict(tiny_models["masked"], "half", 1e-3, 1, 8, 32, 0, False, api_name="/finetune")
    with pytest.raises(AppError, match="causal LM"):
        client.predict(tiny_models["causal"], "full", 1e-3, 1, 8, 32, 0, False, api_name="/finetune")


def test_finetune_tab_in_the_browser(page, tiny_models):
    # By a link, on the tiny model: the real MiniLM's default run is test_minilm_default_run_beats_from_scratch's.
    page.goto(f"{page.lab_url}?tab=finetune&model={tiny_models['masked']}", wait_until="load")
    page.get_by_text("Trainable:").first.wait_for(timeout=60000)
    page.get_by_role("button", name="Fine-tune", exact=True).click()
    page.get_by_text("before →").first.wait_for(timeout=120000)
    page.locator(".js-plotly-plot:visible").nth(1).wait_for(timeout=60000)  # the run's curves and the comparison
    assert page.locator(".js-plotly-plot:visible").count() >= 2
    assert page.get_by_text("Validation accuracy:").first.is_visible()
    page.get_by_role("button", name="Try the model you trained", exact=True).click()
    page.get_by_text("positive").locator("visible=true").first.wait_for()
    settle(page)  # the last outputs drawn before the picture
    screenshot(page, "finetune")
    assert page.outside_requests == []


def test_stop_frees_the_worker(page):
    open_tab(page, "Fine-tune")
    epochs = page.locator("#ft-epochs input[type=number]")
    epochs.fill("10")
    epochs.press("Enter")
    page.get_by_role("button", name="Fine-tune", exact=True).click()
    page.get_by_text(re.compile(r"step \d+ of")).first.wait_for(timeout=120000)
    # A click event: a real click first scrolls the button into view, which can wait minutes while the page
    # redraws the live curves on a busy machine.
    page.get_by_role("button", name="Stop", exact=True).dispatch_event("click")
    # The server takes the Stop at once; its answer has a line of its own, so that it can never write over the
    # run's last word ("Stopped.", after the current step and a measure of where it got to: slow on a busy
    # two-worker machine, so patience, not a time limit). `expect` says what a line read instead, should it fail.
    expect(page.locator("#ft-stop-note")).to_contain_text("Stop pressed", timeout=60000)
    expect(page.locator("#ft-stop-note")).to_be_visible()  # the note takes room only once it says something
    expect(page.locator("#ft-progress")).to_contain_text("Stopped.", timeout=300000)
    screenshot(page, "finetune-stopped")
    # The worker is free again: a new run starts instead of waiting behind a 10-epoch run. The time-out
    # is generous (a busy CI machine loads the model slowly); what is checked is that it starts at all.
    page.get_by_role("button", name="Fine-tune", exact=True).click()
    expect(page.locator("#ft-stop-note")).to_be_hidden()  # a new run clears the last Stop's note
    page.get_by_text(re.compile(r"step \d+ of")).first.wait_for(timeout=180000)
    page.get_by_role("button", name="Stop", exact=True).dispatch_event("click")


def test_finished_and_stopped_runs_release_their_model(tiny_models, monkeypatch):
    import gc
    import weakref

    made = []
    original = models.load_for_classification

    def tracked(*args, **kwargs):
        model, tokenizer = original(*args, **kwargs)
        made.append(weakref.ref(model))
        return model, tokenizer

    monkeypatch.setattr(models, "load_for_classification", tracked)
    data = datasets.builtin_data()
    list(training.train(small_settings(tiny_models["masked"], epochs=1), data, scratch=True))  # finished
    events = training.train(small_settings(tiny_models["masked"], epochs=5), data)
    for event in events:
        if isinstance(event, training.Step):
            break
    events.close()  # what Stop does to the running generator
    del event, events
    gc.collect()
    assert len(made) == 2 and all(ref() is None for ref in made)


def test_hub_slice_is_parsed_into_a_dataset(monkeypatch):
    import io
    import json

    page = {"features": [{"name": "sentence", "type": {"dtype": "string"}},
                         {"name": "label", "type": {"names": ["negative", "positive"]}}],
            "rows": [{"row": {"sentence": f"review {i}", "label": i % 2}} for i in range(100)]}
    monkeypatch.setattr(models, "hub_online", lambda: True)
    urls = []
    monkeypatch.setattr(datasets.urllib.request, "urlopen",
                        lambda url, timeout: urls.append(url) or io.BytesIO(json.dumps(page).encode()))
    data = datasets.hub_dataset(next(iter(datasets.HUB_DATASETS)))
    assert data.labels == ["negative", "positive"] and len(data.train) == 300 and len(data.validation) == 100
    assert all(u.startswith("https://datasets-server.huggingface.co/rows?dataset=stanfordnlp%2Fsst2") for u in urls)
    monkeypatch.setattr(models, "hub_online", lambda: False)
    with pytest.raises(BadInput, match="cannot be reached"):
        datasets.hub_dataset(next(iter(datasets.HUB_DATASETS)))


def test_a_bad_csv_upload_gives_a_message_in_the_browser(page, tmp_path):
    open_tab(page, "Fine-tune")
    page.get_by_text("Trainable:").first.wait_for(timeout=60000)
    page.get_by_label("Upload a CSV (text,label)").check()
    bad = tmp_path / "reviews.csv"
    bad.write_text("sentence,stars\nnice,5\n")
    page.locator("#ft-upload input[type=file]").set_input_files(str(bad))
    page.get_by_text("missing: text, label").first.wait_for(timeout=30000)
    page.get_by_text("Nothing from this file was loaded").first.wait_for()
    good = tmp_path / "good.csv"
    good.write_text(good_csv(40))
    page.locator("#ft-upload input[type=file]").set_input_files(str(good))
    page.get_by_text("32 training and 8 validation").first.wait_for(timeout=30000)


def test_an_abandoned_api_run_frees_the_training_slot(app_server, client, tiny_models):
    """A script that starts a long run and dies (its connection closes) must not keep the only
    training slot: the run stops after its current step and the next student's run goes ahead."""
    import subprocess
    import sys
    import time

    code = ("import sys; from gradio_client import Client; from gradio_client.utils import Status; "
            f"job = Client({app_server['url']!r}, verbose=False, ssl_verify=False).submit({models.MINILM_NAME!r}, 'full', 5e-5, 10, 16, "
            "236, 0, True, api_name='/finetune')\n"
            "import time\nwhile job.status().code not in (Status.PROCESSING, Status.ITERATING): time.sleep(0.05)\n"
            "print('TRAINING', flush=True); job.result()")
    abandoned = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert abandoned.stdout.readline().strip() == "TRAINING"  # its progress is streaming: it holds the slot
    finally:
        abandoned.kill()  # the script dies mid-run
        abandoned.wait()
    started = time.perf_counter()
    result = client.predict(tiny_models["masked"], "head_only", 1e-3, 1, 8, 16, 0, False, api_name="/finetune")
    waited = time.perf_counter() - started
    assert len(result["history"]) == 2
    # The abandoned run (10 epochs of MiniLM and again from scratch) would hold the slot for minutes.
    assert waited < 90, f"the next run waited {waited:.0f} s behind an abandoned one"
