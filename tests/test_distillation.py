"""Choosing a model, distillation: agreement and KL against a hand computation from both models' own
logits (a tiny random BERT teacher and a tiny random DistilBERT student sharing its vocabulary), bad input,
the offline message, the API and the panel."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import open_tab, screenshot
from gradio_client.exceptions import AppError

from labs.choosing import distillation
from labs.core.errors import BadInput
from labs.core.models import models
from labs.core.models.registry import ModelChoice


@pytest.fixture(scope="module")
def pair(tiny_models, tmp_path_factory):
    from transformers import DistilBertConfig, DistilBertForMaskedLM

    teacher = models.load(tiny_models["masked"], "masked")
    torch.manual_seed(1)
    config = DistilBertConfig(vocab_size=len(teacher.tokenizer), dim=32, n_layers=1, n_heads=2, hidden_dim=64,
                              max_position_embeddings=128)
    student_model = DistilBertForMaskedLM(config).eval()
    choice = ModelChoice("tiny-distilbert-student", "masked", "local", str(tmp_path_factory.mktemp("student")),
                         "a tiny random DistilBERT")
    return teacher, models.LoadedModel(choice, student_model, teacher.tokenizer, "cpu", 0.0)


def hand_logp(loaded, sentence):
    enc = loaded.tokenizer(sentence, return_tensors="pt")
    position = enc["input_ids"][0].tolist().index(loaded.tokenizer.mask_token_id)
    with torch.no_grad():
        logits = loaded.model(**enc).logits[0, position].double()
    return torch.log_softmax(logits, -1).numpy()


def test_agreement_and_kl_equal_a_hand_computation(pair):
    teacher, student = pair
    run = distillation.distill(teacher, student)
    assert len(run.blanks) == len(distillation.SENTENCES)
    for blank in run.blanks:
        t, s = hand_logp(teacher, blank.sentence), hand_logp(student, blank.sentence)
        assert blank.agree == (t.argmax() == s.argmax())
        assert blank.kl == pytest.approx(float(np.sum(np.exp(t) * (t - s))), rel=1e-4, abs=1e-6)
        assert blank.teacher_word == teacher.tokenizer.convert_ids_to_tokens(int(t.argmax()))
        assert blank.teacher_prob == pytest.approx(float(np.exp(t.max())), rel=1e-4)
    assert run.agreement == pytest.approx(np.mean([b.agree for b in run.blanks]))
    out = run.to_json()
    assert out["teacher_params"] == sum(p.numel() for p in teacher.model.parameters())
    assert out["student_layers"] == 1 and out["speedup"] > 0


def test_a_model_against_itself_agrees_everywhere_with_zero_kl(pair):
    teacher, _ = pair
    twin = models.LoadedModel(ModelChoice("twin", "masked", "local", "", ""), teacher.model, teacher.tokenizer,
                              "cpu", 0.0)
    run = distillation.distill(teacher, twin, "The cat sat on the [MASK].\nA [MASK] day.")
    assert run.agreement == 1.0 and run.mean_kl == pytest.approx(0.0, abs=1e-9)


def test_bad_input_is_refused_with_a_reason(pair):
    teacher, student = pair
    with pytest.raises(BadInput, match="exactly one"):
        distillation.distill(teacher, student, "No blank here.")
    with pytest.raises(BadInput, match="exactly one"):
        distillation.distill(teacher, student, "[MASK] and [MASK].")
    with pytest.raises(BadInput, match="different models"):
        distillation.distill(teacher, teacher)
    with pytest.raises(BadInput, match="Up to 20"):
        distillation.parse_sentences("\n".join(["A [MASK]."] * 21))


def test_models_with_different_vocabularies_are_refused(pair, tiny_models):
    teacher, _ = pair
    causal = models.load(tiny_models["causal"], "causal")
    other = models.LoadedModel(ModelChoice("other-vocab", "masked", "local", "", ""), teacher.model,
                               causal.tokenizer, "cpu", 0.0)
    with pytest.raises(BadInput, match="do not share a vocabulary"):
        distillation.distill(teacher, other)


def test_the_defaults_offline_say_they_need_the_hub():
    with pytest.raises(BadInput, match="needs a teacher and its student from the Hugging Face Hub"):
        distillation.distillation_api()


def test_distillation_api(client, tiny_models):
    result = client.predict("The [MASK] sat on the mat.", tiny_models["masked"], tiny_models["pretraining"],
                            api_name="/distillation")
    assert len(result["blanks"]) == 1 and 0 <= result["agreement"] <= 1 and result["mean_kl"] >= 0
    with pytest.raises(AppError, match="Hub"):
        client.predict("", "bert-base-uncased", "distilbert-base-uncased", api_name="/distillation")


def test_the_panel_compares_two_models_in_the_browser(page, tiny_models):
    open_tab(page, "Choosing a model")
    page.get_by_text("Distillation, checked").first.click()
    # Its own Teacher and Student (the temperature panel beside it has dropdowns of the same names).
    panel = page.locator(".gr-accordion").filter(has_text="Distillation, checked: a student against its teacher")
    for label, name in (("Teacher", tiny_models["masked"]), ("Student", tiny_models["pretraining"])):
        box = panel.get_by_label(label, exact=True)
        box.fill(name)  # the dropdowns take a typed name (allow_custom_value)
        box.press("Enter")
    page.get_by_role("button", name="Compare teacher and student").click()
    page.get_by_text("The student agrees with its teacher on").wait_for(timeout=60000)
    screenshot(page, "choosing_distillation")
