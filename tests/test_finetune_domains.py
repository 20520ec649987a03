"""Fine-tune's domain shift: a sentiment model trained on film reviews only, measured on every domain of the
built-in set (the Choosing a model lab's item 5 points here)."""

from __future__ import annotations

import csv

import pytest
import torch
from conftest import open_tab
from gradio_client.exceptions import AppError

from labs.core.errors import BadInput
from labs.finetune import data as datasets
from labs.finetune import report, strategies, training


def test_film_only_data_trains_on_films_and_validates_on_every_domain():
    with datasets.BUILTIN_CSV.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    film_train = {r["text"] for r in rows if r["split"] == "train" and r["domain"] == "films"}
    films, everything = datasets.builtin_data("films"), datasets.builtin_data()
    assert {t for t, _ in films.train} == film_train and len(films.train) >= 64
    assert films.validation == everything.validation  # the same fixed validation set, every domain
    assert set(films.validation_domains) == set(datasets.DOMAINS)
    assert films.balance()["train"]["positive"] == films.balance()["train"]["negative"]
    assert {r["domain"] for r in rows} == set(datasets.DOMAINS)
    with pytest.raises(BadInput, match="Unknown domain"):
        datasets.builtin_data("<b>cars</b>")


def test_accuracy_per_domain_is_the_hand_count_and_pools_to_the_overall_accuracy(tiny_models):
    s = strategies.check_settings(tiny_models["masked"], "full", 1e-3, 1, 8, 32, 0)
    data = datasets.builtin_data("films")
    *_, result = training.train(s, data, keep_for_try=True)
    model, tokenizer, _, _ = training.kept_model(result.run_id)
    hand: dict[str, list[bool]] = {}
    with torch.no_grad():  # one sentence at a time: the prediction is its largest logit
        for (text, label), domain in zip(data.validation, data.validation_domains):
            logits = model(**tokenizer(text, return_tensors="pt")).logits[0]
            hand.setdefault(domain, []).append(int(logits.argmax()) == label)
    assert [d["domain"] for d in result.domains] == [d for d in datasets.DOMAINS if d in hand]
    for d in result.domains:
        assert d["n"] == len(hand[d["domain"]])
        assert d["accuracy_after"] == pytest.approx(sum(hand[d["domain"]]) / d["n"])
        assert d["trained_on"] == (d["domain"] == "films")
    pooled = sum(d["accuracy_after"] * d["n"] for d in result.domains) / len(data.validation)
    assert pooled == pytest.approx(result.accuracy_after)
    text = report.domain_shift_text(result)
    assert text.startswith("**Domain shift:** trained on films only") and "| films (trained on) |" in text


def test_the_api_trains_on_one_domain_and_refuses_it_for_other_tasks(client, tiny_models):
    result = client.predict(tiny_models["masked"], "head_only", 1e-3, 1, 8, 200, 0, False, "sentiment", "films",
                            api_name="/finetune")
    assert result["train_domain"] == "films"
    assert len(result["history"]) == 8  # 200 asked, 64 film reviews there: all of them, in 8 batches of 8
    assert sum(d["n"] for d in result["domains"]) == len(datasets.builtin_data().validation)
    assert [d["domain"] for d in result["domains"] if d["trained_on"]] == ["films"]
    everything = client.predict(tiny_models["masked"], "head_only", 1e-3, 1, 8, 32, 0, False, api_name="/finetune")
    assert everything["train_domain"] is None and all(d["trained_on"] for d in everything["domains"])
    with pytest.raises(AppError, match="sentiment task"):
        client.predict(tiny_models["masked"], "head_only", 1e-3, 1, 8, 32, 0, False, "ner", "films",
                       api_name="/finetune")
    with pytest.raises(AppError, match="Unknown domain"):
        client.predict(tiny_models["masked"], "head_only", 1e-3, 1, 8, 32, 0, False, "sentiment", "cars",
                       api_name="/finetune")


def test_a_link_opens_fine_tune_on_film_reviews_only(page, app_server):
    page.goto(app_server["url"] + "?tab=finetune&data=films", wait_until="load")
    page.get_by_text("trained on films only").first.wait_for(timeout=60000)
    page.get_by_text("Trainable:").first.wait_for(timeout=60000)  # the tab's first results are in
    # the training-examples slider now holds 64; the first results' events, sent with the default 200, passed
    # Gradio's range check (its maximum never drops below the built-in set's size)
    assert page.get_by_text("is greater than maximum").count() == 0
    assert page.get_by_text("must be between").count() == 0  # nor the lab's own check
    assert page.get_by_label("Built-in, film reviews only (then tested on every domain)").is_checked()
    open_tab(page, "Choosing a model")
    link = page.get_by_role("link", name="train a sentiment classifier on film reviews only")
    assert "tab=finetune&data=films" in link.get_attribute("href")
    assert link.get_attribute("target") == "_blank"  # Gradio opens it beside this page: nothing here is lost
