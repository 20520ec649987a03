"""Every family and every head: the registry reads a checkpoint's family from its config, loading is
keyed by (model, head), a head the checkpoint lacks is known to be random, the shared passes serve
an encoder-decoder, and one padding helper serves every batch. Oracles: the models' own forward
passes, called directly on the saved folders."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from labs.core.errors import BadInput
from labs.core.models import models, registry
from labs.core.models.registry import ModelUnavailable
from labs.core.work import lm
from labs.core.work.padding import pad_rows

TEXT = "The cat sat on the mat."


@pytest.mark.parametrize("config, family", [
    ({"architectures": ["T5ForConditionalGeneration"], "model_type": "t5", "is_encoder_decoder": True}, "seq2seq"),
    ({"architectures": ["BartForConditionalGeneration"], "model_type": "bart", "is_encoder_decoder": True}, "seq2seq"),
    ({"architectures": ["BertForPreTraining"], "model_type": "bert"}, "masked"),
    ({"architectures": ["BertForMaskedLM"], "model_type": "bert"}, "masked"),
    ({"architectures": ["ElectraForPreTraining"], "model_type": "electra"}, "encoder"),  # a discriminator, no MLM
    ({"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2"}, "causal"),
    ({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}, "causal"),
    ({"architectures": ["BertForTokenClassification"], "model_type": "bert"}, "encoder"),
    ({"architectures": ["BertModel"], "model_type": "bert"}, "encoder"),
])
def test_family_is_read_from_the_config(config, family):
    assert registry.family_from_config(config) == family


def test_task_models_are_offered_for_their_task_only():
    assert registry.task_from_config({"architectures": ["DistilBertForQuestionAnswering"]}) == "question_answering"
    assert registry.task_from_config({"architectures": ["BertForTokenClassification"]}) == "token_classification"
    assert registry.task_from_config({"architectures": ["BertForMaskedLM"]}) is None
    hub = {c.name: c for c in registry.HUB_MODELS}
    assert hub["t5-small"].family == "seq2seq"
    assert hub["dslim/bert-base-NER"].task == "token_classification"
    assert hub["distilbert-base-cased-distilled-squad"].task == "question_answering"


def test_registry_lists_the_tiny_t5_and_bert_pretraining(tiny_models):
    reg = models.registry()
    assert reg[tiny_models["seq2seq"]].family == "seq2seq"
    assert reg[tiny_models["pretraining"]].family == "masked"
    assert tiny_models["seq2seq"] in models.choice_names("seq2seq")
    assert tiny_models["seq2seq"] not in models.choice_names("masked", "causal", "encoder")


def test_one_checkpoint_serves_several_heads_each_loaded_once(tiny_models):
    name = tiny_models["pretraining"]
    mlm, nsp = models.load(name, "masked"), models.load(name, "masked", head="pretraining")
    assert (mlm.head, nsp.head) == ("mlm", "pretraining")
    assert type(mlm.model).__name__ == "BertForMaskedLM" and type(nsp.model).__name__ == "BertForPreTraining"
    assert models.load(name) is mlm and models.load(name, head="pretraining") is nsp
    assert models.load(mlm, head="pretraining") is nsp  # a loaded model gives its checkpoint with another head
    assert mlm.head_trained and nsp.head_trained


def test_nsp_head_equals_bert_for_pretraining_called_directly(tiny_models):
    from transformers import BertForPreTraining

    loaded = models.require_trained_head(models.load(tiny_models["pretraining"], head="pretraining"))
    oracle = BertForPreTraining.from_pretrained(loaded.choice.location).eval()
    enc = loaded.tokenizer("The cat sat on the mat.", "It was tired.", return_tensors="pt")
    with torch.no_grad():
        ours = loaded.model(**enc).seq_relationship_logits
        theirs = oracle(**enc).seq_relationship_logits
    assert ours.shape == (1, 2)
    assert torch.allclose(ours, theirs, atol=1e-5)


def test_a_head_the_checkpoint_lacks_is_known_to_be_random(tiny_models):
    plain = models.load(tiny_models["masked"], head="pretraining")  # a BertForMaskedLM checkpoint: no NSP weights
    assert not plain.head_trained
    assert any("seq_relationship" in key for key in plain.untrained)
    with pytest.raises(ModelUnavailable, match="no trained next-sentence prediction head"):
        models.require_trained_head(plain)


def test_a_family_cannot_have_a_head_it_has_no_place_for(tiny_models):
    with pytest.raises(BadInput, match="cannot have a masked-LM head"):
        models.load(tiny_models["causal"], head="mlm")
    with pytest.raises(BadInput, match="no head called"):
        models.load(tiny_models["masked"], head="<b>x</b>")
    with pytest.raises(BadInput, match="is not a masked language model"):
        models.load(tiny_models["seq2seq"], "masked")


@pytest.mark.parametrize("head, labels", [("sequence_classification", ["neg", "pos"]),
                                          ("token_classification", ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]),
                                          ("question_answering", None)])
def test_task_heads_are_fresh_and_named(head, labels):
    model, tokenizer = models.load_for_task(models.MINILM_NAME, head, labels=labels, seed=1)
    again, _ = models.load_for_task(models.MINILM_NAME, head, labels=labels, seed=1)
    assert model is not again  # a run never shares weights with another
    assert type(model).__name__ == {"sequence_classification": "BertForSequenceClassification",
                                    "token_classification": "BertForTokenClassification",
                                    "question_answering": "BertForQuestionAnswering"}[head]
    if labels:
        assert model.config.id2label == dict(enumerate(labels))
    enc = tokenizer(TEXT, return_tensors="pt")
    with torch.no_grad():
        out = model(**enc)
    first = out.logits if labels else out.start_logits
    assert torch.isfinite(first).all()


def test_task_heads_refuse_a_causal_or_seq2seq_model(tiny_models):
    for name in (tiny_models["causal"], tiny_models["seq2seq"]):
        with pytest.raises(ModelUnavailable, match="not an encoder"):
            models.load_for_task(name, "token_classification", num_labels=3)


# ------------------------------------------------------------ the encoder-decoder pass


def t5(tiny_models):
    return models.load(tiny_models["seq2seq"])


def test_seq2seq_logits_equal_the_models_own_forward(tiny_models):
    loaded = t5(tiny_models)
    ids = loaded.tokenizer(TEXT)["input_ids"]
    target = loaded.tokenizer("<extra_id_0> cat <extra_id_1>")["input_ids"]
    dec = lm.decoder_input(loaded, target)
    assert dec[0] == loaded.model.config.decoder_start_token_id and dec[1:] == target[:-1]
    ours = lm.seq2seq_logits(loaded, ids, dec)
    with torch.no_grad():
        theirs = loaded.model(input_ids=torch.tensor([ids]), labels=torch.tensor([target])).logits[0].numpy()
    assert ours.shape == theirs.shape == (len(target), len(loaded.tokenizer))
    np.testing.assert_allclose(ours, theirs, atol=1e-5)


def test_seq2seq_attention_kinds_and_batching(tiny_models):
    loaded = t5(tiny_models)
    rows = [loaded.tokenizer(t)["input_ids"] for t in (TEXT, "A dog ran in the park today.", "Once")]
    lm.cache.clear()
    alone = [lm._run_seq2seq_attn(loaded, [(tuple(r), tuple(lm.decoder_input(loaded, r)))])[0] for r in rows]
    together = lm._run_seq2seq_attn(loaded, [(tuple(r), tuple(lm.decoder_input(loaded, r))) for r in rows])
    for (enc, dec, cross), (enc2, dec2, cross2), r in zip(alone, together, rows):
        n = len(r)
        assert enc.shape[2:] == (n, n) and dec.shape[2:] == (n, n) and cross.shape[2:] == (n, n)
        np.testing.assert_allclose(enc, enc2, atol=1e-5)
        np.testing.assert_allclose(cross, cross2, atol=1e-5)
        assert np.all(np.triu(dec, k=1) == 0)  # the decoder never looks ahead
        np.testing.assert_allclose(cross.sum(-1), 1, atol=1e-5)
    with torch.no_grad():
        oracle = loaded.model(input_ids=torch.tensor([rows[0]]),
                              decoder_input_ids=torch.tensor([lm.decoder_input(loaded, rows[0])]),
                              output_attentions=True)
    np.testing.assert_allclose(alone[0][2][1], oracle.cross_attentions[1][0].numpy(), atol=1e-5)
    np.testing.assert_allclose(lm.seq2seq_attentions(loaded, rows[0], lm.decoder_input(loaded, rows[0]))[0],
                               alone[0][0], atol=1e-6)


def test_encoder_passes_use_the_encoder_of_an_encoder_decoder(tiny_models):
    loaded = t5(tiny_models)
    ids = loaded.tokenizer(TEXT)["input_ids"]
    with torch.no_grad():
        oracle = loaded.model.get_encoder()(input_ids=torch.tensor([ids]), output_hidden_states=True,
                                            output_attentions=True)
    states = lm.hidden_states(loaded, [ids])[0]
    np.testing.assert_allclose(states, torch.stack(oracle.hidden_states, dim=1)[0].numpy(), atol=1e-5)
    np.testing.assert_allclose(lm.attentions(loaded, ids), torch.stack(oracle.attentions, dim=1)[0].numpy(), atol=1e-5)


# ------------------------------------------------------------ padding and registered passes


def test_one_padding_helper_for_right_left_and_segments():
    right = pad_rows([[5, 6, 7], [8]], 0, segments=[[0, 0, 1], None])
    assert right["input_ids"].tolist() == [[5, 6, 7], [8, 0, 0]]
    assert right["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    assert right["token_type_ids"].tolist() == [[0, 0, 1], [0, 0, 0]]
    left = pad_rows([[5, 6, 7], [8]], 9, side="left")
    assert left["input_ids"].tolist() == [[5, 6, 7], [9, 9, 8]] and "token_type_ids" not in left
    assert left["attention_mask"].tolist() == [[1, 1, 1], [0, 0, 1]]


def test_segment_ids_reach_the_model_and_equal_the_tokenizers_own(tiny_models):
    loaded = models.load(tiny_models["pretraining"], head="pretraining")
    enc = loaded.tokenizer("The cat sat.", "It slept.")
    batch = lm.padded(loaded, [enc["input_ids"], [101, 102]], [enc["token_type_ids"], None])
    assert batch["token_type_ids"][0].tolist() == enc["token_type_ids"]
    assert batch["token_type_ids"][1].tolist() == [0] * len(enc["input_ids"])


def test_a_lab_registers_its_own_pass_and_it_batches_and_caches(tiny_models, monkeypatch):
    from labs.core.work import passes

    for name in ("RUNNERS", "LIMITS"):  # the registry (passes) and the batcher (lm) share one copy
        copy = dict(getattr(passes, name))
        monkeypatch.setattr(passes, name, copy)
        monkeypatch.setattr(lm, name, copy)
    calls = []

    @lm.register_pass("test_lengths", max_batch=8, max_cost=100)
    def run(loaded, items):
        calls.append(len(items))
        return [np.array([len(i)]) for i in items]

    loaded = models.load(tiny_models["masked"])
    assert lm.submit_many(loaded, "test_lengths", [(1, 2), (3,)], [2, 1])[0][0] == 2
    assert lm.submit(loaded, "test_lengths", (3,), 1)[0] == 1  # from the cache
    assert calls == [2]
    with pytest.raises(ValueError, match="registered already"):
        lm.register_pass("test_lengths", max_batch=1, max_cost=1)(lambda loaded, items: items)
