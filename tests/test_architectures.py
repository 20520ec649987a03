"""Choosing a model, published architectures counted (labs/choosing/architectures.py): the counts against hand
formulas and transformers' own `num_parameters`, the FLOPs against the hand count of a forward pass, the course's
figures as its tables print them, one layer's order, and the panel in the browser."""

from __future__ import annotations

import re

import pytest
from conftest import at_each_width, screenshot
from playwright.sync_api import expect

from labs.choosing import architectures as arch
from labs.core.errors import BadInput


def test_the_counts_equal_hand_formulas_and_the_librarys_own_count():
    bert, gpt2, albert = arch.read("BERT-base", 16), arch.read("GPT-2 small", 16), arch.read("ALBERT-base", 16)
    d, layers = 768, 12
    one_layer = 12 * d * d + 13 * d  # Q, K, V, O (4d²), the feed-forward (8d²), their biases (9d), two LayerNorms (4d)
    assert gpt2.params_by_part["layers"] == bert.params_by_part["layers"] == layers * one_layer
    assert albert.params_by_part["layers"] == one_layer  # one layer's weights, shared by all twelve
    assert bert.params_by_part["embeddings"] == (30522 + 512 + 2) * d + 2 * d  # tokens, positions, segments, LayerNorm
    for name in ("GPT-1", "GPT-2 small", "BERT-base", "ALBERT-base", "T5-small"):
        model, _ = arch.build(arch.ARCHITECTURES[name])
        assert {p.device.type for p in model.parameters()} == {"meta"}  # shapes only: nothing allocated
        assert arch.read(name, 16).params == model.num_parameters(), name


def test_flops_are_the_hand_count_of_a_forward_pass():
    n, layers, d = 128, 12, 768
    # per layer: 2 FLOPs per multiply-add; n·12d² multiply-adds in the weights, 2·n²·d in QKᵀ and the weighted sum
    assert arch.read("GPT-2 small", n).flops == layers * (2 * n * 12 * d * d + 2 * 2 * n * n * d)
    bert, albert = arch.read("BERT-base", n), arch.read("ALBERT-base", n)
    assert albert.flops - bert.flops == 2 * n * 128 * d  # ALBERT's only extra work: the E → H projection
    assert albert.params < 0.11 * bert.params  # about a tenth of the parameters, the same compute


def test_albert_factorises_its_embedding_as_the_textbook_writes_it():
    f = arch.read("ALBERT-base").factorised
    assert (f["V"], f["E"], f["H"]) == (30000, 128, 768)  # the textbook's V, E and H
    assert f["tied"] == 30000 * 768 and round(f["tied"] / 1e6, 1) == 23.0
    assert f["factorised"] == f["from_weights"] == 30000 * 128 + 128 * 768 and round(f["factorised"] / 1e6, 1) == 3.9
    r = arch.read("ALBERT-base")
    assert (r.layer_weights, r.layers_run) == (1, 12)  # one layer's weights run twelve times
    assert (arch.read("BERT-base").layer_weights, arch.read("BERT-base").layers_run) == (12, 12)


def test_one_layer_in_the_order_it_runs():
    assert arch.read("GPT-2 small").norm == arch.read("T5-small").norm == "pre-norm"
    assert arch.read("GPT-1").norm == arch.read("BERT-base").norm == "post-norm"
    assert arch.read("GPT-2 small").block_order[0] == "ln_1 (LayerNorm)"
    t5 = arch.read("T5-small")
    assert (t5.with_bias, t5.matrices) == (0, 6)  # q, k, v, o, wi, wo: no biases
    assert [p.split(" ")[0] for p in t5.positions] == ["encoder.block.0.layer.0.SelfAttention.relative_attention_bias",
                                                       "decoder.block.0.layer.0.SelfAttention.relative_attention_bias"]
    bert = arch.read("BERT-base")
    assert bert.with_bias == bert.matrices == 6


@pytest.mark.slow  # every architecture of the table, at full size: over 10 s
def test_the_courses_figures_come_from_its_tables_and_agree_within_ten_percent():
    r = arch.architecture_specs("all", 8)
    figures = {row["name"]: row["course_params"] for row in r["rows"]}
    assert figures["GPT-1"] == "117M" and figures["GPT-2 XL"] == "1.5B" and figures["GPT-3 175B"] == "175B"
    assert figures["ALBERT-xxlarge"] == "235M" and figures["T5-11B"] == "11B" and figures["GPT-2 small"] is None
    for row in r["rows"]:
        if row["course_params"]:
            assert 0.9 < row["course_ratio"] < 1.1, (row["name"], row["params"], row["course_params"])
    assert arch.amount("1.5B") == 1.5e9 and arch.amount("117M") == 117e6


@pytest.mark.parametrize("group, tokens", [("nope", 8), ("gpt", 0), ("gpt", 513), ("gpt", 2.5), ("gpt", "many"),
                                           (["gpt"], 8), ("gpt", True)])
def test_bad_input_is_refused(group, tokens):
    with pytest.raises(BadInput):
        arch.architecture_specs(group, tokens)


def test_the_api_equals_the_local_computation(client):
    assert client.predict("t5", 32, api_name="/architecture_specs") == arch.architecture_specs("t5", 32)


def test_the_panel_in_the_browser_and_its_link(browser, app_server):
    context = browser.new_context()
    page = context.new_page()
    page.goto(app_server["url"] + "?tab=choosing&arch_group=gpt&arch_tokens=64", wait_until="load")
    fold = page.get_by_role("button", name="Published architectures, counted")
    fold.wait_for()  # on screen: the link has opened the tab
    # (a click event: the sticky header of the course table above may lie over the fold's title)
    fold.dispatch_event("click")
    expect(fold).to_have_class(re.compile(r"\bopen\b"))
    panel = page.locator(".gr-accordion").filter(has_text="Published architectures, counted").first
    for width in at_each_width(page):
        page.get_by_text("GPT-1, one layer as it runs (post-norm)").first.wait_for()
        panel.locator(".lab-table-scroll").first.scroll_into_view_if_needed()  # the table, as a student scrolls to it
        screenshot(page, f"choosing-architectures-{width}")
        panel.get_by_text("174.60 B", exact=True).locator("visible=true").first.wait_for()  # GPT-3, counted
        # the course's figure beside the count
        panel.get_by_text("175B (counted: ×0.998)", exact=True).locator("visible=true").first.wait_for()
        panel.locator(".js-plotly-plot").filter(has_text="GFLOPs per token").first.wait_for()
    context.close()
