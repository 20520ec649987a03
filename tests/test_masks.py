"""Lab 3, Masks: the matrices, the counts, the masked softmax, and the proof on real models."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import open_tab, screenshot
from gradio_client.exceptions import AppError
from walks import settle

from labs.core.errors import BadInput
from labs.core.models import models
from labs.masks import compute as masks


@pytest.mark.parametrize("n", [1, 2, 6, 17])
def test_masks_equal_torch_ones_and_tril(n):
    assert torch.equal(torch.from_numpy(masks.bidirectional_mask(n)), torch.ones(n, n, dtype=torch.int64))
    assert torch.equal(torch.from_numpy(masks.causal_mask(n)), torch.tril(torch.ones(n, n, dtype=torch.int64)))
    assert masks.connections(n) == {"bidirectional": n * n, "causal": n * (n + 1) // 2}
    assert masks.connections(n)["causal"] == int(masks.causal_mask(n).sum())


def test_word_tokens_keep_mask_and_punctuation():
    assert masks.word_tokens("The [MASK] sat on the mat.") == ["The", "[MASK]", "sat", "on", "the", "mat", "."]


def test_can_attend_table_matches_the_exercise():
    table = masks.can_attend_table(["The", "[MASK]", "sat", "on", "the", "mat"], 1)
    assert [row[2] for row in table] == ["Yes", "Yes", "No", "No", "No", "No"]
    assert all(row[1] == "Yes" for row in table)


def test_masked_softmax_zeros_the_future_and_rows_sum_to_one():
    ex = masks.masked_softmax_example(masks.word_tokens("The cat sat on the mat"))
    above = np.triu(np.ones_like(ex.weights, dtype=bool), k=1)
    assert np.all(ex.weights[above] == 0.0)  # exactly zero, not merely small
    assert np.all(np.isneginf(ex.masked_scores[above]))
    np.testing.assert_allclose(ex.weights.sum(axis=1), 1.0, atol=1e-12)
    # Independent oracle: torch's softmax on the masked scores.
    expected = torch.softmax(torch.from_numpy(ex.masked_scores), dim=-1).numpy()
    np.testing.assert_allclose(ex.weights, expected, atol=1e-12)


def test_the_slides_formula_as_written_is_nan_and_the_heatmap_says_what_it_computes():
    """ERRATA 15: scores + (1 − M)·(−∞) is NaN wherever M = 1 (torch gives the same); the heatmap is titled
    masked_fill, which is what it shows, and the text counts the slide's NaNs."""
    from labs.masks import tab

    ex = masks.masked_softmax_example(masks.word_tokens("The cat sat on the mat"))
    mask = torch.tril(torch.ones(len(ex.tokens), len(ex.tokens), dtype=torch.float64))
    oracle = torch.from_numpy(ex.scores) + (1 - mask) * float("-inf")
    np.testing.assert_array_equal(np.isnan(ex.slide_way), oracle.isnan().numpy())
    assert np.isnan(ex.slide_way).sum() == mask.sum() and np.isnan(ex.masked_scores).sum() == 0
    text, scores_plot, _ = tab.arithmetic(masks.word_tokens("The cat sat on the mat"))
    assert f"{int(mask.sum())} of the {mask.numel()} scores are NaN" in text
    assert scores_plot.layout.title.text.startswith("masked_fill")


def test_padding_makes_pad_invisible_and_combines_with_causal():
    p = masks.padding_masks("The cat sat on the mat", "Dogs bark")
    assert p["tokens"][1] == ["Dogs", "bark", "[PAD]", "[PAD]", "[PAD]", "[PAD]"]
    combined = p["combined"][1]
    assert combined[:, 2:].sum() == 0  # nobody attends to padding
    assert np.array_equal(p["combined"][0], masks.causal_mask(6))


def test_encoder_decoder_shapes():
    m = masks.encoder_decoder_masks("a b c", "x y")
    assert m["encoder"].shape == (3, 3) and m["encoder"].all()
    assert np.array_equal(m["decoder"], masks.causal_mask(2))
    assert m["cross"].shape == (2, 3) and m["cross"].all()


def test_bad_text_and_long_text():
    with pytest.raises(BadInput):
        masks.word_tokens(masks.check_sentence("   "))
    tokens, note = masks.limit(masks.word_tokens(" ".join(["word"] * 70)))
    assert len(tokens) == 64 and "70" in note


def test_tiny_model_attention_equals_its_own_output_attentions(tiny_models):
    loaded = models.load(tiny_models["masked"])
    r = masks.real_attention(models.load(tiny_models["masked"]), "The cat sat on the mat", layer=1, head=2)
    enc = loaded.tokenizer("The cat sat on the mat", return_tensors="pt")
    with torch.no_grad():
        expected = loaded.model(**enc, output_attentions=True).attentions[1][0, 2].numpy()
    np.testing.assert_allclose(r.weights, expected, atol=1e-6)
    with pytest.raises(BadInput, match="layers 0–1"):
        masks.real_attention(models.load(tiny_models["masked"]), "The cat", layer=5)


# ------------------------------------------------------------ real models


def test_smollm2_attention_above_the_diagonal_is_exactly_zero_everywhere():
    loaded = models.load(models.SMOLLM2_NAME)
    tokens, weights = masks.model_attentions(loaded, "The cat sat on the mat because it was tired")
    above = np.triu(np.ones(weights.shape[-2:], dtype=bool), k=1)
    assert weights.shape[0] == 30 and weights.shape[1] == 9  # every layer and head
    assert np.all(weights[..., above] == 0.0)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-4)


def test_minilm_attention_above_the_diagonal_is_not_zero():
    result = masks.masks_result("The cat sat on the mat", models.MINILM_NAME, models.SMOLLM2_NAME)
    assert result["real"]["encoder"]["max_above_diagonal"] > 0.05
    assert result["real"]["causal"]["max_above_diagonal"] == 0.0


# ------------------------------------------------------------ API and browser


def test_masks_api(client):
    result = client.predict("The cat sat on the mat", models.MINILM_NAME, models.SMOLLM2_NAME, api_name="/masks")
    assert result["tokens"] == ["The", "cat", "sat", "on", "the", "mat"]
    assert result["causal"] == np.tril(np.ones((6, 6), dtype=int)).tolist()
    assert result["connections"] == {"bidirectional": 36, "causal": 21}
    assert result["real"]["causal"]["max_above_diagonal"] == 0.0
    assert result["real"]["encoder"]["max_above_diagonal"] > 0


def test_masks_api_bad_input(client):
    with pytest.raises(AppError, match="Type a sentence"):
        client.predict("   ", models.MINILM_NAME, models.SMOLLM2_NAME, api_name="/masks")
    # An unloadable model: the masks still come back, the real part says why.
    out = client.predict("<b>hi</b> there", models.MINILM_NAME, "no-such-model", api_name="/masks")
    assert out["tokens"][:3] == ["<", "b", ">"]
    assert "no model called" in out["real"]["causal"]["error"]


def test_masks_tab_in_the_browser(page):
    open_tab(page, "Masks")
    page.locator(".js-plotly-plot:visible").first.wait_for(timeout=60000)
    page.get_by_text("largest weight above the diagonal").first.wait_for(timeout=90000)
    plots = page.locator(".js-plotly-plot:visible")
    plots.nth(3).wait_for(timeout=60000)
    assert plots.count() >= 4  # both masks and both real-model heatmaps
    page.get_by_label("Your sentence", exact=True).fill("<script>alert(1)</script> The [MASK] sat")
    page.get_by_role("button", name="Show the masks").click()
    page.get_by_text("connections").first.wait_for()
    settle(page)  # the last outputs drawn before the picture
    screenshot(page, "masks")
    assert page.outside_requests == []
