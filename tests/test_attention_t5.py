"""Attention and Masks with an encoder-decoder (the tiny T5): its three kinds of attention against the
model's own output_attentions, batched = alone, the bertviz views, the handlers and the API, and models
of a family a lab cannot serve."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import gate_first_batch, wait_until
from gradio_client.exceptions import AppError

from labs.attention import compute as attention
from labs.attention import tab as attention_tab
from labs.attention import views
from labs.core.models import models
from labs.core.ui import ui
from labs.core.work import lm
from labs.masks import compute as masks
from labs.masks import tab as masks_tab

TEXTS = ["The cat sat on the mat.", "Dogs bark.", "I sat on the river bank and watched the slow water go by.", "A"]


def own_seq2seq(loaded, ids: list[int]):
    """The oracle: T5's own forward pass on one text alone, its decoder input made by T5's own
    `_shift_right` (the start token, then the text less its last token). Returns the decoder ids and
    the encoder, decoder and cross-attention, each [layers, heads, rows, columns]."""
    input_ids = torch.tensor([ids])
    decoder_ids = loaded.model._shift_right(input_ids)
    with torch.no_grad():
        out = loaded.model(input_ids=input_ids, decoder_input_ids=decoder_ids, output_attentions=True)
    kinds = [torch.stack(a)[:, 0].numpy() for a in (out.encoder_attentions, out.decoder_attentions,
                                                     out.cross_attentions)]
    return decoder_ids[0].tolist(), *kinds


@pytest.fixture
def t5(tiny_models):
    return models.load(tiny_models["seq2seq"], *attention.FAMILIES)


@pytest.mark.parametrize("text", TEXTS)
def test_three_kinds_equal_the_models_own_output_attentions(t5, text):
    r = attention.run(t5, text)
    ids = t5.tokenizer(text)["input_ids"]
    decoder_ids, encoder, decoder, cross = own_seq2seq(t5, ids)
    assert r.seq2seq and r.family == "seq2seq" and r.tokens[-1] == "</s>"
    assert list(r.decoder_tokens) == models.readable_tokens(t5.tokenizer, decoder_ids)
    assert r.decoder_tokens[0] == "<pad>" and len(r.decoder_tokens) == len(r.tokens)
    np.testing.assert_allclose(r.weights, encoder, atol=1e-6)
    np.testing.assert_allclose(r.decoder_weights, decoder, atol=1e-6)
    np.testing.assert_allclose(r.cross_weights, cross, atol=1e-6)


def test_decoder_is_causal_cross_rows_sum_to_one_encoder_sees_the_future(t5):
    r = attention.run(t5, TEXTS[2])
    n, m = len(r.tokens), len(r.decoder_tokens)
    assert r.weights.shape[-2:] == (n, n) and r.decoder_weights.shape[-2:] == (m, m)
    assert r.cross_weights.shape[-2:] == (m, n)
    above = np.triu(np.ones((m, m), dtype=bool), k=1)
    assert np.all(r.decoder_weights[..., above] == 0.0)  # exactly zero, every layer and head
    np.testing.assert_allclose(r.cross_weights.sum(axis=-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(r.decoder_weights.sum(axis=-1), 1.0, atol=1e-5)
    assert r.weights[..., np.triu(np.ones((n, n), dtype=bool), k=1)].max() > 0.01  # bidirectional
    decoder, cross = attention.select(r, "decoder"), attention.select(r, "cross")
    assert decoder.causal and not cross.causal and not r.causal
    assert cross.tokens == r.decoder_tokens and cross.key_tokens == r.tokens
    assert attention.entropy_map(cross).shape == r.cross_weights.shape[:2]


def test_a_sentence_pair_is_read_as_t5_reads_a_pair(t5):
    r = attention.run(t5, "The cat sat.", "Dogs bark.")
    pair = t5.tokenizer("The cat sat.", "Dogs bark.")["input_ids"]
    assert list(r.tokens) == models.readable_tokens(t5.tokenizer, pair)
    assert r.tokens[r.sentence_b_start - 1] == "</s>" and r.tokens[-1] == "</s>"


def test_batched_equals_alone_and_the_models_own(monkeypatch, t5):
    lm.cache.clear()
    monkeypatch.setattr(lm, "_batchers", {})
    gate, sizes = gate_first_batch(monkeypatch, lm.RUNNERS, "seq2seq_attn")
    results = [None] * len(TEXTS)

    def run(i, text):
        results[i] = attention.run(t5, text)

    blocker = threading.Thread(target=attention.run, args=(t5, "Hold the worker."))
    blocker.start()
    wait_until(lambda: sizes == [1])
    threads = [threading.Thread(target=run, args=(i, t)) for i, t in enumerate(TEXTS)]
    [t.start() for t in threads]
    wait_until(lambda: len(next(iter(lm._batchers.values()))._queue) == len(TEXTS))
    gate.set()
    [t.join(60) for t in [blocker, *threads]]
    lm.cache.clear()
    assert sizes == [1, len(TEXTS)]  # the four texts, padded to the longest, in one forward pass
    for text, r in zip(TEXTS, results):
        _, encoder, decoder, cross = own_seq2seq(t5, t5.tokenizer(text)["input_ids"])
        for got, want in ((r.weights, encoder), (r.decoder_weights, decoder), (r.cross_weights, cross)):
            np.testing.assert_allclose(got, want, atol=1e-5)
        alone = attention.run(t5, text)  # alone: a new pass on an empty cache
        np.testing.assert_allclose(r.decoder_weights, alone.decoder_weights, atol=1e-5)
        np.testing.assert_allclose(r.cross_weights, alone.cross_weights, atol=1e-5)


def test_labeller_on_rectangular_cross_attention():
    m, n = 5, 7
    end = np.zeros((m, n))
    end[:, n - 1] = 1.0
    assert attention.label_head(end, special_positions=(n - 1,)) == "separator / end token"
    assert attention.label_head(np.full((m, n), 1 / n)) == "broad"
    diagonal = np.zeros((m, n))
    diagonal[np.arange(m), np.arange(m)] = 1.0  # "self" means nothing across two texts
    assert attention.label_head(diagonal) == "mixed"


def test_bertviz_views_offer_encoder_decoder_and_cross(t5):
    r = attention.run(t5, TEXTS[0])
    document = views.view_document(r, "head", part="cross")
    assert '<option value="2" selected>Cross</option>' in document and "default_filter: '2'" in document
    options = document.split('<select id="filter">', 1)[1].split("</select>", 1)[0]
    assert options == '<option value="0">Encoder</option><option value="1">Decoder</option>' \
                      '<option value="2" selected>Cross</option>'
    payload = views.view_payload(r)
    shape = r.weights.shape
    np.testing.assert_allclose(np.array(payload["dq"]).reshape(r.decoder_weights.shape) / 1000, r.decoder_weights,
                               atol=5e-4 + 1e-7)
    np.testing.assert_allclose(np.array(payload["cq"]).reshape(r.cross_weights.shape) / 1000, r.cross_weights,
                               atol=5e-4 + 1e-7)
    assert payload["decoder_tokens"] == list(r.decoder_tokens) and len(payload["q"]) == np.prod(shape)
    assert "default_filter: '0'" in views.view_document(r, "model")


def test_t5_views_draw_offline_in_a_browser(browser, t5):
    """bertviz's own scripts draw all three kinds, the chosen one first, with nothing fetched."""
    files = views.standalone_files(attention.run(t5, TEXTS[0]), "cross")
    context = browser.new_context(offline=True)
    page, errors, requests = context.new_page(), [], []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    try:
        for view in ("head", "model"):
            page.goto(Path(files[view]).as_uri())
            page.locator("svg line").first.wait_for(state="attached", timeout=30000)
            assert page.locator("#filter").input_value() == "2"
            page.locator("#filter").select_option("1")  # the decoder's self-attention
            page.locator("svg line").first.wait_for(state="attached", timeout=30000)
    finally:
        context.close()
    assert errors == [] and [u for u in requests if not u.startswith("file:")] == []


def test_handlers_show_the_chosen_part_and_the_choice_only_for_seq2seq(t5, tiny_models):
    name = tiny_models["seq2seq"]
    _, encoder, decoder, cross = own_seq2seq(t5, t5.tokenizer(TEXTS[0])["input_ids"])
    out = attention_tab.on_show(TEXTS[0], "", name, 1, 2, False, "decoder")
    assert out[-1]["visible"] is True and "teacher-forced" in out[0]
    assert out[13]["part"] == "decoder"
    np.testing.assert_allclose(out[8].data[0].z, np.round(decoder[1, 2], 3))
    figures = attention_tab.on_heatmap(TEXTS[0], "", name, 1, 2, False, "cross")
    np.testing.assert_allclose(figures[0].data[0].z, np.round(cross[1, 2], 3))
    assert np.array(figures[0].data[0].z).shape == cross.shape[-2:]
    out = attention_tab.on_show(TEXTS[0], "", tiny_models["masked"], 1, 2, False, "decoder")
    assert out[-1]["visible"] is False and "part" not in out[13]  # others: today's view, choice hidden


def test_a_click_resolves_the_model_once(monkeypatch, tiny_models):
    by_name, original = [], models.load

    def counting(name, *families, **kwargs):
        if isinstance(name, str):
            by_name.append(name)
        return original(name, *families, **kwargs)

    monkeypatch.setattr(models, "load", counting)
    attention_tab.on_show(TEXTS[0], "", tiny_models["seq2seq"], 0, 0, False, "cross")
    assert by_name == [tiny_models["seq2seq"]]
    by_name.clear()
    attention.attention_result(TEXTS[0], tiny_models["masked"], "", 0, 0)
    assert by_name == [tiny_models["masked"]]
    by_name.clear()
    masks_tab.on_real(TEXTS[0], tiny_models["seq2seq"], tiny_models["causal"], -1, -1)
    assert by_name == [tiny_models["seq2seq"], tiny_models["causal"]]
    by_name.clear()
    masks.masks_result(TEXTS[0], tiny_models["masked"], tiny_models["seq2seq"])
    assert by_name == [tiny_models["masked"], tiny_models["seq2seq"]]


def test_dropdowns_offer_only_the_families_each_lab_serves(tiny_models):
    offered = ui.model_dropdown(*attention.FAMILIES).choices
    names = {c[1] if isinstance(c, tuple) else c for c in offered}
    assert {tiny_models[k] for k in ("masked", "causal", "seq2seq")} <= names
    encoder_side = {c[1] for c in ui.model_dropdown(*masks.ENCODER_FAMILIES).choices}
    causal_side = {c[1] for c in ui.model_dropdown(*masks.CAUSAL_FAMILIES).choices}
    assert tiny_models["seq2seq"] in encoder_side and tiny_models["causal"] not in encoder_side
    assert tiny_models["seq2seq"] in causal_side and tiny_models["masked"] not in causal_side


# ------------------------------------------------------------ Masks: T5's two masks from its real weights


def test_masks_reads_t5s_encoder_and_decoder_masks_from_its_weights(t5, tiny_models):
    text = "The cat sat on the mat"
    _, encoder, decoder, _ = own_seq2seq(t5, t5.tokenizer(text)["input_ids"])
    on_decoder = masks.real_attention(t5, text, layer=-1, head=None, part="decoder")
    assert on_decoder.max_above_diagonal == 0.0 and on_decoder.tokens[0] == "<pad>" and on_decoder.part == "decoder"
    np.testing.assert_allclose(on_decoder.weights, decoder[-1].mean(axis=0), atol=1e-6)
    on_encoder = masks.real_attention(t5, text, layer=1, head=2, part="encoder")
    assert on_encoder.max_above_diagonal > 0.01 and on_encoder.tokens[-1] == "</s>"
    np.testing.assert_allclose(on_encoder.weights, encoder[1, 2], atol=1e-6)
    result = masks.masks_result(text, tiny_models["seq2seq"], tiny_models["seq2seq"])
    assert result["real"]["encoder"]["part"] == "encoder" and result["real"]["encoder"]["max_above_diagonal"] > 0
    assert result["real"]["causal"]["part"] == "decoder" and result["real"]["causal"]["max_above_diagonal"] == 0.0
    note, *figures = masks_tab.on_real(text, tiny_models["seq2seq"], tiny_models["seq2seq"], -1, -1)
    assert "decoder self-attention" in note and all(f is not None for f in figures)


def test_masks_refuses_a_family_a_side_cannot_serve_kindly(tiny_models):
    result = masks.masks_result("The cat sat", tiny_models["causal"], tiny_models["masked"])
    for role in ("encoder", "causal"):
        error = result["real"][role]["error"]
        assert " is not " in error and error.count(". ") == 0 and "Traceback" not in error
    assert result["tokens"] == ["The", "cat", "sat"]  # the masks themselves still come back
    note, *figures = masks_tab.on_real("The cat sat", tiny_models["causal"], tiny_models["masked"], -1, -1)
    assert note.count("is not") == 2 and figures == [None, None]
    note, *_ = attention_tab.on_compare("The cat sat", tiny_models["causal"], tiny_models["seq2seq"])
    assert note.count("is not") == 2


# ------------------------------------------------------------ API


def test_attention_api_with_t5(client, t5, tiny_models):
    name, text = tiny_models["seq2seq"], TEXTS[0]
    decoder_ids, encoder, decoder, cross = own_seq2seq(t5, t5.tokenizer(text)["input_ids"])
    result = client.predict(text, name, "", 1, 2, "cross", api_name="/attention")
    assert result["part"] == "cross" and result["tokens"][-1] == "</s>"
    assert result["decoder_tokens"] == models.readable_tokens(t5.tokenizer, decoder_ids)
    np.testing.assert_allclose(np.array(result["weights"]), cross[1, 2], atol=1e-6)
    np.testing.assert_allclose(np.array(result["cross_attention"]), cross[1, 2], atol=1e-6)
    np.testing.assert_allclose(np.array(result["decoder_attention"]), decoder[1, 2], atol=1e-6)
    assert "teacher-forced" in result["decoder_reads"]
    default = client.predict(text, name, "", 1, 2, api_name="/attention")  # the five old parameters
    assert default["part"] == "encoder"
    np.testing.assert_allclose(np.array(default["weights"]), encoder[1, 2], atol=1e-6)
    for key in ("model", "source", "tokens", "num_layers", "num_heads", "layer", "head", "entropy", "patterns",
                "note"):
        assert key in default


def test_attention_api_with_t5_bad_input(client, tiny_models):
    with pytest.raises(AppError, match="has no decoder"):
        client.predict("The cat", tiny_models["masked"], "", 0, 0, "decoder", api_name="/attention")
    with pytest.raises(AppError, match="part is one of encoder, decoder, cross"):
        client.predict("The cat", tiny_models["seq2seq"], "", 0, 0, "sideways", api_name="/attention")
    with pytest.raises(AppError, match="layers 0–1"):
        client.predict("The cat", tiny_models["seq2seq"], "", 2, 0, "decoder", api_name="/attention")


def test_masks_api_with_t5_and_a_wrong_family(client, tiny_models):
    result = client.predict("The cat sat on the mat", tiny_models["seq2seq"], tiny_models["seq2seq"],
                            api_name="/masks")
    assert result["real"]["causal"]["max_above_diagonal"] == 0.0 and result["real"]["causal"]["part"] == "decoder"
    assert result["real"]["encoder"]["max_above_diagonal"] > 0 and result["real"]["encoder"]["part"] == "encoder"
    wrong = client.predict("The cat sat", tiny_models["causal"], tiny_models["masked"], api_name="/masks")
    assert "is not" in wrong["real"]["encoder"]["error"] and "is not" in wrong["real"]["causal"]["error"]
