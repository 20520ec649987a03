"""Choosing a model, distillation with temperature: the softened distributions and every term of the loss against
torch's own F.softmax, F.kl_div, F.cross_entropy and F.cosine_embedding_loss on both models' own forward passes (a
tiny random BERT teacher and a tiny random DistilBERT student sharing its vocabulary and width), the offline
stand-in against SmolLM2's own logits, the textbook quoted verbatim, bad input, the API and the panel."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import linked_inputs, open_tab, screenshot
from gradio_client.exceptions import AppError

from labs.choosing import tab_temperature
from labs.choosing import temperature as dt
from labs.core.errors import BadInput
from labs.core.models import models
from labs.core.models.registry import ModelChoice

COURSE = Path("/work/shared/course")
TEXT = "She poured milk into her [MASK] of coffee. | cup"


@pytest.fixture(scope="module")
def pair(tiny_models, tmp_path_factory):
    from transformers import DistilBertConfig, DistilBertForMaskedLM

    teacher = models.load(tiny_models["masked"], "masked")
    torch.manual_seed(2)
    config = DistilBertConfig(vocab_size=len(teacher.tokenizer), dim=64, n_layers=1, n_heads=2, hidden_dim=128,
                              max_position_embeddings=128)
    choice = ModelChoice("tiny-distilbert-64", "masked", "local", str(tmp_path_factory.mktemp("student64")),
                         "a tiny random DistilBERT as wide as the tiny BERT")
    return teacher, models.LoadedModel(choice, DistilBertForMaskedLM(config).eval(), teacher.tokenizer, "cpu", 0.0)


def own_pass(loaded, sentence):
    """The model's own forward pass: (logits at the blank [vocab], last hidden states [n, hidden])."""
    enc = loaded.tokenizer(sentence.replace("[MASK]", loaded.tokenizer.mask_token), return_tensors="pt")
    blank = enc["input_ids"][0].tolist().index(loaded.tokenizer.mask_token_id)
    with torch.no_grad():
        out = loaded.model(**enc, output_hidden_states=True)
    return out.logits[0, blank].double(), out.hidden_states[-1][0].double()


def test_every_term_equals_torchs_own_losses(pair):
    teacher, student = pair
    r = dt.pair_result(teacher, student, TEXT, [1, 2, 5], (dt.ALPHA, dt.BETA, dt.GAMMA))
    (zt, ht), (zs, hs) = own_pass(teacher, r["sentence"]), own_pass(student, r["sentence"])
    target = teacher.tokenizer.convert_tokens_to_ids("cup")
    ce = F.cross_entropy(zs[None], torch.tensor([target])).item()
    cos = F.cosine_embedding_loss(hs, ht, torch.ones(len(hs))).item()
    assert r["answer_id"] == target and r["ce"] == pytest.approx(ce, rel=1e-4)
    assert r["cos"] == pytest.approx(cos, rel=1e-4, abs=1e-6)
    words = [w["token_id"] for w in r["words"]]
    assert words == torch.topk(zt, len(words)).indices.tolist()  # the teacher's top words at T = 1
    for row in r["by_temperature"]:
        t = row["T"]
        kl = F.kl_div(F.log_softmax(zs / t, -1)[None], F.softmax(zt / t, -1)[None], reduction="batchmean").item()
        assert row["kl"] == pytest.approx(kl, rel=1e-4, abs=1e-7)
        assert row["distill"] == pytest.approx(t * t * kl, rel=1e-4, abs=1e-7)
        assert row["loss"] == pytest.approx(dt.ALPHA * ce + dt.BETA * t * t * kl + dt.GAMMA * cos, rel=1e-4)
        assert row["teacher"] == pytest.approx(F.softmax(zt / t, -1)[words].tolist(), rel=1e-4, abs=1e-9)
        assert row["student_answer_prob"] == pytest.approx(F.softmax(zs / t, -1)[target].item(), rel=1e-4)


def test_a_higher_temperature_softens_both_distributions(pair):
    teacher, student = pair
    rows = dt.pair_result(teacher, student, TEXT, [1, 2, 5], (2, 5, 1))["by_temperature"]
    for who in ("teacher", "student"):
        entropies = [row[f"{who}_entropy"] for row in rows]
        assert entropies == sorted(entropies) and entropies[0] < entropies[-1]
        tops = [max(row[who]) for row in rows]
        assert tops == sorted(tops, reverse=True)


def test_a_model_taught_by_itself_has_zero_kl_but_not_zero_ce(pair):
    teacher, _ = pair
    twin = models.LoadedModel(ModelChoice("twin", "masked", "local", "", ""), teacher.model, teacher.tokenizer,
                              "cpu", 0.0)
    r = dt.pair_result(teacher, twin, TEXT, [1, 5], (2, 5, 1))
    assert all(row["kl"] == pytest.approx(0, abs=1e-9) for row in r["by_temperature"])
    assert r["cos"] == pytest.approx(0, abs=1e-6) and r["ce"] > 0
    assert r["by_temperature"][1]["loss"] == pytest.approx(2 * r["ce"], rel=1e-6)


def test_a_narrower_student_has_no_cosine_term(pair, tiny_models):
    from transformers import DistilBertConfig, DistilBertForMaskedLM

    teacher, _ = pair
    narrow = DistilBertForMaskedLM(DistilBertConfig(vocab_size=len(teacher.tokenizer), dim=32, n_layers=1, n_heads=2,
                                                    hidden_dim=64, max_position_embeddings=128)).eval()
    student = models.LoadedModel(ModelChoice("narrow", "masked", "local", "", ""), narrow, teacher.tokenizer, "cpu", 0)
    r = dt.pair_result(teacher, student, TEXT, [2], (2, 5, 1))
    assert r["cos"] is None and "hidden sizes differ" in r["note"]
    assert r["by_temperature"][0]["loss"] == pytest.approx(2 * r["ce"] + 5 * r["by_temperature"][0]["distill"])


def test_offline_the_softening_is_shown_on_smollm2s_own_distribution():
    r = dt.distill_temperature(TEXT, [1, 2, 5])
    assert not r["measured"] and "Not measured here" in r["note"] and r["by_temperature"] == []
    s = r["stand_in"]
    assert s["model"] == models.SMOLLM2_NAME and s["reads"] == "She poured milk into her"
    smol = models.load(models.SMOLLM2_NAME, "causal")
    ids = smol.tokenizer(s["reads"], return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logits = smol.model(ids).logits[0, -1].double()
    words = [w["token_id"] for w in s["words"]]
    assert words == torch.topk(logits, len(words)).indices.tolist()
    for row in s["by_temperature"]:
        p = F.softmax(logits / row["T"], -1)
        assert row["probs"] == pytest.approx(p[words].tolist(), rel=1e-3, abs=1e-9)
        assert row["entropy"] == pytest.approx(-(p * p.clamp_min(1e-300).log()).sum().item(), rel=1e-3)
    assert [row["entropy"] for row in s["by_temperature"]] == sorted(row["entropy"] for row in s["by_temperature"])


@pytest.mark.parametrize("text, temperatures, match", [
    ("No blank here. | cup", None, "exactly one"),
    ("She poured [MASK] into her [MASK]. | cup", None, "exactly one"),
    ("She poured milk into her [MASK] of coffee.", None, "true word after a bar"),
    ("She poured milk into her [MASK] of coffee. | a cup", None, "true word after a bar"),
    (TEXT, [1, 2, 3, 4, 5, 6, 7], "1 to 6"),
    (TEXT, [0], "temperature must be"),
    (TEXT, "1, hot", "temperature must be"),
])
def test_bad_input_is_refused_with_a_reason(text, temperatures, match):
    with pytest.raises(BadInput, match=match):
        dt.distill_temperature(text, temperatures)


def test_a_word_of_several_pieces_is_refused(pair):
    teacher, student = pair
    with pytest.raises(BadInput, match="a blank holds one"):
        dt.pair_result(teacher, student, "He ate a [MASK]. | pomegranates", None, (2, 5, 1))
    assert dt.check_temperatures("1; 2.5") == [1.0, 2.5] and dt.check_temperatures("") == [1.0, 2.0, 5.0]


@pytest.mark.skipif(not COURSE.exists(), reason="the course's documents are in ../shared/course")
def test_the_textbook_is_quoted_verbatim_under_its_section():
    text = (COURSE / dt.TEXTBOOK).read_text()
    section = text.split(dt.SECTION, 1)[1].split("20.9.4 ", 1)[0]
    for quote in (dt.QUOTE_LOSS, *dt.QUOTE_TERMS, *dt.QUOTE_SOFTMAX, dt.QUOTE_SOFT):
        assert quote in section and quote in tab_temperature.COURSE, quote


def test_distill_temperature_api(client, tiny_models):
    out = client.predict(TEXT, [1, 3], tiny_models["masked"], tiny_models["pretraining"], 2, 5, 1,
                         api_name="/distill_temperature")
    assert out["measured"] and [row["T"] for row in out["by_temperature"]] == [1, 3]
    assert out["by_temperature"][1]["teacher_entropy"] > out["by_temperature"][0]["teacher_entropy"]
    offline = client.predict(TEXT, [1, 2, 5], "bert-base-uncased", "distilbert-base-uncased", 2, 5, 1,
                             api_name="/distill_temperature")
    assert not offline["measured"] and offline["stand_in"]["model"] == models.SMOLLM2_NAME
    with pytest.raises(AppError, match="true word"):
        client.predict("A [MASK] day.", [1], "", "", 2, 5, 1, api_name="/distill_temperature")


def test_the_panel_handler_offline_and_with_a_pair(tiny_models):
    note, fig, frame, out = tab_temperature.on_temperature(TEXT, "1, 2, 5", "bert-base-uncased",
                                                           "distilbert-base-uncased", 2, 5, 1)
    assert "Not measured here" in note and len(fig.data) == 3 and frame.empty
    note, fig, frame, out = tab_temperature.on_temperature(TEXT, "1, 5", tiny_models["masked"],
                                                           tiny_models["pretraining"], 2, 5, 1)
    assert "L\\_CE" in note or "L_CE" in note
    assert len(fig.data) == 4 and list(frame["T"]) == ["1", "5"] and np.isfinite(out["ce"])


def test_a_link_sets_the_panels_inputs_and_a_bad_value_falls_back():
    from labs.core.ui import links

    specs = linked_inputs("choosing")
    assert {"temp_text", "temperatures"} <= set(specs)
    good = {"tab": "choosing", "temp_text": TEXT, "temperatures": "1, 4"}
    tab, values, notes = links.read(good, ["choosing"], {"choosing": specs})
    assert tab == "choosing" and notes == []
    assert {name: v for (_, name), v in values.items()} == {"temp_text": TEXT, "temperatures": "1, 4"}
    _, values, notes = links.read({"tab": "choosing", "temperatures": "1" * 61}, ["choosing"], {"choosing": specs})
    assert values == {} and len(notes) == 1 and "default" in notes[0]


def test_the_panel_in_the_browser(page):
    page.set_default_timeout(120000)  # a busy machine: every step waits for its state, however long
    open_tab(page, "Choosing a model")
    heading = page.get_by_text("Distillation with temperature: the teacher's soft targets").first
    heading.scroll_into_view_if_needed()
    page.get_by_text("Softening, measured on the stand-in").first.wait_for(timeout=90000)
    page.get_by_text("Softening, measured on the stand-in").first.scroll_into_view_if_needed()
    screenshot(page, "choosing_distill_temperature")
    assert page.outside_requests == []
