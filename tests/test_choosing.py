"""Choosing a model: model cards against the loaded weights and config, few-shot label probabilities and
accuracy against hand computations (and batched = one at a time), bias probe and domain perplexity against
the model's own forward pass, the task card, bad input, the API and the tab in a browser."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import open_tab, screenshot

from labs.choosing import bias, cards, domains, few_shot, tab_cards, tasks
from labs.core.errors import BadInput
from labs.core.models import models
from labs.core.work import lm


@pytest.fixture(scope="module")
def smol():
    return models.load(models.SMOLLM2_NAME, "causal")


@pytest.fixture(scope="module")
def tiny(tiny_models):
    return {key: models.load(name) for key, name in tiny_models.items()}


# ---------------------------------------------------------------- model cards


@pytest.mark.parametrize("key", ["masked", "causal", "seq2seq", "pretraining"])
def test_card_counts_equal_the_loaded_weights_and_config(tiny, key):
    loaded = tiny[key]
    c = cards.card(loaded)
    assert c.params == sum(p.numel() for p in loaded.model.parameters())
    assert c.embedding_params + c.other_params == c.params and c.embedding_params > 0
    config = loaded.model.config
    assert (c.layers, c.hidden_size, c.heads) == (config.num_hidden_layers, config.hidden_size,
                                                  config.num_attention_heads)
    assert c.vocab_size == len(loaded.tokenizer)


def test_real_model_cards(smol):
    minilm = models.load(models.MINILM_NAME)
    s, m = cards.card(smol), cards.card(minilm)
    assert (s.layers, s.hidden_size, s.heads, s.tokenizer) == (30, 576, 9, "byte-level BPE")
    assert s.params == sum(p.numel() for p in smol.model.parameters())  # the tied lm_head counted once
    assert (m.layers, m.hidden_size, m.heads, m.tokenizer, m.vocab_size) == (6, 384, 12, "WordPiece", 30522)
    ms, tokens = cards.latency(minilm)
    assert ms > 0 and tokens == len(minilm.tokenizer(cards.LATENCY_TEXT)["input_ids"])


def test_every_model_offered_has_a_card_and_the_hub_ones_say_not_measured(tiny_models):
    result = cards.model_card([], measure=False)
    names = [c["name"] for c in result["models"]]
    assert set(models.registry()) <= set(names)
    missing = [c for c in result["models"] if c["source"] == "not here"]
    assert {"bert-base-uncased", "gpt2", "roberta-base"} <= {c["name"] for c in missing}
    assert all("not measured here" in c["note"] and c["params"] is None for c in missing)
    table, note, _ = tab_cards.on_cards(False)
    assert table.count("\n") == 1 + len(models.registry()) and "Not measured here" in note


# ---------------------------------------------------------------- few-shot prompting


def test_label_probabilities_equal_a_hand_computation(smol):
    ex = few_shot.example(smol, 4, 1, few_shot.LABEL_SETS["arbitrary"])
    ids = smol.tokenizer(ex.prompt, return_tensors="pt")["input_ids"]
    assert smol.tokenizer.decode(ids[0]) == ex.prompt  # the prompt shown is exactly what the model reads
    assert ex.tokens == ids.shape[1]
    with torch.inference_mode():
        logp = torch.log_softmax(smol.model(ids).logits[0, -1].float(), dim=-1)
    wanted = [smol.tokenizer(" apple")["input_ids"][0], smol.tokenizer(" banana")["input_ids"][0]]
    assert ex.probs["apple"] == pytest.approx(float(logp[wanted[0]].exp()), abs=1e-5)
    assert ex.probs["banana"] == pytest.approx(float(logp[wanted[1]].exp()), abs=1e-5)
    assert ex.prompt.count("Review:") == 5 and ex.prompt.endswith("Sentiment:")


def test_accuracy_equals_a_hand_loop_and_batched_equals_alone(tiny):
    loaded, labels = tiny["causal"], ("positive", "negative")
    _, evaluation = few_shot.dataset()
    demos = few_shot.demonstrations(1, 0)  # the tiny GPT-2 reads 128 tokens
    ids = few_shot.label_ids(loaded, labels)
    right = 0
    for text, gold in evaluation:
        row = loaded.tokenizer(few_shot.prompt(demos, text, labels), return_tensors="pt")["input_ids"]
        with torch.inference_mode():
            last = loaded.model(row).logits[0, -1]
        right += labels[int(torch.argmax(last[list(ids)]))] == gold
    assert few_shot.accuracy(loaded, 1, 0, labels) == right / len(evaluation)
    prompts = [few_shot.prompt(demos, t, labels) for t, _ in evaluation[:6]]
    lm.cache.clear()
    together = few_shot.label_logprobs(loaded, prompts, ids)
    lm.cache.clear()
    alone = [few_shot.label_logprobs(loaded, [p], ids)[0] for p in prompts]
    np.testing.assert_allclose(np.array(together), np.array(alone), atol=1e-5)


def test_the_curve_has_every_shot_count_and_seed(tiny):
    r = few_shot.few_shot(tiny["causal"], [0, 1], "arbitrary", [0, 1]).to_json()
    assert [c["shots"] for c in r["curve"]] == [0, 1] and r["labels"] == {"positive": "apple", "negative": "banana"}
    assert all(len(c["by_seed"]) == 2 and c["min"] <= c["accuracy"] <= c["max"] for c in r["curve"])
    assert r["curve"][0]["by_seed"][0] == r["curve"][0]["by_seed"][1]  # zero shots: no order to vary
    assert r["eval_size"] >= 40 and len(few_shot.dataset()[0]) >= 16


@pytest.mark.parametrize("labels", ["", "good/good", "a/b/c", 5, "two words/bad"])
def test_bad_labels_are_refused_with_a_sentence(labels):
    with pytest.raises(BadInput):
        few_shot.check_labels(labels)


def test_bad_shots_and_models_are_refused(tiny):
    with pytest.raises(BadInput):
        few_shot.few_shot(tiny["causal"], [0, 99])
    with pytest.raises(BadInput):
        few_shot.few_shot(tiny["masked"], [0])


# ---------------------------------------------------------------- bias probe, domain shift


def test_bias_probe_equals_the_models_own_probabilities(tiny, smol):
    for key, loaded in (("causal", smol), ("masked", tiny["masked"])):  # the tiny GPT-2's BPE splits " he"
        r = bias.probe(loaded).to_json()
        row = next(x for x in r["rows"] if x["occupation"] == "nurse")
        text = bias.sentence(loaded, r["template"], "nurse")
        ids = loaded.tokenizer(text, return_tensors="pt")["input_ids"]
        with torch.inference_mode():
            logits = loaded.model(ids).logits[0]
        at = -1 if key == "causal" else int((ids[0] == loaded.tokenizer.mask_token_id).nonzero()[0, 0])
        probs = torch.softmax(logits[at].double(), -1)
        he = loaded.tokenizer((" he" if key == "causal" else "he"), add_special_tokens=False)["input_ids"][0]
        assert row["p_he"] == pytest.approx(float(probs[he]), rel=1e-4)
        assert [x["log_ratio"] for x in r["rows"]] == sorted((x["log_ratio"] for x in r["rows"]), reverse=True)
    assert "does not show" in r["what_it_shows"]


@pytest.mark.parametrize("template", ["no slots here", "The {occupation} said", "[MASK] told the {occupation}"])
def test_bad_templates_are_refused(tiny, template):
    with pytest.raises(BadInput):
        bias.probe(tiny["masked"], template)


def test_each_perplexity_equals_exp_of_the_models_loss(smol):
    r = domains.domain_shift(smol, "The weather was lovely today.").to_json()
    assert {d["domain"] for d in r["domains"]} == {"news", "conversation", "legal", "biomedical", "code",
                                                   "social media"}
    for item in [r["domains"][2]["texts"][0], r["yours"]]:
        ids = smol.tokenizer(item["text"], return_tensors="pt")["input_ids"]
        with torch.inference_mode():
            loss = smol.model(ids, labels=ids).loss
        assert item["perplexity"] == pytest.approx(math.exp(float(loss)), rel=1e-4)


# ---------------------------------------------------------------- task card


def test_task_card_checks_the_pick_and_runs_a_decoder(tiny):
    right = tasks.check_pick("generate", "decoder", "next-token LM head", "The cat", tiny["causal"])
    assert right.architecture_right and right.head_right and right.output is not None
    wrong = tasks.check_pick("tag", "decoder", "next-token LM head")
    assert not wrong.architecture_right and wrong.course_pick["head"] == "token classification head"
    assert "Not run here" in wrong.note
    with pytest.raises(BadInput):
        tasks.check_pick("dance", "decoder", "next-token LM head")


# ---------------------------------------------------------------- API and browser


def test_api_endpoints(client, tiny_models):
    card = client.predict([tiny_models["causal"]], False, api_name="/model_card")
    assert card["models"][0]["name"] == tiny_models["causal"] and card["models"][0]["params"] > 0
    shots = client.predict(tiny_models["causal"], [0, 1], "natural", [0], api_name="/few_shot")
    assert [c["shots"] for c in shots["curve"]] == [0, 1] and "Sentiment:" in shots["example"]["prompt"]
    probe = client.predict(tiny_models["masked"], "", api_name="/bias_probe")
    assert len(probe["rows"]) == 20
    shift = client.predict(tiny_models["causal"], "hello there", api_name="/domain_shift")
    assert len(shift["domains"]) == 6 and shift["yours"]["perplexity"] > 0
    with pytest.raises(Exception, match="slash"):
        client.predict(tiny_models["causal"], [0], "a/b/c", [0], api_name="/few_shot")
    with pytest.raises(Exception, match="occupation"):
        client.predict(tiny_models["causal"], "nothing to fill", api_name="/bias_probe")


def test_the_tab_shows_its_first_results(page):
    open_tab(page, "Choosing a model")
    page.get_by_text("Families and variants, measured here").wait_for(timeout=30000)
    page.get_by_text("Not measured here").first.wait_for(timeout=60000)  # the card table's note
    page.get_by_text("Sentiment:", exact=False).first.wait_for(timeout=60000)
    page.get_by_text("What this shows, and what it does not").wait_for(timeout=60000)
    screenshot(page, "choosing")


def test_masked_domain_scores_equal_a_hand_loop_of_one_mask_at_a_time(tiny_models):
    loaded = models.load(tiny_models["masked"], "masked")
    text = domains.domain_texts()["news"][0]
    losses, correct = domains.masked_losses(loaded, [text])[0]
    ids = loaded.tokenizer(text)["input_ids"]
    hand_losses, hand_correct = [], []
    for position, token in enumerate(ids):
        if token in loaded.tokenizer.all_special_ids:
            continue
        masked = torch.tensor([ids[:position] + [loaded.tokenizer.mask_token_id] + ids[position + 1:]])
        with torch.no_grad():
            logp = torch.log_softmax(loaded.model(input_ids=masked).logits[0, position].double(), -1)
        hand_losses.append(-float(logp[token]))
        hand_correct.append(int(logp.argmax()) == token)
    np.testing.assert_allclose(losses, hand_losses, rtol=1e-4)
    assert list(correct) == hand_correct
    r = domains.domain_shift(loaded, text).to_json()
    assert r["metric"] == "pseudo-perplexity"
    assert r["yours"]["perplexity"] == pytest.approx(math.exp(np.mean(hand_losses)), rel=1e-4)
    assert r["yours"]["accuracy"] == pytest.approx(np.mean(hand_correct))
    assert all(0 <= d["accuracy"] <= 1 for d in r["domains"])
