"""Attention, what it costs and long documents: the sizes the cost curve reports against the model's own
tensors, the model's own error past its position table, the long document's windows, its classifier against
an independent one-at-a-time computation, the real offline MiniLM, the API and the browser. Timings are never
asserted here (tests/bench_attention_cost.py prints them)."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import torch
from conftest import open_tab, screenshot
from gradio_client.exceptions import AppError

from labs.attention import cost, layers
from labs.attention import long_document as ld
from labs.core.errors import BadInput
from labs.core.models import models


def test_tiny_bert_curve_sizes_are_the_real_tensors_and_grow_as_n_squared_and_n(tiny_models):
    loaded = models.load(tiny_models["masked"], *cost.FAMILIES)
    result = cost.attention_cost(loaded)
    assert [p.tokens for p in result.points] == [16, 32, 64, 128]  # up to the tiny model's 128 positions
    config = loaded.model.config
    for p in result.points:
        ids = torch.tensor([cost.document_ids(loaded, p.tokens)])
        with torch.no_grad():
            own = loaded.model.base_model(input_ids=ids, output_attentions=True).attentions[0]
        assert p.attention_bytes == own.element_size() * own.numel() == config.num_attention_heads * p.tokens ** 2 * 4
        assert p.ffn_bytes == p.tokens * config.intermediate_size * 4
        assert min(p.forward_ms, p.attention_ms, p.projections_ms, p.ffn_ms) > 0
    for a, b in zip(result.points, result.points[1:]):  # n doubles: the n² part × 4, the n part × 2
        assert b.attention_bytes == 4 * a.attention_bytes and b.ffn_bytes == 2 * a.ffn_bytes
        assert b.attention_flops == 4 * a.attention_flops and b.ffn_flops == 2 * a.ffn_flops
    assert cost.attention_cost(loaded) is result  # measured once per model, then kept


def test_the_timed_attention_core_is_the_models_own(tiny_models):
    loaded = models.load(tiny_models["masked"], *cost.FAMILIES)
    arch, ids = layers.for_model(loaded), torch.tensor(cost.document_ids(loaded, 16))
    assert loaded.tokenizer.convert_ids_to_tokens(ids.tolist())[::15] == ["[CLS]", "[SEP]"]
    with torch.no_grad():
        x = arch.embeddings(ids, torch.zeros_like(ids))["embedded"]
        parts = arch.qkv(0, x)
        core = layers.attention_core(parts["q_heads"], parts["k_heads"], parts["v_heads"], arch.scale(0), False)
        own = loaded.model.base_model(input_ids=ids[None], output_attentions=True).attentions[0][0]
    np.testing.assert_allclose(core["weights"].numpy(), own.numpy(), atol=1e-6)


def test_past_the_table_the_models_own_error_and_the_tokenizers_truncation(tiny_models):
    loaded = models.load(tiny_models["masked"], *cost.FAMILIES)
    limit = cost.attention_cost(loaded).limit
    assert limit.kind == "table" and limit.positions == 128 and limit.tried_tokens == 138
    with pytest.raises(Exception) as raised:
        loaded.model.base_model(input_ids=torch.tensor([cost.document_ids(loaded, 138)]))
    assert limit.error == f"{type(raised.value).__name__}: {raised.value}" and limit.truncated_to == 128
    gpt2 = cost.attention_cost(models.load(tiny_models["causal"], *cost.FAMILIES)).limit
    assert gpt2.error.startswith("IndexError") and gpt2.truncated_to == 128


def test_minilm_curve_to_512_tokens_and_its_limit():
    result = cost.attention_cost(models.load(models.MINILM_NAME, *cost.FAMILIES)).to_json()
    assert [p["tokens"] for p in result["points"]] == list(cost.LENGTHS)
    last = result["points"][-1]
    assert last["attention_bytes"] == 12 * 512 * 512 * 4 and last["ffn_bytes"] == 512 * 1536 * 4
    assert result["limit"]["positions"] == 512 and result["limit"]["truncated_to"] == 512
    assert "522" in result["limit"]["error"] and "512" in result["limit"]["error"]


def test_windows_follow_the_textbook():
    spans = ld.windows(1133, 510)  # the built-in review in MiniLM's tokens; 510 = 512 less [CLS] and [SEP]
    assert spans["head"] == [(0, 510)] and spans["tail"] == [(623, 1133)]
    assert spans["head_tail"] == [(0, 128), (751, 1133)]  # the first 128, and the rest of the 512 from the end
    assert spans["chunks"] == [(0, 510), (255, 765), (510, 1020), (765, 1133)]  # overlapping by half
    assert ld.windows(40, 510) == {s: [(0, 40)] for s in ld.STRATEGIES}


def one_at_a_time_vector(loaded, ids: list[int]) -> np.ndarray:
    with torch.no_grad():
        states = loaded.model.base_model(input_ids=torch.tensor([ids])).last_hidden_state[0]
    return states.double().mean(0).numpy()


def test_tiny_bert_verdicts_equal_an_independent_one_at_a_time_classifier(tiny_models):
    loaded = models.load(tiny_models["masked"], *ld.FAMILIES)
    result = ld.read(loaded, "")
    with ld.REVIEWS.open(newline="", encoding="utf-8") as f:
        reviews = [r for r in csv.DictReader(f) if r["split"] == "train"]
    vectors = {label: np.mean([one_at_a_time_vector(loaded, loaded.tokenizer(r["text"])["input_ids"])
                               for r in reviews if r["label"] == label], axis=0) for label in ld.LABELS}
    pieces = loaded.tokenizer(ld.DOCUMENT.read_text(), add_special_tokens=False, verbose=False)["input_ids"]
    assert result.tokens == len(pieces) and result.limit == 128
    for reading in result.readings:
        if reading.strategy == "chunks":
            units = [v / np.linalg.norm(v) for v in (one_at_a_time_vector(
                loaded, cost.with_specials(loaded.tokenizer, pieces[a:b])) for a, b in reading.spans)]
            vector = np.mean(units, axis=0)
        else:
            vector = one_at_a_time_vector(loaded, cost.with_specials(loaded.tokenizer,
                                                                     [t for a, b in reading.spans for t in pieces[a:b]]))
        vector /= np.linalg.norm(vector)
        cosines = [float(vector @ v / np.linalg.norm(v)) for v in (vectors["positive"], vectors["negative"])]
        assert reading.verdict["cos_positive"] == pytest.approx(cosines[0], abs=1e-4)
        assert reading.verdict["cos_negative"] == pytest.approx(cosines[1], abs=1e-4)
    assert result.whole_error.startswith("RuntimeError")


def test_minilm_reads_the_built_in_review_as_the_textbook_predicts():
    """Head truncation misses the verdict at the end; tail, head + tail and the averaged chunks find it."""
    result = ld.read(models.load(models.MINILM_NAME, *ld.FAMILIES), "").to_json()
    verdicts = {r["strategy"]: r["verdict"]["label"] for r in result["readings"]}
    assert verdicts == {"head": "positive", "tail": "negative", "head_tail": "negative", "chunks": "negative"}
    assert result["tokens"] > 1000 and result["limit"] == 512 and "512" in result["whole_error"]
    assert result["classifier"]["held_out"] == 88 and result["classifier"]["held_out_accuracy"] >= 0.85
    assert result["document_verdict"] == "negative"


def test_long_document_bad_input(tiny_models):
    name = tiny_models["masked"]
    with pytest.raises(BadInput, match="The strategy must be one of"):
        ld.long_document_json("", name, "middle")
    with pytest.raises(BadInput, match="not a masked language model or an encoder"):
        ld.long_document_json("", tiny_models["causal"], "head")
    with pytest.raises(BadInput, match="at most 20,000"):
        ld.long_document_json("word " * 5000, name, "head")
    short = ld.long_document_json("A lovely, quiet cottage.", name, "head")
    assert short["readings"][0]["spans"] == [[0, short["tokens"]]] and "fits in one pass" in short["notes"][0]


# ------------------------------------------------------------ API and browser


def test_attention_cost_and_long_document_api(client, tiny_models):
    curve = client.predict(tiny_models["masked"], api_name="/attention_cost")
    assert [p["tokens"] for p in curve["points"]] == [16, 32, 64, 128] and curve["limit"]["kind"] == "table"
    doc = client.predict("", tiny_models["masked"], "head_tail", api_name="/long_document")
    assert [r["strategy"] for r in doc["readings"]] == ["head_tail"] and len(doc["course"]) == 4
    with pytest.raises(AppError, match="strategy"):
        client.predict("", tiny_models["masked"], "middle", api_name="/long_document")


def test_cost_and_long_document_panels_draw_in_the_browser(patient_page):
    page = patient_page
    open_tab(page, "Attention")
    page.get_by_role("button", name="Measure (the first time takes a while; then it is kept)").click()
    page.get_by_text("Past the limit.").first.wait_for(timeout=180000)
    page.locator(".js-plotly-plot").filter(has_text="One layer, part by part").first.wait_for(timeout=30000)
    page.get_by_role("button", name="Classify four ways").click()
    page.get_by_text("The classifier:").first.wait_for(timeout=180000)
    page.locator(".js-plotly-plot").filter(has_text="What each strategy reads").first.wait_for(timeout=30000)
    page.get_by_text("Each strategy's reading and verdict").first.scroll_into_view_if_needed()  # rows drawn on screen
    page.get_by_text("Head + tail", exact=True).first.wait_for(timeout=30000)
    page.get_by_text("What attention costs, and long documents").scroll_into_view_if_needed()
    screenshot(page, "attention_cost")
    page.get_by_text("A document longer than the model reads").scroll_into_view_if_needed()
    screenshot(page, "attention_long_document")
    assert page.outside_requests == []
