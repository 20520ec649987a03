"""Tokens and Embeddings with T5 (the tiny T5 of conftest): its tokenizer against transformers' own and
the `tokenizers` library's Tokenizer read from its tokenizer.json, its sentinels as special tokens, its
encoder's hidden states against `model.get_encoder()`, and each model resolved once per click."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer
from transformers import AutoTokenizer

from labs.core.errors import BadInput
from labs.core.models import gpt2_offline, models, registry
from labs.embeddings import compute as embeddings
from labs.embeddings import tab as embeddings_tab
from labs.tokens import compute as tokens
from labs.tokens import tab as tokens_tab

SENTINELS = "Thank you <extra_id_0> me to your party <extra_id_1> week."
FLOODED = "The bank was flooded.\nThe bank was robbed."


def t5_folder(tiny_models) -> Path:
    return Path(models.get_choice(tiny_models["seq2seq"]).location)


# ---------------------------------------------------------------- Tokens


@pytest.mark.parametrize("text", [SENTINELS, tokens.EXAMPLES[0], "The bank was flooded."])
def test_t5_ids_and_pieces_equal_its_own_tokenizer_and_the_tokenizers_library(text, tiny_models):
    row = tokens.tokenize(text, [tiny_models["seq2seq"]])[0]
    assert row.error is None, row.error
    own = AutoTokenizer.from_pretrained(t5_folder(tiny_models))
    assert row.ids == own(text)["input_ids"] and row.tokens == own.convert_ids_to_tokens(own(text)["input_ids"])
    assert row.vocab_size == len(own)
    library = Tokenizer.from_file(str(t5_folder(tiny_models) / "tokenizer.json"))
    encoding = library.encode(text)
    assert row.ids == encoding.ids and row.tokens == encoding.tokens
    assert type(library.model).__name__ == "Unigram" and "Metaspace" in str(library.pre_tokenizer)
    added = json.loads(library.to_str())["added_tokens"]
    special_ids = {t["id"] for t in added if t["special"]}
    assert row.special == [i in special_ids for i in row.ids]
    assert row.tokens[-1] == "</s>" and row.special[-1]  # T5 ends every input with </s>
    assert row.algorithm == "SentencePiece Unigram" and row.marks == "▁ starts a word"
    assert any(t.startswith("▁") for t in row.tokens)


def test_typed_sentinels_are_one_special_token_each(tiny_models):
    row = tokens.tokenize(SENTINELS, [tiny_models["seq2seq"], models.MINILM_NAME])
    t5, minilm = row
    for n in (0, 1):
        at = t5.tokens.index(f"<extra_id_{n}>")
        assert t5.special[at] and t5.ids[at] == AutoTokenizer.from_pretrained(
            t5_folder(tiny_models)).convert_tokens_to_ids(f"<extra_id_{n}>")
    assert "<extra_id_0>" not in minilm.tokens  # BERT's WordPiece splits it into ordinary pieces
    html = tokens_tab.row_html(t5, SENTINELS)
    assert "typed special tokens kept whole: &lt;extra_id_0&gt;, &lt;extra_id_1&gt;" in html
    assert "SentencePiece Unigram (▁ starts a word)" in html
    assert "typed special" not in tokens_tab.row_html(minilm, SENTINELS)  # [CLS] and [SEP] were not typed
    assert t5.to_json()["marks"] == "▁ starts a word" and SENTINELS in tokens.EXAMPLES


def test_each_tokenizer_is_resolved_once_per_click(monkeypatch, tiny_models):
    calls = []
    real = models.load_tokenizer
    monkeypatch.setattr(models, "load_tokenizer", lambda name: calls.append(name) or real(name))
    html, out = tokens_tab.on_tokenize(SENTINELS)
    offered = list(models.registry())
    assert sorted(calls) == sorted(offered)  # each once
    shown = offered + ([gpt2_offline.NAME] if gpt2_offline.available() else [])  # GPT-2's (not a model's)
    assert [t["model"] for t in out["tokenizers"]] == shown and html.count('class="lab-token-row"') == len(shown)


def test_t5_small_is_compared_when_online_and_never_reached_offline(monkeypatch, tiny_models):
    # Offline (conftest sets HF_HUB_OFFLINE): the registry lists t5-small only when it is cached.
    hub = {c.name: c for c in models.HUB_MODELS}
    assert hub["t5-small"].family == "seq2seq"
    assert not models.hub_online()
    assert ("t5-small" in models.registry()) == models.in_hub_cache("t5-small")
    reached = []
    real = models.load_tokenizer
    monkeypatch.setattr(models, "load_tokenizer", lambda name: reached.append(name) or real(name))
    tokens.tokenize("playing")
    assert ("t5-small" in reached) == models.in_hub_cache("t5-small")
    # Online, every Hub model is offered and compared (a stand-in tokenizer: no network in tests).
    try:
        monkeypatch.setattr(registry, "hub_online", lambda: True)
        models.reset_registry()
        monkeypatch.setattr(models, "load_tokenizer", lambda name: real(tiny_models["seq2seq"]) if
                            models.get_choice(name).source == "hub" else real(name))
        rows = {r.model: r for r in tokens.tokenize(SENTINELS)}
        assert rows["t5-small"].error is None and rows["t5-small"].algorithm == "SentencePiece Unigram"
    finally:
        monkeypatch.undo()
        models.reset_registry()
    assert list(models.registry())[-1] == tiny_models["pretraining"]


def test_tokenize_api_with_tiny_t5(client, tiny_models):
    out = client.predict(SENTINELS, [tiny_models["seq2seq"]], api_name="/tokenize")["tokenizers"]
    own = AutoTokenizer.from_pretrained(t5_folder(tiny_models))
    assert len(out) == 1 and out[0]["ids"] == own(SENTINELS)["input_ids"]
    assert out[0]["tokens"] == own.convert_ids_to_tokens(out[0]["ids"])
    assert out[0]["algorithm"] == "SentencePiece Unigram" and out[0]["marks"] == "▁ starts a word"
    at = out[0]["tokens"].index("<extra_id_0>")
    assert out[0]["special"][at] and out[0]["special"][-1] and not out[0]["special"][0]


# ---------------------------------------------------------------- Embeddings


def encoder_oracle(loaded, sentence: str, positions: list[int]) -> np.ndarray:
    """[layers + 1, hidden]: the pieces' mean, from the model's encoder alone, one sentence at a time."""
    ids = loaded.tokenizer(sentence, return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        states = loaded.model.get_encoder()(input_ids=ids, output_hidden_states=True).hidden_states
    return torch.stack(states)[:, 0, positions].float().mean(dim=1).numpy()


def test_t5_vectors_are_its_encoders_hidden_states(tiny_models):
    loaded = models.load(tiny_models["seq2seq"])
    r = embeddings.run(loaded, embeddings.EXAMPLE, "bank")
    assert r.family == "seq2seq" and r.vectors_from == "encoder" and r.reads == "both sides"
    assert r.num_layers == loaded.model.config.num_layers == 2
    for i, s in enumerate(r.sentences):
        assert "".join(s.tokens[p] for p in s.positions).lstrip("▁") == "bank"
        np.testing.assert_allclose(r.by_layer[:, i], encoder_oracle(loaded, s.text, s.positions), atol=1e-5)
    # T5 adds no position vectors: layer 0 is the word's row of the embedding matrix in every sentence.
    assert r.layer0_is_static
    assert not embeddings.run(models.load(tiny_models["masked"]), embeddings.EXAMPLE, "bank").layer0_is_static


def test_t5s_encoder_reads_both_sides_a_causal_lm_the_left_only(tiny_models):
    t5 = embeddings.run(models.load(tiny_models["seq2seq"]), FLOODED, "bank")
    assert embeddings.cosine_matrix(t5.by_layer)[-1, 0, 1] < 0.9999  # "flooded" / "robbed" reach "bank"
    gpt2 = embeddings.run(models.load(tiny_models["causal"]), FLOODED, "bank")
    assert embeddings.cosine_matrix(gpt2.by_layer)[:, 0, 1].min() >= 0.9999
    fig, note = embeddings_tab.on_compare(FLOODED, "bank", tiny_models["seq2seq"], tiny_models["causal"])
    assert "its encoder's vectors, and the encoder reads both sides" in note and "exactly the same vector" in note
    assert len(fig.data) == 2


def test_the_dropdowns_offer_t5_and_the_notes_say_its_vectors_are_the_encoders(tiny_models):
    assert "seq2seq" in embeddings.FAMILIES and "seq2seq" in embeddings.BOTH_SIDES
    assert tiny_models["seq2seq"] in models.choice_names(*embeddings.FAMILIES)
    assert tiny_models["seq2seq"] in models.choice_names(*embeddings.BOTH_SIDES)
    note = embeddings_tab.pieces_note(embeddings.run(models.load(tiny_models["seq2seq"]), embeddings.EXAMPLE, "bank"))
    assert "2 encoder layers" in note and "its encoder's vectors" in note and "reads both sides" in note


@pytest.mark.parametrize("encoder, causal", [("causal", "causal"), ("masked", "seq2seq"), ("masked", "masked")])
def test_a_model_in_the_wrong_slot_gets_one_friendly_sentence(encoder, causal, tiny_models):
    with pytest.raises(BadInput) as caught:
        embeddings_tab.on_compare(FLOODED, "bank", tiny_models[encoder], tiny_models[causal])
    message = str(caught.value)
    assert message.count(". ") == 0 and message.endswith(".") and "pick one such as" in message


def test_the_model_is_resolved_once_per_click(monkeypatch, tiny_models):
    by_name = []
    real = models.load
    monkeypatch.setattr(models, "load", lambda model, *a, **k: (
        by_name.append(model) if isinstance(model, str) else None) or real(model, *a, **k))
    embeddings_tab.on_show(embeddings.EXAMPLE, "bank", tiny_models["seq2seq"], 1)
    assert by_name == [tiny_models["seq2seq"]]
    by_name.clear()
    embeddings_tab.on_compare(FLOODED, "bank", tiny_models["seq2seq"], tiny_models["causal"])
    assert by_name == [tiny_models["seq2seq"], tiny_models["causal"]]
    by_name.clear()
    embeddings.embeddings_json(embeddings.EXAMPLE, "bank", tiny_models["seq2seq"], -1)
    assert by_name == [tiny_models["seq2seq"]]


def test_embeddings_api_with_tiny_t5(client, tiny_models):
    out = client.predict(embeddings.EXAMPLE, "", tiny_models["seq2seq"], -1, api_name="/embeddings")
    assert out["word"] == "bank" and out["family"] == "seq2seq" and out["vectors_from"] == "encoder"
    assert out["reads"] == "both sides" and out["num_layers"] == 2 and len(out["similarity_by_layer"]) == 3
    loaded = models.load(tiny_models["seq2seq"])
    vectors = np.stack([encoder_oracle(loaded, s["text"], s["positions"]) for s in out["sentences"]], axis=1)
    unit = vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)
    np.testing.assert_allclose(out["similarity_by_layer"], unit @ np.swapaxes(unit, -1, -2), atol=1e-5)
    assert out["sentences"][1]["tokens"][-1] == "</s>"
