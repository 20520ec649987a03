"""Every family through the API, as a script sees it: a tiny T5 and a tiny BertForPreTraining given in
LAB_EXTRA_MODELS are listed with their families; the labs that can serve an encoder-decoder do, and
the others refuse it with one sentence that names what it is and what they need."""

from __future__ import annotations

import re

import pytest
from gradio_client.exceptions import AppError

from labs.core.errors import GENERIC_MESSAGE

T5_TEXT = "The cat sat on the mat."
ENTITY = re.compile(r"&(lt|gt|amp|quot|#x27|#39);")


def test_models_lists_every_family(client, tiny_models):
    listed = {m["name"]: m for m in client.predict(api_name="/models")["models"]}
    assert listed[tiny_models["seq2seq"]]["family"] == "seq2seq"
    assert listed[tiny_models["pretraining"]]["family"] == "masked"
    assert listed[tiny_models["seq2seq"]]["task"] is None


def test_tokens_attention_and_embeddings_serve_t5(client, tiny_models):
    t5 = tiny_models["seq2seq"]
    rows = client.predict("The cat <extra_id_0> the mat.", [t5], api_name="/tokenize")["tokenizers"]
    assert rows[0]["model"] == t5 and "<extra_id_0>" in rows[0]["tokens"] and rows[0]["tokens"][-1] == "</s>"
    attention = client.predict(T5_TEXT, t5, "", 0, 0, api_name="/attention")
    n = len(attention["tokens"])
    assert len(attention["weights"]) == n and all(abs(sum(row) - 1) < 1e-4 for row in attention["weights"])
    embeddings = client.predict("The cat sat on the mat.\nA cat ran.", "cat", t5, -1, api_name="/embeddings")
    assert embeddings["model"] == t5 and len(embeddings["static_similarity"]) == 2


@pytest.mark.parametrize("call", [
    lambda c, t5: c.predict("The [MASK] sat.", t5, 5, api_name="/fill_mask"),
    lambda c, t5: c.predict("Once upon a", t5, 1.0, 0, 1.0, api_name="/next_token"),
    lambda c, t5: c.predict(t5, "full", 1e-3, 1, 8, 32, 0, False, api_name="/finetune"),
])
def test_labs_that_cannot_serve_t5_say_so_in_one_sentence(client, tiny_models, call):
    with pytest.raises(AppError) as caught:
        call(client, tiny_models["seq2seq"])
    message = str(caught.value)
    assert "encoder-decoder" in message and GENERIC_MESSAGE not in message
    assert not ENTITY.search(message)


def test_masks_shows_or_refuses_t5_kindly(client, tiny_models):
    try:
        result = client.predict(T5_TEXT, tiny_models["seq2seq"], tiny_models["causal"], api_name="/masks")
    except AppError as exc:
        assert "encoder-decoder" in str(exc) and GENERIC_MESSAGE not in str(exc)
    else:
        assert result["real"]["encoder"]["max_above_diagonal"] > 0  # T5's encoder reads both sides
