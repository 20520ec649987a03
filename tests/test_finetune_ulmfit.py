"""ULMFiT's middle stage: the lecture's three stages quoted verbatim under "ULMFiT"; the middle stage's loss is the
next-word (or masked-word) cross-entropy a hand loop computes; the classifier starts from the language model's own
transformer; a run on tiny models lowers the held-out language-model loss and reports both fine-tunes; the real
SmolLM2 goes through a short middle stage and becomes a classifier; the perplexity on the other domains' texts
(assets/domains.txt, none a review) is exp of transformers' own loss recomputed text by text; the panel draws."""

from __future__ import annotations

from pathlib import Path

import pytest

from labs.core.errors import BadInput
from labs.core.models import models
from labs.core.ui import course_quotes
from labs.finetune import tab_ulmfit, training, ulmfit
from labs.finetune.data import builtin_data

COURSE = Path(__file__).resolve().parents[2] / "shared" / "course"
STRATEGIES = "002_e542dddf905ba18f.txt"
TEXTS = [t for t, _ in builtin_data().train[:16]]
OTHER = [t for _, t in ulmfit.other_domain_texts()]


@pytest.mark.skipif(not COURSE.exists(), reason="the course's documents are in ../shared/course")
def test_the_three_stages_are_the_lectures_words_under_its_ulmfit_slides():
    text = (COURSE / STRATEGIES).read_text()
    for name, quote in ulmfit.STAGES:
        assert quote in text and quote.startswith(name), name
        before = [line for line in text[:text.index(quote)].splitlines() if line.strip()]
        assert ulmfit.SLIDE in before[-2:], name  # the slide's title, then at most one stage before this one


def hand_causal_loss(model, tokenizer, texts: list[str], dropout_seed: int | None = None) -> float:
    """Next-word cross-entropy written out: position t predicts token t+1; padding is never a target. With
    dropout_seed, in training mode with dropout drawn from that seed (as the middle stage's first step)."""
    import torch

    enc = tokenizer(texts, padding=True, truncation=True, max_length=training.MAX_LENGTH, return_tensors="pt")
    if dropout_seed is not None:
        torch.manual_seed(dropout_seed)
    model.train(dropout_seed is not None)
    with torch.no_grad():
        logits = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits
    targets = enc["input_ids"][:, 1:].clone()
    targets[enc["attention_mask"][:, 1:] == 0] = -100
    return torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), targets.reshape(-1),
                                             ignore_index=-100).item()


def perplexity_by_hand(loaded, texts: list[str]) -> float:
    """exp of the mean next-token loss over every predicted token of the texts, each text alone through
    transformers' own loss: model(ids, labels=ids).loss is the mean over its len(ids) − 1 predictions."""
    import math

    import torch

    loaded.model.eval()
    total = count = 0
    with torch.no_grad():
        for text in texts:
            ids = loaded.tokenizer(text, return_tensors="pt")["input_ids"]
            total += loaded.model(ids, labels=ids).loss.item() * (ids.shape[1] - 1)
            count += ids.shape[1] - 1
    return math.exp(total / count)


def test_the_other_domains_are_the_assets_texts_none_a_review():
    lines = [line for line in ulmfit.OTHER_DOMAINS.read_text().splitlines() if line.strip()]
    texts = [line for line in lines if not line.startswith("#")]
    assert OTHER == texts and len({d for d, _ in ulmfit.other_domain_texts()}) == sum(
        line.startswith("# ") and len(line.split()) <= 3 for line in lines)
    reviews = {t for t, _ in builtin_data().train + builtin_data().validation}
    assert not reviews & set(OTHER)


def test_the_middle_stages_loss_is_the_next_word_cross_entropy_by_hand(tiny_models):
    import copy

    loaded = models.load(tiny_models["causal"], "causal")
    model = copy.deepcopy(loaded.model)
    assert ulmfit.lm_loss(model, loaded.tokenizer, TEXTS, "causal", 0) == pytest.approx(
        hand_causal_loss(model, loaded.tokenizer, TEXTS), rel=1e-5)
    plan = ulmfit.check_plan(tiny_models["causal"], 8, 1, 1, 5)
    first = [TEXTS[i] for i in training.epoch_batches(len(TEXTS), ulmfit.BATCH, plan.seed, 1)[0]]
    expected = hand_causal_loss(model, loaded.tokenizer, first, plan.seed)  # the first batch, before any update
    history = []
    steps = list(ulmfit.middle_stage(model, loaded.tokenizer, TEXTS, plan, history))
    assert len(steps) == len(history) == 2 and history[0]["loss"] == pytest.approx(expected, rel=1e-5)
    assert steps[0].phase == "middle stage"
    changed = any(not a.equal(b) for a, b in zip(model.parameters(), loaded.model.parameters()))
    assert changed  # the copy trained; the shared loaded model did not move


def test_a_masked_lm_goes_on_with_masked_words_drawn_from_the_seed(tiny_models):
    import torch

    loaded = models.load(tiny_models["masked"], "masked", head="mlm")
    first = ulmfit.lm_loss(loaded.model, loaded.tokenizer, TEXTS, "masked", 3)
    assert first == ulmfit.lm_loss(loaded.model, loaded.tokenizer, TEXTS, "masked", 3)  # the same draw
    batch = ulmfit.lm_batch(loaded.tokenizer, TEXTS, ulmfit.collator(loaded.tokenizer, "masked", 3), "cpu")
    chosen = batch["labels"] != -100
    assert 0 < chosen.float().mean() < 0.4  # about 15 % of the tokens are targets
    with torch.no_grad():
        logits = loaded.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    by_hand = torch.nn.functional.cross_entropy(logits[chosen], batch["labels"][chosen]).item()
    assert first == pytest.approx(by_hand, rel=1e-5)


def test_the_classifier_starts_from_the_language_models_transformer(tiny_models):
    loaded = models.load(tiny_models["causal"], "causal")
    clf = ulmfit.classifier_from(loaded.model, loaded.tokenizer, 2, 0)
    mine, theirs = clf.base_model.state_dict(), loaded.model.base_model.state_dict()
    assert mine.keys() == theirs.keys() and all(mine[k].equal(theirs[k]) for k in mine)
    again = ulmfit.classifier_from(loaded.model, loaded.tokenizer, 2, 0)
    assert again.score.weight.equal(clf.score.weight)  # the same new head for the runs with and without
    assert clf.config.pad_token_id == loaded.tokenizer.pad_token_id


def test_a_run_lowers_the_held_out_lm_loss_and_reports_both_fine_tunes(tiny_models):
    *steps, result = list(ulmfit.run(ulmfit.check_plan(tiny_models["causal"], 8, 1, 1, 0)))
    j = result.to_json()
    assert [s.phase for s in steps][0] == "middle stage" and {s.phase for s in steps} == set(ulmfit.PHASES)
    assert j["lm_loss_after"] < j["lm_loss_before"] and j["unlabelled_texts"] == 264 and j["validation"] == 88
    assert j["gain"] == pytest.approx(j["with"]["accuracy"] - j["without"]["accuracy"])
    assert [s["quote"] for s in j["stages"]] == [q for _, q in ulmfit.STAGES]
    frame = tab_ulmfit.rows(j)
    assert frame.shape == (4, 3) and f"{j['with']['accuracy']:.1%}" in frame.values[2]
    assert f"perplexity {j['ood_perplexity_after']:.1f}" in frame.values[1][2]
    loaded = models.load(tiny_models["causal"], "causal")  # the shared model: the run trained copies
    assert j["ood_perplexity_before"] == pytest.approx(perplexity_by_hand(loaded, OTHER), rel=1e-5)
    assert j["ood_loss_after"] != j["ood_loss_before"] and j["ood_texts"] == len(OTHER) >= 12
    assert "news" in j["ood_domains"] and "reviews" not in " ".join(j["ood_domains"])
    assert [q["text"] for q in j["domain_shift"]] == [course_quotes.text(q) for q in ulmfit.DOMAIN_QUOTES]
    assert "points on 88 validation reviews" in tab_ulmfit.summary(j)


def test_an_encoder_without_a_pre_training_head_is_refused(tiny_models):
    with pytest.raises(BadInput, match="encoder|causal|masked"):
        ulmfit.check_plan(models.MINILM_NAME)
    for bad, words in (({"labelled": 4}, "labelled"), ({"lm_epochs": 9}, "lm epochs"), ({"epochs": 0}, "epochs")):
        with pytest.raises(BadInput, match=words):
            ulmfit.check_plan(tiny_models["causal"], **bad)


@pytest.mark.timeout(1800)  # real weights on a shared 2-core machine: minutes when it is busy
@pytest.mark.slow  # trains real weights
def test_on_the_real_smollm2_a_short_middle_stage_and_a_classifier():
    import copy

    loaded = models.load(models.SMOLLM2_NAME, "causal")
    held_out = [t for t, _ in builtin_data().validation[:16]]
    model = copy.deepcopy(loaded.model)
    before = ulmfit.lm_loss(model, loaded.tokenizer, held_out, "causal", 0)
    assert before == pytest.approx(hand_causal_loss(model, loaded.tokenizer, held_out), rel=1e-4)
    plan = ulmfit.check_plan(models.SMOLLM2_NAME, 8, 1, 1, 0)
    list(ulmfit.middle_stage(model, loaded.tokenizer, TEXTS, plan, []))  # two steps on 16 reviews
    assert ulmfit.lm_loss(model, loaded.tokenizer, held_out, "causal", 0) != before
    clf = ulmfit.classifier_from(model, loaded.tokenizer, 2, 0)
    probs = training.evaluate(clf, training.EncodedSentences(loaded.tokenizer, builtin_data().validation[:8], "cpu"))[2]
    assert len(probs) == 8 and all(abs(sum(p) - 1) < 1e-5 for p in probs)
    assert type(clf).__name__ == "LlamaForSequenceClassification"


@pytest.mark.timeout(1800)  # a run on a tiny model
def test_the_panel_draws_in_a_browser(browser, app_server, tiny_models):
    from conftest import at_each_width, panel_run, screenshot

    link = (f"{app_server['url']}?tab=finetune&ulmfit_model={tiny_models['causal']}&labelled=8&lm_epochs=1"
            "&ulmfit_epochs=1")
    with panel_run(browser, link, tab_ulmfit.TITLE, tab_ulmfit.BUTTON) as page:
        panel = page.locator("#ft-ulmfit")
        for width in at_each_width(page):
            panel.locator(".js-plotly-plot").first.wait_for(timeout=300000)
            panel.get_by_text("points on 88 validation reviews").wait_for(timeout=60000)
            panel.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
            screenshot(page, f"finetune_ulmfit_{width}")
