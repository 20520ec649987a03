"""Adapters and LoRA at inference: the bottleneck adapter's count equals the hand formula and an inserted adapter
leaves the model's logits unchanged until it trains; LoRA's counts are peft's own; merged into the weights
(merge_and_unload) LoRA gives the same logits and predictions as unmerged, with no LoRA module left and the
weights equal to W + (α/r)·B·A; the textbook is quoted verbatim under its sections; the panel draws."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from labs.core.errors import BadInput
from labs.core.models import models
from labs.finetune import adapters_lora as al
from labs.finetune import bottleneck, strategies, tab_adapters
from labs.finetune.data import builtin_data
from labs.finetune.training import EncodedSentences

COURSE = Path(__file__).resolve().parents[2] / "shared" / "course"
TEXTBOOK = "003_4e137ff2e23b0b86.txt"


def classifier(name: str):
    return models.load_for_classification(name, 2, seed=0)


def validation_logits(model, tokenizer, n: int = 16):
    import torch

    batch = EncodedSentences(tokenizer, builtin_data().validation[:n], "cpu").batch(range(n))
    model.eval()
    with torch.no_grad():
        return model(**batch).logits


@pytest.mark.skipif(not COURSE.exists(), reason="the course's documents are in ../shared/course")
def test_the_textbook_is_quoted_verbatim_under_its_sections():
    text = (COURSE / TEXTBOOK).read_text()
    for where, title, quote in al.COURSE:
        number = where.split()[-1]
        section = text.split(f"{number} {title}\n", 1)[1]
        section = re.split(r"\n20\.\d+(\.\d+)? ", section, maxsplit=1)[0]  # up to the next section's heading
        assert quote in section, (where, quote)


def test_an_inserted_adapter_is_the_identity_and_its_count_is_the_hand_formula(tiny_models):
    model, tokenizer = classifier(tiny_models["masked"])
    before = validation_logits(model, tokenizer)
    total_before = sum(p.numel() for p in model.parameters())
    model = strategies.apply_strategy(model, "adapter_16")
    found, config = bottleneck.counts(model), model.config
    assert found["adapter"] == bottleneck.expected_params(config.num_hidden_layers, config.hidden_size, 16) == \
        2 * 2 * (2 * 64 * 16 + 64 + 16)
    assert found["total"] == total_before + found["adapter"]
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all(".adapter." in n or n.startswith(("classifier", "bert.pooler")) for n in trainable)
    assert sum(p.numel() for n, p in model.named_parameters() if n in trainable) == found["adapter"] + found["head"]
    assert validation_logits(model, tokenizer).allclose(before, atol=1e-6)  # W_up = 0: nothing changed yet
    assert strategies.parse_strategy("adapter_64") == ("adapter", 64)
    with pytest.raises(BadInput, match="adapter_M"):
        strategies.parse_strategy("adapter_x")


def test_adapters_on_bert_bases_architecture_are_counted_without_its_weights():
    counted = bottleneck.bert_base_counts(64)
    assert counted["adapter_params"] == 2 * 12 * (2 * 768 * 64 + 768 + 64) == 2_379_264
    assert counted["base_params"] == 109_483_778  # bert-base-uncased with a 2-class head
    assert round(counted["percent"], 2) == 2.17


def test_adapters_refuse_a_model_without_bert_layers(tiny_models):
    from transformers import GPT2Config, GPT2ForSequenceClassification

    with pytest.raises(BadInput, match="BERT-style"):
        bottleneck.insert(GPT2ForSequenceClassification(GPT2Config(n_layer=1, n_embd=32, n_head=2)), 8)


def test_lora_merged_gives_the_same_logits_and_its_weights_are_w_plus_scaled_ba(tiny_models):
    import torch

    model, tokenizer = classifier(tiny_models["masked"])
    model = strategies.apply_strategy(model, "lora_r4")
    for name, param in model.named_parameters():  # LoRA's B starts at zero: give it a value, as training would
        if "lora_B" in name:
            torch.nn.init.normal_(param, std=0.5)
    unmerged = validation_logits(model, tokenizer)
    layer = model.base_model.model.bert.encoder.layer[0].attention.self.query
    expected = layer.base_layer.weight + layer.scaling["default"] * layer.lora_B["default"].weight @ \
        layer.lora_A["default"].weight
    merged = model.merge_and_unload()
    assert torch.allclose(merged.bert.encoder.layer[0].attention.self.query.weight, expected.detach(), atol=1e-6)
    assert not any("lora_" in n for n, _ in merged.named_modules())
    merged_logits = validation_logits(merged, tokenizer)
    assert torch.allclose(merged_logits, unmerged, atol=1e-5) and not torch.allclose(unmerged, validation_logits(
        classifier(tiny_models["masked"])[0], tokenizer), atol=1e-3)  # LoRA changed something, and merging kept it


def test_the_comparison_measures_both_and_its_counts_are_peft_s(tiny_models):
    plan = al.check_plan(tiny_models["masked"], 16, 4, 1, 0)
    *events, result = list(al.run(plan))
    a, lo = result["adapter"], result["lora"]
    assert a["adapter_params"] == a["expected_adapter_params"] and a["library"] is None
    assert a["trainable_params"] == a["adapter_params"] + a["head_params"]
    peft_model = strategies.apply_strategy(classifier(tiny_models["masked"])[0], "lora_r4")
    assert lo["trainable_params"] == peft_model.get_nb_trainable_parameters()[0]
    assert lo["lora_params"] == 2 * 2 * 4 * (64 + 64)  # query and value, A and B, two layers
    assert lo["same_predictions"] == lo["validation"] == 88 and lo["max_logit_difference"] < 1e-4
    assert lo["accuracy_merged"] == lo["accuracy_unmerged"] == pytest.approx(lo["accuracy"])
    assert lo["lora_modules_left"] == 0 and lo["merged_params"] == sum(
        p.numel() for p in classifier(tiny_models["masked"])[0].parameters())
    assert 0 < lo["lora_matrix_bytes"] < lo["adapter_file_bytes"] < lo["full_model_bytes"]
    assert lo["lora_matrix_bytes"] == 4 * lo["lora_params"]  # float32
    assert 0 < a["task_bytes"] < lo["full_model_bytes"]
    assert min(a["ms_per_prediction"], lo["ms_unmerged"], lo["ms_merged"]) > 0
    frame = tab_adapters.rows(result)
    assert frame.shape == (3, len(tab_adapters.HEADERS)) and "peft's count" in frame.values[1][1]
    assert f"{lo['same_predictions']} of {lo['validation']}" in tab_adapters.summary(result)


def test_bad_settings_are_refused(tiny_models):
    for args, words in (((tiny_models["masked"], 0), "adapter size"), ((tiny_models["masked"], 64, 65), "LoRA rank"),
                        ((tiny_models["causal"],), "causal|encoder")):
        with pytest.raises(BadInput, match=words):
            al.check_plan(*args)


@pytest.mark.timeout(1800)  # real weights on a shared 2-core machine: minutes when it is busy
@pytest.mark.slow  # trains real weights
def test_on_the_real_minilm_merged_lora_predicts_exactly_as_unmerged():
    plan = al.check_plan(models.MINILM_NAME, 64, 8, 1, 0)
    *_, result = list(al.run(plan))
    lo, a = result["lora"], result["adapter"]
    assert lo["same_predictions"] == 88 and lo["max_logit_difference"] < 1e-4
    assert lo["lora_params"] == 6 * 2 * 8 * (384 + 384) and a["adapter_params"] == 2 * 6 * (2 * 384 * 64 + 384 + 64)
    assert lo["adapter_file_bytes"] < lo["full_model_bytes"] / 50


@pytest.mark.timeout(1800)  # a run on a tiny model
def test_the_panel_draws_in_a_browser(browser, app_server, tiny_models):
    from conftest import at_each_width, panel_run, screenshot

    link = (f"{app_server['url']}?tab=finetune&model={tiny_models['masked']}&adapter_size=8&lora_rank=2"
            "&adapter_epochs=1")
    with panel_run(browser, link, tab_adapters.TITLE, tab_adapters.BUTTON) as page:
        panel = page.locator("#ft-adapters")
        for width in at_each_width(page):
            # The summary line (Markdown) once the run is done; the strategy names are also in the table and the
            # chart's text alternative, hidden until opened.
            done = panel.get_by_text("Merged, LoRA gives the same predictions on 88 of 88")
            done.wait_for(timeout=300000)
            done.scroll_into_view_if_needed()
            screenshot(page, f"finetune_adapters_{width}")
