"""Pre-training: the four objectives' examples, NSP with BERT's own head, span corruption and T5's fill,
and the mask-rate curve. Oracles: BertForPreTraining called directly, DataCollatorForLanguageModeling,
model.generate, a hand loop over the same masked copies."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import open_tab, screenshot

from labs.core.errors import BadInput, LabError
from labs.core.models import models
from labs.core.work import lm
from labs.pretraining import mask_rate, nsp, objectives, passages, span_corruption, tab_examples

WORDS = ("the cat sat on a mat while dog ran in park once upon time there was bank by river she went to open "
         "account language model predicts next token attention lets every look at other quick brown fox jumps "
         "over lazy").split()


@pytest.fixture(scope="module")
def bert(tiny_models):
    return nsp.load(tiny_models["pretraining"])


@pytest.fixture(scope="module")
def t5(tiny_models):
    return models.load(tiny_models["seq2seq"], "seq2seq")


def test_the_built_in_passages_keep_their_format():
    found = passages.passages()
    assert len(found) >= 10 and len({p.topic for p in found}) == len(found)
    assert len(passages.consecutive_pairs()) >= 40
    assert all(len(p.sentences) >= 2 for p in found)
    assert len(passages.mask_rate_sentences()) == passages.MASK_RATE_SENTENCES
    assert passages.parse("# c\n== A ==\nOne.\nTwo.\n\n== B ==\nThree.\n")[0].sentences == ("One.", "Two.")
    assert passages.split_sentences("It rained. Then it stopped! Why?\nNew line") == [
        "It rained.", "Then it stopped!", "Why?", "New line"]


# ------------------------------------------------------------------ NSP


def test_nsp_equals_bert_for_pretraining_called_directly(bert):
    from transformers import BertForPreTraining

    oracle = BertForPreTraining.from_pretrained(bert.choice.location).eval()
    result = nsp.predict(bert, nsp.EXAMPLE_A, nsp.EXAMPLE_B)
    sep = result.tokens.index("[SEP]")
    assert result.tokens[0] == "[CLS]" and result.tokens[-1] == "[SEP]"
    assert result.segment_ids == [0] * (sep + 1) + [1] * (len(result.ids) - sep - 1)
    with torch.no_grad():
        logits = oracle(input_ids=torch.tensor([result.ids]),
                        token_type_ids=torch.tensor([result.segment_ids])).seq_relationship_logits[0]
    assert result.p_is_next == pytest.approx(float(torch.softmax(logits, -1)[0]), abs=1e-5)
    np.testing.assert_allclose(result.logits, logits.numpy(), atol=1e-5)


def test_nsp_batched_equals_one_at_a_time(bert):
    pairs = [(a, b) for _, a, b in passages.consecutive_pairs()[:5]]
    items = [tuple(map(tuple, nsp.encode(bert, a, b))) for a, b in pairs]
    together = nsp.run_nsp(bert, items)
    for item, row in zip(items, together):
        np.testing.assert_allclose(nsp.run_nsp(bert, [item])[0], row, atol=1e-5)


def test_nsp_accuracy_counts_both_kinds_of_negatives(bert):
    result = nsp.accuracy(bert, 0)
    assert result["pairs"] == len(passages.consecutive_pairs())
    pairs = nsp.test_pairs(0)
    probs = {k: nsp.p_is_next_many(bert, v) for k, v in pairs.items()}
    hits = [p > 0.5 for p in probs["next"]]
    assert result["accuracy_random"] == pytest.approx(np.mean(hits + [p <= 0.5 for p in probs["random"]]))
    assert result["accuracy_swapped"] == pytest.approx(np.mean(hits + [p <= 0.5 for p in probs["swapped"]]))
    assert all((a, b) == (a2, b2) for (a, b), (b2, a2) in zip(pairs["next"], pairs["swapped"]))


def test_a_random_nsp_head_is_never_shown(tiny_models):
    with pytest.raises(models.ModelUnavailable, match="no trained next-sentence"):
        nsp.load(tiny_models["masked"])  # saved as BertForMaskedLM: no NSP weights
    with pytest.raises(models.ModelUnavailable, match="no trained next-sentence"):
        nsp.load(models.MINILM_NAME)
    with pytest.raises(BadInput, match="is not a masked language model or an encoder"):
        nsp.load(tiny_models["causal"])


# ------------------------------------------------------------------ span corruption


def random_text(rng) -> str:
    return " ".join(rng.choice(WORDS, size=int(rng.integers(2, 60))))


@pytest.mark.parametrize("which", ["t5", "wordpiece"])
def test_span_corruption_invariants_over_200_texts(which, t5, bert):
    loaded = t5 if which == "t5" else bert
    rng = np.random.default_rng(1)
    for trial in range(200):
        density = float(rng.choice([0.05, 0.15, 0.3, 0.5]))
        mean_span = float(rng.choice([1, 2, 3, 5]))
        c = span_corruption.corrupt_text(loaded, random_text(rng), density, mean_span, trial)
        length = len(c.ids)
        noise = min(max(round(length * density), 1), length - 1)
        assert sum(c.mask) == noise
        assert len(c.spans) == min(max(round(noise / mean_span), 1), length - noise)
        assert all(b[0] > a[1] for a, b in zip(c.spans, c.spans[1:]))  # never touch
        sentinels = c.sentinels
        assert [i for i in c.input_ids if i in sentinels] == sentinels[:len(c.spans)]
        assert [i for i in c.target_ids if i in sentinels] == sentinels[:len(c.spans) + 1]
        # interleave the target's spans back into the input: the original exactly
        spans, current = {}, None
        for i in c.target_ids:
            if i in sentinels:
                current = i
                spans[current] = []
            elif i != loaded.tokenizer.eos_token_id:
                spans[current].append(i)
        restored = [t for i in c.input_ids for t in (spans[i] if i in sentinels else [i])]
        if which == "t5":
            assert restored[-1] == loaded.tokenizer.eos_token_id
            restored = restored[:-1]
        assert restored == c.ids


def test_t5_names_its_sentinels_counting_up(t5):
    c = span_corruption.corrupt_text(t5, span_corruption.EXAMPLE, 0.15, 3, 0)
    names = span_corruption.token_names(t5.tokenizer, c.target_ids)
    assert [n for n in names if n.startswith("<extra_id_")] == [f"<extra_id_{k}>" for k in range(len(c.spans) + 1)]
    assert names[-1] == "</s>"


def test_t5_fill_equals_model_generate(t5, bert):
    result = span_corruption.fill(t5, bert, span_corruption.EXAMPLE, 0.15, 3, 4)
    c = result.corruption
    with torch.no_grad():
        out = t5.model.generate(torch.tensor([c.input_ids]), max_new_tokens=span_corruption.fill_budget(
            len(c.target_ids)), do_sample=False, num_beams=1)[0].tolist()
    assert result.output_ids == out
    decoded = t5.tokenizer.decode(out)
    for k, predicted in enumerate(result.predicted):
        if predicted is not None:
            assert f"<extra_id_{k}>" in decoded
    assert len(result.bert_predicted) == len(c.spans)
    assert [f["original"] for f in result.to_json()["filled"]] == [
        t5.tokenizer.decode(c.ids[s:e]).strip() for s, e in c.spans]


# ------------------------------------------------------------------ the four examples


def test_the_masked_lm_example_equals_data_collator_for_language_modeling(bert):
    from transformers import DataCollatorForLanguageModeling

    for seed in range(20):
        text = " ".join(WORDS[seed:seed + 25])
        example = objectives.mlm_example(bert, text, seed)
        collator = DataCollatorForLanguageModeling(bert.tokenizer, mlm_probability=0.15, seed=seed)
        batch = collator([example["ids"]])
        assert example["input_ids"] == batch["input_ids"][0].tolist()
        assert example["labels"] == batch["labels"][0].tolist()


def test_four_examples_same_seed_same_example(tiny_models):
    args = (objectives.EXAMPLE, "", tiny_models["pretraining"], tiny_models["causal"], tiny_models["seq2seq"])
    first = objectives.pretraining_examples_json(*args, 3)
    assert first == objectives.pretraining_examples_json(*args, 3)
    gpt = first["gpt"]
    assert gpt["target_ids"] == gpt["ids"][1:] and gpt["input_ids"] == gpt["ids"][:-1]
    assert gpt["signal"]["fraction"] == 1.0
    assert first["nsp"]["label"] in ("IsNext", "NotNext") and first["nsp"]["tokens"][0] == "[CLS]"
    assert first["t5"]["input_tokens"][-1] == "</s>" and first["notes"] == []
    labels = {objectives.pretraining_examples_json(*args, s)["nsp"]["label"] for s in range(12)}
    assert labels == {"IsNext", "NotNext"}


def test_examples_offline_use_minilm_tokens_and_say_what_needs_the_hub():
    result = objectives.pretraining_examples_json(objectives.EXAMPLE, "", "", "", "", 0)
    assert result["mlm"]["model"] == models.MINILM_NAME and result["t5"]["model"] == models.MINILM_NAME
    assert any("bert-base-uncased" in n for n in result["notes"]) and any("t5-small" in n for n in result["notes"])
    assert "<extra_id_0>" in result["t5"]["input_tokens"] and None in result["t5"]["input_ids"]
    html = tab_examples.examples_html(result)
    assert "<extra_id_0>" not in html and "&lt;extra_id_0&gt;" in html


# ------------------------------------------------------------------ mask rate


def test_mask_rate_accuracy_equals_a_hand_loop(bert):
    loaded = models.load(bert, "masked", head="mlm")
    text = "My own sentence is about a small red boat."
    result = mask_rate.curve(loaded, text, [10, 40], False, 2)
    sentences = passages.mask_rate_sentences() + [text]
    assert result.sentences == sentences
    copies = mask_rate.masked_copies(loaded, mask_rate.encode_sentences(loaded, sentences), [10.0, 40.0], False, 2)
    for point in result.points:
        hits, losses = [], []
        for rate, _, j, ids, masked, positions in copies:
            if rate != point["rate"]:
                continue
            with torch.no_grad():
                logits = loaded.model(input_ids=torch.tensor([masked])).logits[0, positions]
            hits += (logits.argmax(-1) == torch.tensor([ids[p] for p in positions])).tolist()
            losses += (-torch.log_softmax(logits, -1)[range(len(positions)), [ids[p] for p in positions]]).tolist()
        assert point["accuracy"] == pytest.approx(np.mean(hits))
        assert point["loss"] == pytest.approx(np.mean(losses), abs=1e-4)
        assert point["masked_tokens"] == len(hits)
    # the same sentences at every rate: every (seed, sentence) appears once per rate
    assert {(s, j) for r, s, j, *_ in copies if r == 10.0} == {(s, j) for r, s, j, *_ in copies if r == 40.0}


def test_mask_positions_single_and_spans_share_the_budget():
    candidates = list(range(1, 41))
    for rate in (5, 15, 50, 80):
        single = mask_rate.mask_positions(candidates, rate, False, np.random.default_rng(0))
        spans = mask_rate.mask_positions(candidates, rate, True, np.random.default_rng(0))
        assert len(single) == len(spans) == max(round(40 * rate / 100), 1)
        assert set(spans) <= set(candidates)


def test_mask_rate_batched_equals_one_at_a_time(bert):
    loaded = models.load(bert, "masked", head="mlm")
    copies = mask_rate.masked_copies(loaded, mask_rate.encode_sentences(loaded, passages.mask_rate_sentences()[:6]),
                                     [30.0], True, 1)
    items = [(tuple(m), tuple(p)) for *_, m, p in copies]
    together = lm.RUNNERS["mlm"](loaded, items)
    for item, row in zip(items, together):
        np.testing.assert_allclose(lm.RUNNERS["mlm"](loaded, [item])[0], row, atol=1e-4)


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize("call, match", [
    (lambda m: nsp.nsp_json("Only one sentence here.", "", m["pretraining"]), "two sentences"),
    (lambda m: nsp.nsp_json("", "B.", m["pretraining"]), "Type sentence A"),
    (lambda m: nsp.nsp_json("A.", "B.", m["causal"]), "is not a masked language model"),
    (lambda m: objectives.pretraining_examples_json("   ", "", m["masked"], m["causal"], m["seq2seq"], 0), "Type"),
    (lambda m: objectives.pretraining_examples_json("x" * 3000, "", m["masked"], "", "", 0), "at most 2,000"),
    (lambda m: objectives.pretraining_examples_json("word " * 300, "", m["masked"], "", "", 0), "tokens long"),
    (lambda m: objectives.pretraining_examples_json("A b.", "", m["masked"], "", "", -1), "seed"),
    (lambda m: span_corruption.span_corruption_json("The cat sat.", m["seq2seq"], 0.6, 3, 0), "noise density"),
    (lambda m: span_corruption.span_corruption_json("The cat sat.", m["seq2seq"], 0, 3, 0), "noise density"),
    (lambda m: span_corruption.span_corruption_json("The cat sat.", m["seq2seq"], 0.15, 0.5, 0), "mean span"),
    (lambda m: span_corruption.span_corruption_json("", m["seq2seq"], 0.15, 3, 0), "Type"),
    (lambda m: span_corruption.span_corruption_json("The cat sat.", m["masked"], 0.15, 3, 0), "encoder-decoder"),
    (lambda m: mask_rate.mask_rate_json("", m["masked"], "0, 15", False, 1), "mask rate"),
    (lambda m: mask_rate.mask_rate_json("", m["masked"], "15", False, 9), "seeds"),
    (lambda m: mask_rate.mask_rate_json("", m["causal"], "15", False, 1), "is not a masked language model"),
])
def test_bad_input_gets_a_sentence(tiny_models, call, match):
    with pytest.raises(LabError, match=match):
        call(tiny_models)


# ------------------------------------------------------------------ API and browser


def test_api_endpoints(client, tiny_models):
    m = tiny_models
    ex = client.predict(objectives.EXAMPLE, "", m["pretraining"], m["causal"], m["seq2seq"], 1,
                        api_name="/pretraining_examples")
    assert {"gpt", "mlm", "nsp", "t5", "notes", "seed"} <= set(ex)
    out = client.predict(nsp.EXAMPLE_A, nsp.EXAMPLE_B, m["pretraining"], api_name="/nsp")
    assert {"tokens", "segment_ids", "p_is_next", "logits"} <= set(out) and 0 <= out["p_is_next"] <= 1
    spans = client.predict(span_corruption.EXAMPLE, m["seq2seq"], 0.15, 3, 0, api_name="/span_corruption")
    assert {"input_tokens", "target_tokens", "spans", "filled"} <= set(spans)
    assert set(spans["spans"][0]) >= {"start", "end", "text", "sentinel"}
    assert set(spans["filled"][0]) >= {"sentinel", "predicted", "original"}
    curve = client.predict("", m["pretraining"], "5, 15, 50", True, 1, api_name="/mask_rate")
    assert [p["rate"] for p in curve["points"]] == [5, 15, 50] and curve["span"] is True
    acc = client.predict(m["pretraining"], 0, api_name="/nsp_accuracy")
    assert 0 <= acc["accuracy_random"] <= 1 and 0 <= acc["accuracy_swapped"] <= 1
    with pytest.raises(Exception, match="two sentences"):
        client.predict("One sentence.", "", m["pretraining"], api_name="/nsp")


def test_pretraining_tab_in_the_browser(page):
    open_tab(page, "Pre-training")
    page.get_by_text("Training signal:").first.wait_for(timeout=60000)
    page.get_by_text("P(IsNext) =").first.wait_for(timeout=60000)
    page.get_by_text("Input to T5").first.wait_for(timeout=60000)
    page.get_by_role("button", name="Reveal: measure it live").click()
    page.get_by_text("Measured here").first.wait_for(timeout=60000)
    page.get_by_role("button", name="Draw the curve (5 % to 80 %)").click()
    page.get_by_text("masked copies per curve").first.wait_for(timeout=90000)
    page.locator(".js-plotly-plot:visible").first.wait_for(timeout=60000)  # the curve is drawn
    assert page.get_by_text("BERT: masked LM").count() >= 1 and page.get_by_text("T5: span corruption").count() >= 1
    screenshot(page, "pretraining")
    assert page.outside_requests == []
