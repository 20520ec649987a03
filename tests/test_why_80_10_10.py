"""Pre-training, why 80 / 10 / 10: the draw is DataCollatorForLanguageModeling's; each condition's loss is
torch's cross_entropy on the model's own logits and its accuracy a hand count; offline it says what it needs;
the quotes are the course's own text."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import open_tab, screenshot

from labs.core.errors import LabError
from labs.core.models import models
from labs.pretraining import masking, passages, tab_why_mask
from labs.pretraining import why_80_10_10 as why

COURSE = Path(__file__).resolve().parents[2] / "shared" / "course"
OWN = "The night train leaves before midnight. Passengers find their cabins and unfold the narrow beds."


@pytest.fixture(scope="module")
def bert(tiny_models):
    return models.load(tiny_models["masked"], "masked")


def test_the_draw_is_data_collator_for_language_modeling(bert):
    from transformers import DataCollatorForLanguageModeling

    texts, _ = why.source_texts("")
    rows = why.drawn(bert.tokenizer, texts, 7, 256)
    assert len(rows) == len(passages.passages())
    for j, (ids, d, candidates) in enumerate(rows):
        batch = DataCollatorForLanguageModeling(bert.tokenizer, mlm_probability=0.15, seed=why.row_seed(7, j))([ids])
        seen, labels = batch["input_ids"][0].tolist(), batch["labels"][0].tolist()
        assert d.chosen == [label != -100 for label in labels]
        assert masking.mlm_draw(bert.tokenizer, ids, why.row_seed(7, j)) == (seen, labels)
        inputs = why.condition_inputs(ids, d, bert.tokenizer.mask_token_id)
        for p in d.positions:  # the random condition's token is the collator's wherever the collator randomised
            if seen[p] not in (bert.tokenizer.mask_token_id, ids[p]):
                assert inputs["random"][p] == seen[p]
        unchosen = [p for p in range(len(ids)) if not d.chosen[p]]
        assert all(inputs[k][p] == ids[p] for k in inputs for p in unchosen)  # only the chosen positions differ
        assert set(d.positions) <= set(candidates)


@pytest.mark.parametrize("text", ["", OWN])
def test_losses_are_cross_entropy_on_the_models_own_logits(bert, text):
    result = why.measure(bert, text, 3).to_json()
    texts, _ = why.source_texts(text)
    scored = {k: ([], []) for k in why.CONDITIONS}  # logits rows, targets
    for ids, d, candidates in why.drawn(bert.tokenizer, texts, 3, 256):
        inputs = why.condition_inputs(ids, d, bert.tokenizer.mask_token_id)
        for kind, positions in (("mask", d.positions), ("random", d.positions), ("keep", d.positions),
                                ("no_mask", [p for p in candidates if not d.chosen[p]])):
            with torch.no_grad():
                logits = bert.model(input_ids=torch.tensor([inputs["keep" if kind == "no_mask" else kind]])).logits[0]
            scored[kind][0].append(logits[positions])
            scored[kind][1].extend(ids[p] for p in positions)
    by_name = {c["name"]: c for c in result["conditions"]}
    for kind, (rows, targets) in scored.items():
        logits, targets = torch.cat(rows), torch.tensor(targets)
        c = by_name[kind]
        assert c["positions"] == len(targets)
        if not len(targets):
            continue
        assert c["loss"] == pytest.approx(float(torch.nn.functional.cross_entropy(logits, targets)), abs=1e-4)
        assert c["accuracy"] == pytest.approx(float((logits.argmax(-1) == targets).float().mean()))
    assert result["measured"] and result["model"] == bert.name
    assert result["chosen"] == by_name["mask"]["positions"] == by_name["random"]["positions"]
    assert result["tokens"] == by_name["keep"]["positions"] + by_name["no_mask"]["positions"]


def test_random_condition_counts_copies_of_the_token_it_sees(bert):
    result = why.measure(bert, "", 0)
    texts, _ = why.source_texts("")
    hits = []
    for ids, d, _ in why.drawn(bert.tokenizer, texts, 0, 256):
        inputs = why.condition_inputs(ids, d, bert.tokenizer.mask_token_id)
        with torch.no_grad():
            top = bert.model(input_ids=torch.tensor([inputs["random"]])).logits[0].argmax(-1)
        hits += [int(top[p]) == d.random_ids[p] for p in d.positions]
    assert result.conditions[1]["copies_input"] == pytest.approx(np.mean(hits))


def test_the_example_shows_what_each_condition_sees(bert):
    result = why.measure(bert, OWN, 1).to_json()
    ex = result["example"]
    assert ex["tokens"] == models.readable_tokens(bert.tokenizer, bert.tokenizer(OWN)["input_ids"])
    for p in range(len(ex["ids"])):
        if p in ex["positions"]:
            assert ex["inputs"]["mask"][p] == "[MASK]" and ex["top1"]["mask"][p] and ex["top1"]["keep"][p]
        else:
            assert ex["inputs"]["mask"][p] == ex["inputs"]["random"][p] == ex["tokens"][p]
            assert ex["top1"]["mask"][p] == "" and ex["top1"]["keep"][p] == ""
    html = tab_why_mask.example_html(result)
    assert "[MASK]" in html and "shown as [MASK]" in html


def test_offline_shows_the_draws_and_says_what_it_needs():
    tokenizer = models.load_tokenizer(models.MINILM_NAME)
    result = why.measure(None, "", 0, tokenizer).to_json()
    assert not result["measured"] and result["model"] is None
    assert "Not measured here: needs bert-base-uncased from the Hub" in result["notes"][0]
    assert all(c["loss"] is None and c["accuracy"] is None for c in result["conditions"])
    assert result["chosen"] > 0 and result["example"]["top1"] == {}
    table = tab_why_mask.condition_rows(result)
    assert (table["top-1 = original"] == "not measured here").all()
    assert "not measured here" in tab_why_mask.why_markdown(result).lower().replace("\\", "")


def test_user_text_is_escaped(bert):
    result = why.measure(bert, "<b>bold</b> & <script>x</script> text.", 0).to_json()
    html = tab_why_mask.example_html(result)
    assert "<script>" not in html and "<b>bold" not in html
    assert "<script>" not in tab_why_mask.why_markdown(result)


@pytest.mark.parametrize("call, match", [
    (lambda m: why.why_80_10_10_json("", m["masked"], -1), "seed"),
    (lambda m: why.why_80_10_10_json("word " * 300, m["masked"], 0), "tokens long"),
    (lambda m: why.why_80_10_10_json("x" * 3000, m["masked"], 0), "at most 2,000"),
    (lambda m: why.why_80_10_10_json("", m["causal"], 0), "is not a masked language model"),
    (lambda m: why.why_80_10_10_json("", "no-such-model", 0), "no model called"),
    (lambda m: why.why_80_10_10_json(["a list"], m["masked"], 0), "paragraph"),
])
def test_bad_input_gets_a_sentence(tiny_models, call, match):
    with pytest.raises(LabError, match=match):
        call(tiny_models)


@pytest.mark.skipif(not COURSE.exists(), reason="the course's documents are in ../shared/course")
def test_the_quotes_are_the_courses_own_text():
    for document, where, quote in why.COURSE:
        text = next(COURSE.glob(f"{document}_*.txt")).read_text()
        assert quote in text, quote
    strategies = next(COURSE.glob("002_*.txt")).read_text()
    assert "BERT: Bidirectional Encoder Representations from Transformers" in strategies
    assert "20.2.3 Pre-training Objective 1: Masked Language Modeling (MLM)" in next(COURSE.glob("003_*.txt")).read_text()


def test_api(client, tiny_models):
    out = client.predict("", tiny_models["masked"], 2, api_name="/why_80_10_10")
    assert out["measured"] and [c["name"] for c in out["conditions"]] == list(why.CONDITIONS)
    assert all(0 <= c["accuracy"] <= 1 for c in out["conditions"])
    with pytest.raises(Exception, match="seed"):
        client.predict("", tiny_models["masked"], -1, api_name="/why_80_10_10")


def test_why_panel_in_the_browser(page):
    open_tab(page, "Pre-training")
    page.get_by_role("button", name="Measure the four conditions").click()
    page.get_by_text("Why not always [MASK]?").first.wait_for(timeout=60000)
    page.get_by_text("shown as [MASK]").first.wait_for(timeout=60000)
    page.get_by_text("Why not always [MASK]?").first.scroll_into_view_if_needed()
    screenshot(page, "pretraining_why_80_10_10")
    assert page.outside_requests == []
