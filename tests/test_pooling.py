"""Embeddings, sentence vectors: [CLS], mean and max pooling against a hand computation on a padded batch
(the model's own output_hidden_states with the attention mask: padding out of the mean and the max), the
mean against all-MiniLM-L6-v2's documented recipe (its package's README; sentence-transformers is not
installed here), the retrieval scores counted by hand, the trained pooling read from the model's files,
and the course's quotes found in the course."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import minilm_folder, open_tab
from gradio_client.exceptions import AppError

from labs.core.errors import BadInput
from labs.core.models import models
from labs.embeddings import pooling, tab_pooling

COURSE = Path(__file__).resolve().parents[2] / "shared" / "course"  # beside the clone, as in CI
SHORT = "A cat sat. | cat\nThe cat was sitting down on the old mat in the kitchen. | cat\nStock prices fell sharply."


def hand_pooled(loaded, sentences: list[str]) -> dict[str, np.ndarray]:
    """One padded batch through the bare encoder; pooling by hand with the attention mask."""
    batch = loaded.tokenizer(sentences, padding=True, return_tensors="pt")
    encoder = loaded.model.base_model
    with torch.inference_mode():
        last = encoder(**batch, output_hidden_states=True).hidden_states[-1]  # [n, longest, hidden]
    mask = batch["attention_mask"].unsqueeze(-1).bool()  # [n, longest, 1]
    assert not mask.all(), "the batch must contain padding for this test to mean anything"
    mean = (last * mask).sum(dim=1) / mask.sum(dim=1)
    maximum = last.masked_fill(~mask, -torch.inf).max(dim=1).values
    return {"cls": last[:, 0].numpy(), "mean": mean.numpy(), "max": maximum.numpy()}


@pytest.mark.parametrize("which", ["tiny", "minilm"])
def test_each_pooling_equals_a_hand_computation_with_the_mask(tiny_models, which):
    loaded = models.load(tiny_models["masked"] if which == "tiny" else models.MINILM_NAME)
    r = pooling.run(loaded, SHORT)
    expected = hand_pooled(loaded, [s for s, _ in r.sentences])
    for p in pooling.POOLINGS:
        np.testing.assert_allclose(r.vectors[p], expected[p], atol=1e-5, err_msg=p)


def test_the_mean_is_minilms_documented_recipe():
    """The recipe in the package's README ("Usage (HuggingFace Transformers)"): mean_pooling, F.normalize."""
    from transformers import AutoModel, AutoTokenizer

    folder = minilm_folder()
    assert "def mean_pooling(model_output, attention_mask)" in (Path(folder) / "README.md").read_text()
    tokenizer, model = AutoTokenizer.from_pretrained(folder), AutoModel.from_pretrained(folder).eval()
    sentences = [s for s, _ in pooling.parse(pooling.EXAMPLE)]
    encoded_input = tokenizer(sentences, padding=True, truncation=True, return_tensors="pt")
    with torch.no_grad():
        model_output = model(**encoded_input)
    token_embeddings = model_output[0]
    input_mask_expanded = encoded_input["attention_mask"].unsqueeze(-1).expand(token_embeddings.size()).float()
    recipe = torch.sum(token_embeddings * input_mask_expanded, 1) / torch.clamp(input_mask_expanded.sum(1), min=1e-9)
    recipe = torch.nn.functional.normalize(recipe, p=2, dim=1).numpy()
    ours = pooling.run(models.load(models.MINILM_NAME)).vectors["mean"]
    np.testing.assert_allclose(ours / np.linalg.norm(ours, axis=1, keepdims=True), recipe, atol=1e-5)


def test_retrieval_is_counted_by_hand():
    labels = ["a", "a", "b", "b", ""]
    sim = np.array([[1, .2, .9, .1, .0],   # 0's paraphrase (1) ranks 2 behind 2
                    [.2, 1, .1, .3, .4],   # 1: 0 ranks 3 (behind 4 and 3)
                    [.9, .1, 1, .8, .0],   # 2: 3 ranks 2 (behind 0)
                    [.1, .3, .8, 1, .0],   # 3: 2 is nearest
                    [.0, .4, .0, .0, 1]])
    r = pooling.retrieval(sim, labels)
    assert r.queries == [0, 1, 2, 3] and r.nearest == [2, 4, 0, 2] and r.ranks == [2, 3, 2, 1]
    assert r.accuracy == 0.25 and r.mrr == pytest.approx((1 / 2 + 1 / 3 + 1 / 2 + 1) / 4)


def test_minilm_scores_and_the_trained_pooling_from_its_files():
    r = pooling.run(models.load(models.MINILM_NAME))
    config = json.loads((Path(minilm_folder()) / "1_Pooling" / "config.json").read_text())
    assert config["pooling_mode_mean_tokens"] and not config["pooling_mode_cls_token"]
    assert r.trained_pooling == "mean"
    labels = [label for _, label in r.sentences]
    for p in pooling.POOLINGS:  # the scores, counted again from the similarity matrix with a plain loop
        sim, hits = r.similarity(p), []
        for i, label in enumerate(labels):
            if label:
                best = max((j for j in range(len(labels)) if j != i), key=lambda j: sim[i, j])
                hits.append(labels[best] == label)
        assert r.retrieval(p).accuracy == pytest.approx(np.mean(hits)) and len(hits) == 8
    out = r.to_json()
    assert out["poolings"]["mean"]["accuracy"] >= out["poolings"]["cls"]["accuracy"]  # measured: 7/8 vs 6/8
    assert out["dims"] == 384 and out["sentences"][0]["tokens"][0] == "[CLS]"


def test_a_model_without_a_sentence_transformers_config_names_none(tiny_models):
    r = pooling.run(models.load(tiny_models["masked"]))
    assert r.trained_pooling is None
    assert "not written down" in tab_pooling.trained_note(r)


@pytest.mark.parametrize("text, message", [
    ("One. | a\nTwo. | a", "3 to 16 sentences"),
    ("\n".join(f"Sentence {i}. | a" for i in range(17)), "3 to 16 sentences"),
    ("One. | a\nTwo. | b\nThree.", "same label"),
    ("   ", "Type some sentences"),
    ("word " * 300 + "| a\nTwo. | a\nThree.", "tokens long"),
])
def test_bad_input_is_named(text, message):
    with pytest.raises(BadInput, match=message):
        pooling.run(models.load(models.MINILM_NAME), text)


def test_a_causal_lm_is_refused(tiny_models):
    with pytest.raises(BadInput):
        pooling.run(models.load(tiny_models["causal"]), SHORT)


@pytest.mark.skipif(not COURSE.exists(), reason="the course's documents are in ../shared/course")
def test_every_quote_is_the_courses_own_text():
    assert pooling.QUOTE_TEXTBOOK in (COURSE / pooling.TEXTBOOK).read_text()
    assert "20.8.3 The [CLS] Token" in (COURSE / pooling.TEXTBOOK).read_text()
    lecture = (COURSE / pooling.LECTURE).read_text()
    assert pooling.QUOTE_LECTURE in lecture and pooling.LECTURE_SLIDE in lecture


def test_the_handler_draws_three_heatmaps_and_the_nearest_table(tiny_models):
    found, cls, mean, maximum, rows, out = tab_pooling.on_pooling(SHORT, tiny_models["masked"])
    for fig, p in zip((cls, mean, maximum), pooling.POOLINGS):
        np.testing.assert_allclose(fig.data[0].z, out["poolings"][p]["similarity"], atol=6e-4)
    assert len(rows) == 2 and all(cell[0] in "✓✗" for row in rows for cell in row[1:])
    assert found.count("\n|") == 4  # the header's rule and three poolings


def test_pooling_api(client, tiny_models):
    out = client.predict(SHORT, tiny_models["masked"], api_name="/pooling")
    assert set(out["poolings"]) == {"cls", "mean", "max"} and out["poolings"]["mean"]["queries"] == [0, 1]
    out = client.predict(pooling.EXAMPLE, models.MINILM_NAME, api_name="/pooling")
    assert out["trained_pooling"] == "mean"
    with pytest.raises(AppError, match="same label"):
        client.predict("One. | a\nTwo. | b\nThree.", models.MINILM_NAME, api_name="/pooling")


def test_the_panel_draws_three_heatmaps(page):
    open_tab(page, "Embeddings")
    page.get_by_text("Paraphrase is the nearest other sentence").wait_for(timeout=60000)
    page.get_by_text("max of the tokens", exact=True).first.wait_for()
