"""Embeddings lab: every vector against transformers' own output_hidden_states, cosines and PCA by
hand, the causal LM's left-only vectors, and one padded forward pass for all the sentences."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import open_tab
from gradio_client.exceptions import AppError

from labs.core.errors import BadInput
from labs.core.models import models
from labs.core.work import lm
from labs.embeddings import compute

FLOODED = "The bank was flooded.\nThe bank was robbed."


def oracle_vector(loaded, sentence: str, word: str, layer: int) -> np.ndarray:
    """The word's vector from the model alone: hidden_states[layer][0, pieces], averaged."""
    start = sentence.lower().index(word)
    encoded = loaded.tokenizer(sentence, return_offsets_mapping=True, return_tensors="pt")
    pieces = [i for i, (a, b) in enumerate(encoded.pop("offset_mapping")[0].tolist())
              if b > a and a < start + len(word) and b > start]
    with torch.inference_mode():
        states = loaded.model(**encoded, output_hidden_states=True).hidden_states
    return states[layer][0, pieces].float().mean(dim=0).numpy()


@pytest.mark.parametrize("family", ["masked", "causal"])
def test_every_vector_equals_output_hidden_states(family, tiny_models):
    loaded = models.load(tiny_models[family])
    r = compute.run(loaded, compute.EXAMPLE, "bank")
    for i, s in enumerate(r.sentences):
        for layer in range(r.num_layers + 1):
            np.testing.assert_allclose(r.by_layer[layer, i], oracle_vector(loaded, s.text, "bank", layer),
                                       atol=1e-5)


def test_cosines_by_hand_and_the_static_vector_is_one_vector():
    r = compute.run(models.load(models.MINILM_NAME), compute.EXAMPLE, "bank")
    a, b = r.by_layer[3, 0], r.by_layer[3, 2]
    by_hand = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
    assert compute.cosine_matrix(r.by_layer)[3, 0, 2] == pytest.approx(by_hand, abs=1e-6)
    out = compute.embeddings_json(compute.EXAMPLE, "bank", models.MINILM_NAME, -1)
    assert out["static_similarity"] == [[1.0] * 4] * 4  # word2vec's view: the same vector everywhere
    loaded = models.load(models.MINILM_NAME)
    row = loaded.model.get_input_embeddings().weight[loaded.tokenizer.convert_tokens_to_ids("bank")]
    np.testing.assert_allclose(r.static[0], row.detach().numpy())
    assert len(out["similarity_by_layer"]) == out["num_layers"] + 1 == 7 and out["layer"] == 6


def test_the_projection_is_the_first_principal_components():
    r = compute.run(models.load(models.MINILM_NAME), compute.EXAMPLE, "bank")
    vectors = r.by_layer[-1].astype(np.float64)
    centred = vectors - vectors.mean(axis=0)
    _, _, vt = np.linalg.svd(centred)
    coords = compute.projection(r.by_layer[-1])
    for axis in range(2):
        np.testing.assert_allclose(np.abs(coords[:, axis]), np.abs(centred @ vt[axis]), atol=1e-6)


def test_a_causal_lm_cannot_see_the_words_after_the_word():
    smol = compute.run(models.load(models.SMOLLM2_NAME), FLOODED, "bank")
    assert compute.cosine_matrix(smol.by_layer)[:, 0, 1].min() >= 0.9999
    minilm = compute.run(models.load(models.MINILM_NAME), FLOODED, "bank")
    assert compute.cosine_matrix(minilm.by_layer)[-1, 0, 1] < 0.99


def test_on_minilm_the_river_sentences_are_closer_than_river_and_money():
    sim = compute.cosine_matrix(compute.run(models.load(models.MINILM_NAME), compute.EXAMPLE, "bank").by_layer)[-1]
    assert sim[0, 1] > sim[0, 2] and sim[0, 1] > sim[1, 3]


def test_all_sentences_run_as_one_padded_pass_equal_to_one_at_a_time(tiny_models):
    loaded = models.load(models.MINILM_NAME)
    lm.cache.clear()
    before = lm.forward_passes()
    r = compute.run(loaded, compute.EXAMPLE, "bank")
    assert lm.forward_passes() - before == 1
    for i, s in enumerate(r.sentences):
        ids = loaded.tokenizer(s.text, return_tensors="pt")
        with torch.inference_mode():
            alone = loaded.model(**ids, output_hidden_states=True).hidden_states
        np.testing.assert_allclose(r.by_layer[:, i], torch.stack(alone)[:, 0, s.positions].mean(dim=1).numpy(),
                                   atol=1e-5)


def test_subword_pieces_are_averaged_and_named():
    r = compute.run(models.load(models.MINILM_NAME), "The unbelievable story.\nAn unbelievable day.", "unbelievable")
    assert len(r.sentences[0].positions) >= 1
    r = compute.run(models.load(models.SMOLLM2_NAME), "I saw the Brontosaurus.\nA Brontosaurus ate.", "")
    assert r.word == "brontosaurus" and len(r.word_pieces) > 1


@pytest.mark.parametrize("sentences, word, message", [
    ("Only one sentence with bank.", "bank", "2 to 10 sentences"),
    ("\n".join(["a bank"] * 11), "bank", "2 to 10 sentences"),
    ("The river bank.\nThe money shop.", "bank", "Sentence 2"),
    ("A cat sat.\nThe dog ran.", "", "No word is shared"),
    ("bank " * 300 + "\nThe bank.", "bank", "tokens long"),
])
def test_bad_input_is_named(sentences, word, message):
    with pytest.raises(BadInput, match=message):
        compute.run(models.load(models.MINILM_NAME), sentences, word)


def test_embeddings_api(client, tiny_models):
    out = client.predict(compute.EXAMPLE, "", tiny_models["masked"], 1, api_name="/embeddings")
    assert out["word"] == "bank" and out["layer"] == 1 and len(out["projection"]) == 4
    assert [s["label"] for s in out["sentences"]] == ["river", "river", "money", "money"]
    assert out["sentences"][0]["tokens"][out["sentences"][0]["positions"][0]] == "bank"
    with pytest.raises(AppError, match="layer"):
        client.predict(compute.EXAMPLE, "bank", tiny_models["masked"], 7, api_name="/embeddings")
    with pytest.raises(AppError, match="no model called"):
        client.predict(compute.EXAMPLE, "bank", "<b>nope</b>", 0, api_name="/embeddings")


def test_embeddings_tab_draws_the_heatmap_the_line_chart_and_the_map(page):
    open_tab(page, "Embeddings")
    page.get_by_text("Cosine similarity of \"bank\"").filter(visible=True).first.wait_for(timeout=60000)  # the title; its text alternative repeats it
    page.get_by_text("Where the senses of \"bank\" separate").filter(visible=True).first.wait_for()
    page.get_by_text("The vectors on a map (PCA)").filter(visible=True).first.wait_for()
    page.get_by_role("button", name="Left only vs both sides").click()
    page.get_by_role("button", name="Load \"The bank was flooded / robbed\"").click()
    page.get_by_text("exactly the same vector").filter(visible=True).first.wait_for(timeout=60000)
