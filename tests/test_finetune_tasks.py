"""Fine-tune task heads: sentence pairs, NER (BIO) and extractive QA: label alignment, span choice and
word labels against independent oracles, the schedule against get_linear_schedule_with_warmup, the
real MiniLM runs beating from scratch, bad input, the API and the browser."""

from __future__ import annotations

import pytest
import torch
from conftest import screenshot
from gradio_client.exceptions import AppError
from playwright.sync_api import expect

from labs.core.errors import BadInput
from labs.core.models import models
from labs.core.work.padding import pad_rows
from labs.finetune import predict, strategies, tasks, training


def small(name, task, **changes):
    values = dict(strategy="full", learning_rate=1e-3, epochs=1, batch_size=8, train_examples=16, seed=0, task=task)
    values.update(changes)
    return strategies.Settings(name, **values)


def run(settings):
    events = list(training.train(settings, tasks.task_data(settings.task)))
    return events[-1], events


def test_builtin_task_sets_have_fixed_splits():
    for task in ("pair", "ner", "qa"):
        data = tasks.task_data(task)
        assert len(data.train) == 240 and len(data.validation) == 80
    pairs = tasks.pair_data()
    assert sum(y for _, y in pairs.train) == 120  # balanced
    for row in tasks.qa_data().train + tasks.qa_data().validation:
        assert row["context"][row["answer_start"]:].startswith(row["answer"])


def test_alignment_puts_minus_100_on_continuations_and_specials(tiny_models):
    _, tokenizer = models.load_for_task(tiny_models["masked"], "token_classification", labels=tasks.NER_LABELS)
    row = {"tokens": ["Okonkwo", "flew", "to", "Ljubljana", "."], "tags": ["B-PER", "O", "O", "B-LOC", "O"]}
    encoded = tasks.EncodedTaskRows("ner", tokenizer, [row], "cpu")
    enc = tokenizer(row["tokens"], is_split_into_words=True)
    word_ids, labels = enc.word_ids(), encoded.labels[0]
    assert any(word_ids[i] == word_ids[i - 1] is not None for i in range(1, len(word_ids)))  # a word splits
    for i, (w, y) in enumerate(zip(word_ids, labels)):
        first = w is not None and (i == 0 or word_ids[i - 1] != w)
        assert y == (tasks.NER_LABELS.index(row["tags"][w]) if first else -100)
    assert tasks.align_labels([None, 0, 0, 0, 1, None], [3, 0]) == [-100, 3, -100, -100, 0, -100]


def oracle_span(start_logits, end_logits, sequence_ids, max_len=tasks.MAX_ANSWER_TOKENS):
    """transformers 4's QuestionAnsweringPipeline decoding (the pipeline is gone in transformers 5):
    mask non-context tokens, softmax, outer product, keep start ≤ end < start + max_len, argmax."""
    import numpy as np

    mask = np.array([s != 1 for s in sequence_ids])
    s, e = start_logits.numpy().copy(), end_logits.numpy().copy()
    s[mask], e[mask] = -10000.0, -10000.0
    s, e = np.exp(s - s.max()), np.exp(e - e.max())
    s, e = s / s.sum(), e / e.sum()
    outer = np.tril(np.triu(np.outer(s, e)), max_len - 1)
    best = int(np.argmax(outer))
    return np.unravel_index(best, outer.shape)


def padded_by_hand(task: str, encoded, index: list[int], pad: int) -> dict:
    """The oracle: each batch padded as LM Lab padded it by hand before it used transformers' collators
    (labs.core.work.padding on the right, segment ids for pairs, -100 after a NER row's labels)."""
    rows = [encoded.ids[i] for i in index]
    if task == "sentiment":
        return {**pad_rows(rows, pad), "labels": torch.tensor([encoded.labels[i] for i in index])}
    if task == "pair":
        return {**pad_rows(rows, pad, segments=[encoded.segments[i] for i in index]),
                "labels": torch.tensor([encoded.labels[i][0] for i in index])}
    batch = pad_rows(rows, pad)
    if task == "ner":
        width = batch["input_ids"].shape[1]
        return {**batch, "labels": torch.tensor([encoded.labels[i] + [tasks.IGNORE] * (width - len(encoded.labels[i]))
                                                 for i in index])}
    return {**batch, "start_positions": torch.tensor([encoded.labels[i][0] for i in index]),
            "end_positions": torch.tensor([encoded.labels[i][1] for i in index])}


@pytest.mark.parametrize("task", list(tasks.TASKS))
def test_the_collators_pad_each_batch_as_the_hand_padding_did(tiny_models, task):
    _, tokenizer = models.load_for_task(tiny_models["masked"], tasks.HEADS[task], num_labels=len(tasks.NER_LABELS))
    if task == "sentiment":
        encoded = training.EncodedSentences(tokenizer, training.builtin_data().validation, "cpu")
    else:
        encoded = tasks.EncodedTaskRows(task, tokenizer, tasks.task_data(task).validation, "cpu")
    lengths = [len(ids) for ids in encoded.ids]
    index = [lengths.index(min(lengths)), lengths.index(max(lengths)), 3, 7]  # the shortest row beside the longest
    batch, oracle = encoded.batch(index), padded_by_hand(task, encoded, index, tokenizer.pad_token_id)
    assert set(batch) == set(oracle)
    for name in oracle:
        assert batch[name].dtype == oracle[name].dtype and torch.equal(batch[name], oracle[name]), name


def test_qa_span_equals_the_pipeline_decoding_on_random_and_trained_models(tiny_models):
    result, _ = run(small(tiny_models["masked"], "qa", epochs=2))
    model, tokenizer, _, _ = training.kept_model(result.run_id)
    random_model, _ = models.load_for_task(tiny_models["masked"], "question_answering", seed=3)
    for net in (random_model, model):
        for row in tasks.qa_data().validation[:8]:
            enc = tokenizer(row["question"], row["context"], return_tensors="pt")
            with torch.no_grad():
                out = net(**enc)
            start, end, _ = tasks.best_span(out.start_logits[0], out.end_logits[0], enc.sequence_ids(0))
            assert (start, end) == tuple(int(x) for x in oracle_span(out.start_logits[0], out.end_logits[0],
                                                                       enc.sequence_ids(0)))
            assert start <= end < start + tasks.MAX_ANSWER_TOKENS and enc.sequence_ids(0)[start] == 1


def test_ner_word_labels_equal_the_token_classification_pipeline(tiny_models):
    from transformers import pipeline

    result, _ = run(small(tiny_models["masked"], "ner"))
    model, tokenizer, _, _ = training.kept_model(result.run_id)
    random_model, _ = models.load_for_task(tiny_models["masked"], "token_classification", labels=tasks.NER_LABELS,
                                           seed=5)
    text = "Maria Okonkwo flew from Washington to Ljubljana to meet Zalando."
    for net, run_id in ((model, result.run_id), (random_model, None)):
        oracle = pipeline("token-classification", model=net, tokenizer=tokenizer, aggregation_strategy="first")
        expected = [(e["entity_group"], e["start"], e["end"]) for e in oracle(text)]
        kept = training.keep_model(net, tokenizer, tasks.NER_LABELS, "ner") if run_id is None else run_id
        got = predict.predict_task("ner", text, "", kept)
        assert [(e["entity_group"], e["start"], e["end"]) for e in got["entities"]] == expected
        assert [p["token"] for p in got["pieces"] if not p["first"] and not p["special"]]  # continuation pieces shown


def test_schedule_is_the_optimizers_rate_and_equals_linear_warmup(tiny_models):
    from transformers import get_linear_schedule_with_warmup

    result, events = run(small(tiny_models["masked"], "pair", epochs=3, train_examples=24))
    total = len(result.history)
    param = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.AdamW([param], lr=1e-3)
    oracle = get_linear_schedule_with_warmup(optimizer, round(0.1 * total), total)
    expected = []
    for _ in range(total):
        expected.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        oracle.step()
    assert result.schedule == pytest.approx(expected, rel=1e-12, abs=0)
    assert [e.lr for e in events if isinstance(e, training.Step)] == result.schedule


@pytest.mark.parametrize("task,metric", [("pair", "accuracy"), ("ner", "entity_f1"), ("qa", "exact_match")])
def test_each_task_trains_and_reports_its_metric(tiny_models, task, metric):
    result, _ = run(small(tiny_models["masked"], task))
    assert result.task == task and metric in result.metrics_after and 0 <= result.accuracy_after <= 1
    assert result.accuracy_after == result.metrics_after[metric] and len(result.samples) >= 3
    assert predict.predict_task(task, *predict.EXAMPLES[task], result.run_id)["task"] == task


def test_metrics_by_hand():
    assert tasks.entity_spans(["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-ORG"]) == \
        [("PER", 0, 1), ("LOC", 3, 3), ("LOC", 4, 4), ("ORG", 5, 5)]
    f1 = tasks.entity_f1([["B-PER", "I-PER", "O", "B-LOC"]], [["B-PER", "O", "O", "B-LOC"]])
    assert f1["precision"] == 0.5 and f1["recall"] == 0.5 and f1["entity_f1"] == 0.5
    assert tasks.answer_scores("The Red Cross", "red cross") == (1.0, 1.0)
    assert tasks.answer_scores("in Lisbon today", "Lisbon") == (0.0, pytest.approx(0.5))


def test_bad_input(tiny_models):
    with pytest.raises(BadInput, match="not in its context"):
        tasks.check_answer("Anna lives in Oslo.", "Paris", 14)
    with pytest.raises(BadInput, match="Unknown task"):
        training.finetune(tiny_models["masked"], "full", 1e-3, 1, 8, 16, 0, False, "summarise")
    with pytest.raises(BadInput, match="causal LM|not an encoder"):
        training.finetune(tiny_models["causal"], "full", 1e-3, 1, 8, 16, 0, False, "qa")
    with pytest.raises(BadInput, match="Run a fine-tuning first"):
        predict.predict_task("qa", "Who?", "Anna.", "gone")


def test_finetune_api_with_a_task_and_predict_task(client, tiny_models):
    result = client.predict(tiny_models["masked"], "full", 1e-3, 1, 8, 16, 0, True, "ner", api_name="/finetune")
    assert result["task"] == "ner" and result["metrics"]["name"] == "entity_f1"
    assert result["metrics"]["scratch_after"] is not None and len(result["schedule"]) == len(result["history"])
    answer = client.predict("ner", "Anna flew to Oslo.", "", result["run_id"], "", api_name="/predict_task")
    assert answer["task"] == "ner" and answer["pieces"]
    with pytest.raises(AppError, match="Unknown task"):
        client.predict(tiny_models["masked"], "full", 1e-3, 1, 8, 16, 0, False, "poems", api_name="/finetune")


# ------------------------------------------------------------ real model (MiniLM), kept short


@pytest.mark.slow
@pytest.mark.parametrize("task", ["ner", "qa"])
def test_minilm_task_run_beats_from_scratch(task):
    result = training.finetune(models.MINILM_NAME, "full", 3e-4, 2, 16, 96, 0, True, task)
    name = result["metrics"]["name"]
    assert result["metrics"]["after"][name] >= result["metrics"]["scratch_after"][name] + 0.1


@pytest.fixture(scope="module")
def tiny_finetune_page(browser, app_server, tiny_models):
    """One page for the task runs below, Fine-tune opened by its link on the tiny model: each run replaces the
    last one's results, and each test waits for its own run's "Done." and its own task's view."""
    context = browser.new_context(viewport={"width": 1400, "height": 2400})
    page = context.new_page()
    page.goto(f"{app_server['url']}?tab=finetune&model={tiny_models['masked']}", wait_until="load")
    page.get_by_text("Trainable:").first.wait_for(timeout=60000)
    yield page
    context.close()


@pytest.mark.parametrize("task,view", [("pair", "segment 1"), ("ner", "-100"), ("qa", "Answer:")])
def test_every_task_run_draws_its_curves_and_view_in_the_browser(tiny_finetune_page, task, view):
    # On the tiny model, by the tab's link: what the page draws is under test here; the real model's runs of each
    # task are test_minilm_task_run_beats_from_scratch's.
    page = tiny_finetune_page
    page.get_by_label("Task", exact=True).click()
    page.get_by_role("option", name=tasks.TASKS[task]).click()
    epochs = page.locator("#ft-epochs input[type=number]")
    epochs.fill("1")
    epochs.press("Enter")
    page.get_by_role("button", name="Fine-tune", exact=True).click()
    progress = page.locator("#ft-progress")
    expect(progress).not_to_contain_text("Done.")  # this run's start (a page event, at once) ...
    expect(progress).to_contain_text("Done.", timeout=180000)  # ... and its end
    page.get_by_text("before →").first.wait_for(timeout=60000)
    page.locator(".js-plotly-plot:visible").nth(1).wait_for(timeout=60000)
    page.get_by_role("button", name="Try the model you trained", exact=True).click()
    page.locator("#ft-task-view").get_by_text(view).first.wait_for(timeout=60000)
    screenshot(page, f"finetune_{task}")
