"""Embeddings, static vectors: king − man + woman on the model's own input embedding rows against a hand
computation (torch: normalise, matmul, topk; numpy in float64 for the ranks), the same code path on tiny
random models, words that split refused with their pieces, "bank": one row and two contextual vectors
against the model's own hidden states, and the textbook's quotes found in the textbook."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import open_tab
from gradio_client.exceptions import AppError

from labs.core.errors import BadInput
from labs.core.models import models
from labs.embeddings import static, tab_static

COURSE = Path(__file__).resolve().parents[2] / "shared" / "course"  # beside the clone, as in CI


def hand_neighbours(loaded, words: list[str], k: int) -> tuple[list[int], list[float], torch.Tensor]:
    """word2vec's analogy by hand on the model's own weight: normalise, matmul, topk (inputs left out)."""
    tok = loaded.tokenizer
    spaced = [(" " + w if "Ġ" in "".join(tok.tokenize(" a")) else w) for w in words]
    ids = [tok.convert_tokens_to_ids(tok.tokenize(w)[0]) for w in spaced]
    weight = loaded.model.get_input_embeddings().weight.detach().float()[:len(tok)]
    query = weight[ids[0]] - weight[ids[1]] + weight[ids[2]]
    cosines = torch.nn.functional.normalize(weight, dim=1) @ (query / query.norm())
    cosines[ids] = -2.0
    top = torch.topk(cosines, k)
    return top.indices.tolist(), top.values.tolist(), cosines


def hand_rank(loaded, words: list[str], answer: str) -> int:
    """1 + the rows (the three inputs left out) whose float64 cosine with a − b + c beats the answer's."""
    tok = loaded.tokenizer
    ids = [tok.convert_tokens_to_ids(w) for w in words]
    weight = loaded.model.get_input_embeddings().weight.detach().double().numpy()
    query = weight[ids[0]] - weight[ids[1]] + weight[ids[2]]
    cosines = weight @ query / (np.linalg.norm(weight, axis=1) * np.linalg.norm(query))
    cosines[ids] = -np.inf
    return int((cosines > cosines[tok.convert_tokens_to_ids(answer)]).sum()) + 1


def test_minilm_neighbours_equal_a_hand_computation_and_queen_is_first():
    loaded = models.load(models.MINILM_NAME)
    r = static.analogy(loaded, "king", "man", "woman", "queen", 10)
    ids, values, _ = hand_neighbours(loaded, ["king", "man", "woman"], 10)
    assert [n.token_id for n in r.neighbours] == ids
    np.testing.assert_allclose([n.cosine for n in r.neighbours], values, atol=1e-5)
    assert [n.token for n in r.neighbours] == loaded.tokenizer.convert_ids_to_tokens(ids)
    assert (r.rows, r.dims, r.candidates) == (30522, 384, 30519)
    assert r.neighbours[0].token == "queen" and r.expected_rank == 1 == hand_rank(loaded, ["king", "man", "woman"],
                                                                                     "queen")
    assert r.expected_cosine == pytest.approx(values[0], abs=1e-5)


@pytest.mark.parametrize("words, answer", [(("paris", "france", "italy"), "rome"),
                                           (("walking", "walk", "swim"), "swimming"),
                                           (("king", "man", "woman"), "throne")])
def test_the_rank_agrees_with_the_list_and_a_float64_count(words, answer):
    loaded = models.load(models.MINILM_NAME)
    r = static.analogy(loaded, *words, answer, 20)
    assert r.expected_rank == hand_rank(loaded, list(words), answer)
    listed = [n.token for n in r.neighbours]
    if r.expected_rank <= 20:
        assert listed[r.expected_rank - 1] == answer and answer not in listed[:r.expected_rank - 1]
    else:
        assert answer not in listed and len(listed) == 20
    assert not {*words} & {*listed}  # the three inputs are never their own answer


def test_the_rank_without_arithmetic_is_a_alone():
    loaded = models.load(models.MINILM_NAME)
    r = static.analogy(loaded, "king", "man", "woman", "queen")
    weight = loaded.model.get_input_embeddings().weight.detach().double().numpy()
    ids = [loaded.tokenizer.convert_tokens_to_ids(w) for w in ("king", "man", "woman", "queen")]
    unit = weight / np.linalg.norm(weight, axis=1, keepdims=True)
    alone = unit @ unit[ids[0]]
    alone[ids[:3]] = -np.inf
    assert r.rank_without_arithmetic == int((alone > alone[ids[3]]).sum()) + 1


@pytest.mark.parametrize("family, words", [("masked", ("king", "man", "woman")), ("causal", ("cat", "dog", "park"))])
def test_tiny_random_models_take_the_same_path(tiny_models, family, words):
    """A tiny random BERT (WordPiece) and a tiny GPT-2 (byte-level BPE: " cat" is the mid-sentence token)."""
    loaded = models.load(tiny_models[family])
    r = static.analogy(loaded, *words, "", 5)
    ids, values, _ = hand_neighbours(loaded, list(words), 5)
    assert [n.token_id for n in r.neighbours] == ids
    np.testing.assert_allclose([n.cosine for n in r.neighbours], values, atol=1e-5)
    assert r.expected_rank is None and r.to_json()["expected_rank"] is None


def test_a_word_that_splits_is_refused_with_its_pieces():
    loaded = models.load(models.MINILM_NAME)
    pieces = loaded.tokenizer.tokenize("photosynthesis")
    assert len(pieces) > 1
    with pytest.raises(BadInput, match="splits into") as caught:
        static.analogy(loaded, "photosynthesis", "man", "woman")
    assert ", ".join(pieces) in str(caught.value)


@pytest.mark.parametrize("args, message", [
    (("", "man", "woman"), "Type word A"),
    (("king", "man", "old woman"), "one word for word C"),
    (("king", "man", "woman", "king"), "left out"),
    (("king", "man", "woman", "☃"), r"\[UNK\]"),
    (("king", "man", "woman", "queen", 0), "from 1 to 50"),
    ((["king"], "man", "woman"), "must be text"),
])
def test_bad_input_is_named(args, message):
    with pytest.raises(BadInput, match=message):
        static.analogy(models.load(models.MINILM_NAME), *args)


def test_one_row_two_vectors_against_the_models_own_hidden_states():
    loaded = models.load(models.MINILM_NAME)
    o = static.one_row_two_vectors(loaded)
    assert o.token_ids == [loaded.tokenizer.convert_tokens_to_ids("bank")] and o.static_cosine == pytest.approx(1.0)
    vectors = []
    for sentence in static.BANK_SENTENCES:
        encoded = loaded.tokenizer(sentence, return_tensors="pt")
        where = encoded["input_ids"][0].tolist().index(o.token_ids[0])
        with torch.inference_mode():
            vectors.append(loaded.model(**encoded, output_hidden_states=True).hidden_states[-1][0, where])
    by_hand = torch.nn.functional.cosine_similarity(*vectors, dim=0).item()
    assert o.contextual_cosine == pytest.approx(by_hand, abs=1e-5) and o.contextual_cosine < 0.95


@pytest.mark.skipif(not COURSE.exists(), reason="the course's documents are in ../shared/course")
def test_every_quote_is_the_textbooks_own_text():
    text = (COURSE / static.TEXTBOOK).read_text()
    for quote in static.QUOTES:
        assert quote in text, quote
    assert "20.1.1 Word2Vec and GloVe" in text and "20.1.2 The Polysemy Problem" in text


def test_the_handler_shows_the_summary_the_chart_and_the_bank_line(tiny_models):
    summary, fig, bank, out = tab_static.on_analogy("king", "man", "woman", "", models.MINILM_NAME, 5)
    assert "all\\-MiniLM\\-L6\\-v2 \\(offline\\)" in summary and "ranks" not in summary  # no expected word: no rank
    assert fig.data[0].y[0] == plots_label(out["neighbours"][0]["token"]) and len(fig.data[0].y) == 5
    summary, fig, bank, out = tab_static.on_analogy("king", "man", "woman", "queen", models.MINILM_NAME, 10)
    assert "ranks **1**" in summary and "row 2924" in bank and out["expected_rank"] == 1


def plots_label(token: str) -> str:
    from labs.core.ui import plots

    return plots.unique_labels([token])[0]


def test_analogy_api(client, tiny_models):
    out = client.predict("king", "man", "woman", "queen", models.MINILM_NAME, 3, api_name="/analogy")
    assert out["neighbours"][0]["token"] == "queen" and out["expected_rank"] == 1 and len(out["neighbours"]) == 3
    out = client.predict("cat", "dog", "park", "", tiny_models["causal"], 2, api_name="/analogy")
    assert out["expected_rank"] is None and out["tokens"] == ["␣cat", "␣dog", "␣park"]
    with pytest.raises(AppError, match="splits into"):
        client.predict("photosynthesis", "man", "woman", "", models.MINILM_NAME, 3, api_name="/analogy")
    with pytest.raises(AppError, match="no model called"):
        client.predict("king", "man", "woman", "", "<b>nope</b>", 3, api_name="/analogy")


def test_the_panel_draws_the_neighbours_and_a_link_opens_an_analogy(page, app_server):
    open_tab(page, "Embeddings")
    page.get_by_text("Rows nearest to king − man + woman").filter(visible=True).first.wait_for(timeout=60000)
    page.get_by_text("One row, two vectors.").wait_for()
    page.goto(app_server["url"] + "?tab=embeddings&a=paris&b=france&c=italy&expected=rome", wait_until="load")
    page.get_by_text("Rows nearest to paris − france + italy").filter(visible=True).first.wait_for(timeout=60000)
    page.get_by_text("“rome” ranks").wait_for()
