"""Embeddings, what each layer knows: the probes' features against the model's own output_hidden_states, their
held-out accuracy and baseline against scikit-learn's cross_val_predict and DummyClassifier on the same folds,
the labelled set checked, the expected layer and the textbook's bands by hand, MiniLM's real curves, the textbook
quoted verbatim, bad input, the shared result equal to a local one, the API and the panel in a browser."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import linked_inputs, open_tab, screenshot
from gradio_client.exceptions import AppError

from labs.core.errors import BadInput
from labs.core.models import models
from labs.embeddings import probes, tab_probes

COURSE = Path("/work/shared/course")


@pytest.fixture(scope="module")
def minilm():
    return models.load(models.MINILM_NAME)


@pytest.fixture(scope="module")
def minilm_run(minilm):
    """Every probe on the real MiniLM, once (shared: later calls get the kept curves)."""
    return probes.run(minilm, "all").to_json()


# ---------------------------------------------------------------- the labelled set


def test_the_set_is_labelled_as_its_header_says(minilm):
    data = probes.load_set()
    assert {p: len(e) for p, e in data.items() if p != "position"} == {"pos": 176, "subject": 120, "agent": 120,
                                                                      "sense": 80}
    for probe, examples in data.items():
        for e in examples:
            if e.word:
                assert probe == "position" or e.word.lower() in e.sentence.lower()
        for fold in range(probes.FOLDS):  # every fold holds out sentences of every class
            if probe != "position":
                assert {e.label for e in examples if e.fold == fold} == {e.label for e in examples}
        sentences = {}
        for e in examples:  # a sentence is in one fold only: held out as a whole
            assert sentences.setdefault(e.sentence, e.fold) == e.fold
    subject = {(e.sentence, e.word): e.label for e in data["subject"]}
    agent = {(e.sentence, e.word): e.label for e in data["agent"]}
    differ = {s for (s, w) in subject if (subject[s, w] == "subject") != (agent[s, w] == "agent")}
    assert differ == {s for s, _ in subject if " by the " in s}  # subject and agent part only in the passive
    sense_words = {}
    for e in data["sense"]:
        sense_words.setdefault(e.word, set()).add(e.label)
    assert len(sense_words) == 10 and all(len(v) == 2 for v in sense_words.values())


def test_every_word_is_found_and_positions_are_real_tokens(minilm):
    for e in probes.load_set()["pos"] + probes.load_set()["sense"]:
        enc = minilm.tokenizer(e.sentence, return_offsets_mapping=True)
        at = probes.locate([tuple(o) for o in enc["offset_mapping"]], e.sentence, e.word)
        assert at and minilm.tokenizer.decode([enc["input_ids"][i] for i in at]).replace(" ", "") == e.word.lower()
    positions = probes.position_examples(minilm.tokenizer, probes.load_set()["position"])
    assert {e.label for e in positions} == {str(k) for k in range(1, 9)}
    for e in positions:
        ids = minilm.tokenizer(e.sentence)["input_ids"]
        assert 1 <= e.position < len(ids) - 1  # never [CLS] or [SEP]


# ---------------------------------------------------------------- oracles


def test_the_features_are_the_models_own_hidden_states(minilm):
    examples = probes.load_set()["sense"][:6] + probes.load_set()["pos"][:6]
    features = probes.vectors(minilm, examples)
    for k, e in enumerate(examples):
        enc = minilm.tokenizer(e.sentence, return_offsets_mapping=True, return_tensors="pt")
        at = probes.locate([tuple(o) for o in enc["offset_mapping"][0].tolist()], e.sentence, e.word)
        with torch.no_grad():
            states = minilm.model(input_ids=enc["input_ids"], output_hidden_states=True).hidden_states
        own = torch.stack([h[0, at].mean(0) for h in states]).numpy()  # [layers + 1, hidden]
        np.testing.assert_allclose(features[:, k], own, atol=1e-4)


def test_accuracy_and_baseline_equal_scikit_learns_cross_validation(minilm):
    from sklearn.dummy import DummyClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import PredefinedSplit, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    examples = probes.load_set()["subject"]
    features = probes.vectors(minilm, examples)[3]
    labels, folds = np.array([e.label for e in examples]), np.array([e.fold for e in examples])
    accuracy, baseline = probes.held_out_accuracy(features, list(labels), list(folds))
    split = PredefinedSplit(folds)
    predicted = cross_val_predict(make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)), features,
                                  labels, cv=split)
    guessed = cross_val_predict(DummyClassifier(strategy="most_frequent"), features, labels, cv=split)
    assert accuracy == pytest.approx(np.mean(predicted == labels))
    assert baseline == pytest.approx(np.mean(guessed == labels))


def test_the_expected_layer_and_the_bands_by_hand():
    assert probes.expected_layer([0.5, 0.7, 0.9, 0.9]) == pytest.approx((1 * 0.2 + 2 * 0.2) / 0.4)
    assert probes.expected_layer([0.5, 0.9, 0.7, 0.9]) == pytest.approx((1 * 0.4 + 3 * 0.2) / 0.6)  # losses: 0
    assert probes.expected_layer([0.9, 0.8, 0.7]) == 0.0
    assert probes.bands(12) == {"lower": [1, 2, 3, 4], "middle": [5, 6, 7, 8], "upper": [9, 10, 11, 12]}
    assert probes.bands(6) == {"lower": [1, 2], "middle": [3, 4], "upper": [5, 6]}


def curve(probe_id: str, accuracy: list[float]) -> probes.ProbeCurve:
    p = probes.PROBES[probe_id]
    return probes.ProbeCurve(p.id, p.name, p.question, p.kind, p.band, p.why_band, ["a", "b"], 10, 5, accuracy, 0.5)


def test_the_reading_says_whether_the_order_holds():
    ordered = [curve("pos", [0.5, 0.9, 0.9, 0.9]), curve("subject", [0.5, 0.5, 0.9, 0.9]),
               curve("agent", [0.5, 0.5, 0.5, 0.9])]
    assert probes.reading(ordered)[0]
    swapped = [curve("pos", [0.5, 0.5, 0.5, 0.9]), curve("agent", [0.5, 0.9, 0.9, 0.9])]
    holds, why = probes.reading(swapped)
    assert not holds and "agent or patient (semantics) gains earlier, at layer 1.0, than part of speech" in why
    level = [curve("subject", [0.5, 0.5, 0.9, 0.9]), curve("agent", [0.5, 0.55, 0.9, 0.9])]  # within TIE
    assert probes.reading(level)[0]


# ---------------------------------------------------------------- the real model


def test_minilms_layers_on_the_real_model(minilm_run):
    """What a student sees on all-MiniLM-L6-v2 (figures in the report): position is read off the embeddings and
    fades towards the top; the word probes all beat their baselines; the roles need context (layer 0 is near
    the baseline, the middle layers near perfect); sense is read from layer 1 on."""
    by = {p["id"]: p for p in minilm_run["probes"]}
    assert minilm_run["num_layers"] == 6 and minilm_run["bands"]["middle"] == [3, 4]
    position = by["position"]["accuracy"]
    assert position[0] > 0.9 and position[-1] < position[0] - 0.3 and by["position"]["expected_layer"] == 0
    for probe in ("pos", "subject", "agent", "sense"):
        p = by[probe]
        assert max(p["accuracy"]) > p["baseline"] + 0.3, probe
    for probe in ("subject", "agent"):
        acc = by[probe]["accuracy"]
        assert acc[0] < 0.75 and max(acc[2:5]) > 0.9 and by[probe]["best_layer"] in (2, 3, 4), probe
    assert by["sense"]["accuracy"][0] < 0.75 and by["sense"]["accuracy"][-1] > 0.85
    assert by["pos"]["accuracy"][0] < by["pos"]["accuracy"][by["pos"]["best_layer"]] - 0.1
    assert isinstance(minilm_run["picture_holds"], bool) and minilm_run["reading"]


def test_the_shared_curve_equals_a_local_one(tiny_models):
    tiny = models.load(tiny_models["masked"], "masked")
    shared = probes.run(tiny, "sense").curves[0]
    assert probes.run(tiny, "sense").curves[0] is shared  # kept: computed once
    local = probes.curve(tiny, "sense")
    assert local.accuracy == shared.accuracy and local.baseline == shared.baseline and len(local.accuracy) == 3


@pytest.mark.skipif(not COURSE.exists(), reason="the course's documents are in ../shared/course")
def test_the_textbook_is_quoted_verbatim_under_its_section():
    text = (COURSE / probes.TEXTBOOK).read_text()
    section = text.split(probes.SECTION, 1)[1].split("20.8.2 ", 1)[0]
    for quote in probes.QUOTES:
        assert quote in section and quote in tab_probes.COURSE, quote


def test_bad_input_is_refused_with_a_reason(tiny_models):
    with pytest.raises(BadInput, match="probe must be one of"):
        probes.probe_layers("", "syntax")
    with pytest.raises(BadInput, match="not an encoder"):
        probes.probe_layers(tiny_models["causal"], "pos")
    assert probes.check_probe("") == list(probes.ORDER) == probes.check_probe("all")


# ---------------------------------------------------------------- the API and the panel


def test_probe_layers_api(client, tiny_models):
    out = client.predict(tiny_models["masked"], "agent", api_name="/probe_layers")
    assert [p["id"] for p in out["probes"]] == ["agent"] and len(out["probes"][0]["accuracy"]) == 3
    assert out["probes"][0]["baseline"] == 0.5 and out["probes"][0]["classes"] == ["agent", "patient"]
    with pytest.raises(AppError, match="probe must be one of"):
        client.predict(tiny_models["masked"], "nope", api_name="/probe_layers")


def test_the_panel_handler(minilm_run):
    note, fig, frame, out = tab_probes.on_probes("all", models.MINILM_NAME)
    assert out == minilm_run and len(frame) == 5 and "expected layer" in note
    assert len(fig.data) == 10  # a curve and a baseline per probe


def test_a_link_sets_the_panels_inputs_and_a_bad_value_falls_back():
    from labs.core.ui import links

    specs = linked_inputs("embeddings")
    assert {"probe", "probe_model"} <= set(specs)
    good = {"tab": "embeddings", "probe": "sense", "probe_model": models.MINILM_NAME}
    tab, values, notes = links.read(good, ["embeddings"], {"embeddings": specs})
    assert tab == "embeddings" and notes == []
    assert {name: v for (_, name), v in values.items()} == {"probe": "sense", "probe_model": models.MINILM_NAME}
    _, values, notes = links.read({"tab": "embeddings", "probe": "syntax"}, ["embeddings"], {"embeddings": specs})
    assert values == {} and len(notes) == 1 and "default" in notes[0]


def test_the_panel_in_the_browser(page, minilm_run):
    page.set_default_timeout(120000)  # a busy machine: every step waits for its state, however long
    open_tab(page, "Embeddings")
    page.get_by_text("What each layer knows: linear probes").first.scroll_into_view_if_needed()
    page.get_by_text("The picture").first.wait_for(timeout=120000)
    page.get_by_text("What each layer knows: linear probes").first.scroll_into_view_if_needed()
    screenshot(page, "embeddings_probes")
    assert page.outside_requests == []
