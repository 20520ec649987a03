"""Pre-training, ELECTRA's replaced-token detection on tiny random ElectraForMaskedLM / ElectraForPreTraining
(the real uncased vocabulary): the discriminator's P(replaced) is the sigmoid of the model's own logits, the
generator's samples come from its own softmax at DataCollatorForLanguageModeling's chosen positions, the
labels are (sampled != original), and offline the panel says what it needs."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import minilm_folder

from labs.core.errors import BadInput, LabError
from labs.core.models import models
from labs.pretraining import electra, masking, objectives, tab_examples

COURSE = Path(__file__).resolve().parents[2] / "shared" / "course"
TEXT = electra.EXAMPLE


def build_tiny_electra(folder: Path, head: str) -> None:
    import transformers
    from transformers import AutoTokenizer, ElectraConfig

    tokenizer = AutoTokenizer.from_pretrained(minilm_folder())
    torch.manual_seed(1)
    config = ElectraConfig(vocab_size=tokenizer.vocab_size, embedding_size=32, hidden_size=64, num_hidden_layers=2,
                           num_attention_heads=4, intermediate_size=128, max_position_embeddings=128)
    getattr(transformers, head)(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)


@pytest.fixture(scope="module")
def tiny_electra(tiny_models, tmp_path_factory):
    """A tiny generator and discriminator offered (through LAB_EXTRA_MODELS) for this module only."""
    folder = tmp_path_factory.mktemp("electra")
    generator, discriminator = folder / "tiny-electra-generator", folder / "tiny-electra-discriminator"
    build_tiny_electra(generator, "ElectraForMaskedLM")
    build_tiny_electra(discriminator, "ElectraForPreTraining")
    before = os.environ["LAB_EXTRA_MODELS"]
    os.environ["LAB_EXTRA_MODELS"] = f"{before},{generator},{discriminator}"
    models.reset_registry()
    yield {"generator": electra.load_generator(generator.name), "discriminator": electra.load_discriminator(
        discriminator.name)}
    os.environ["LAB_EXTRA_MODELS"] = before
    models.reset_registry()


# The server and the bad-input checks come before the tiny ELECTRA models are offered (tiny_electra).


def test_api(client, tiny_models):
    out = client.predict(TEXT, tiny_models["masked"], "", 0, api_name="/replaced_token_detection")
    assert out["generator"] == tiny_models["masked"] and out["labels"] is not None
    assert out["signal"]["fraction"] == 1.0 and len(out["labels"]) == len(out["ids"])
    ex = client.predict(TEXT, "", tiny_models["pretraining"], tiny_models["causal"], tiny_models["seq2seq"], 0,
                        api_name="/pretraining_examples")
    assert "electra" in ex and ex["electra"]["positions"] == ex["mlm"]["positions"]
    with pytest.raises(Exception, match="not an ELECTRA"):
        client.predict(TEXT, "", models.MINILM_NAME, 0, api_name="/replaced_token_detection")


@pytest.mark.parametrize("call, match", [
    (lambda m: electra.replaced_token_detection_json(TEXT, m["masked"], models.MINILM_NAME, 0), "not an ELECTRA"),
    (lambda m: electra.replaced_token_detection_json(TEXT, m["causal"], "", 0), "is not a masked language model"),
    (lambda m: electra.replaced_token_detection_json("", m["masked"], "", 0), "Type"),
    (lambda m: electra.replaced_token_detection_json(TEXT, m["masked"], "", -3), "seed"),
    (lambda m: electra.replaced_token_detection_json("word " * 300, m["masked"], "", 0), "tokens long"),
])
def test_bad_input_gets_a_sentence(tiny_models, call, match):
    with pytest.raises(LabError, match=match):
        call(tiny_models)


def test_probabilities_are_the_sigmoid_of_the_discriminators_own_logits(tiny_electra):
    gen, disc = tiny_electra["generator"], tiny_electra["discriminator"]
    for seed in range(5):
        found = electra.detect(TEXT, gen, disc, seed)
        with torch.no_grad():
            logits = disc.model(input_ids=torch.tensor([found.sampled_ids])).logits[0]
        np.testing.assert_allclose(found.p_replaced, torch.sigmoid(logits).numpy(), atol=1e-5)
        assert found.labels == [int(s != o) for s, o in zip(found.sampled_ids, found.ids)]
        said = [p > 0.5 for p in found.p_replaced]
        acc = found.accuracy()
        assert acc["accuracy"] == pytest.approx(np.mean([s == bool(y) for s, y in zip(said, found.labels)]))
        assert acc["replaced"] == sum(found.labels)
        assert acc["replaced_caught"] == sum(s for s, y in zip(said, found.labels) if y)


def test_generator_samples_from_its_own_softmax_at_the_collators_positions(tiny_electra):
    from transformers import DataCollatorForLanguageModeling

    gen = tiny_electra["generator"]
    for seed in range(5):
        found = electra.detect(TEXT, gen, None, seed)
        labels = DataCollatorForLanguageModeling(gen.tokenizer, mlm_probability=0.15, seed=seed)([found.ids])["labels"]
        assert found.positions == [i for i, y in enumerate(labels[0].tolist()) if y != -100]
        masked = [gen.tokenizer.mask_token_id if i in found.positions else t for i, t in enumerate(found.ids)]
        assert found.generator_input == models.readable_tokens(gen.tokenizer, masked)
        with torch.no_grad():
            logits = gen.model(input_ids=torch.tensor([masked])).logits[0, found.positions]
        expected = torch.multinomial(torch.softmax(logits, -1), 1, generator=torch.Generator().manual_seed(seed))
        assert [found.sampled_ids[p] for p in found.positions] == expected[:, 0].tolist()
        assert all(found.sampled_ids[i] == t for i, t in enumerate(found.ids) if i not in found.positions)
        assert found.p_replaced is None and any("google/electra-small-discriminator" in n for n in found.notes)


def test_a_sample_equal_to_the_original_is_labelled_original(tiny_electra, monkeypatch):
    gen, disc = tiny_electra["generator"], tiny_electra["discriminator"]
    ids = gen.tokenizer(TEXT)["input_ids"]
    positions = masking.draw(gen.tokenizer, ids, 0).positions
    assert len(positions) >= 2
    # the first chosen position gets its own token back, the others a token that is not the original
    fake = [ids[positions[0]]] + [(ids[p] + 1) % len(gen.tokenizer) for p in positions[1:]]
    monkeypatch.setattr(electra, "sample", lambda *args: fake)
    found = electra.detect(TEXT, gen, disc, 0)
    assert [found.labels[p] for p in positions] == [0] + [1] * (len(positions) - 1)
    assert sum(found.labels) == len(positions) - 1


def test_five_objectives_with_electra_offered(tiny_models, tiny_electra):
    result = objectives.pretraining_examples_json(TEXT, "", tiny_models["pretraining"], tiny_models["causal"],
                                                  tiny_models["seq2seq"], 4)
    e = result["electra"]
    assert e["generator"] == tiny_electra["generator"].name and e["discriminator"] == tiny_electra["discriminator"].name
    assert e["positions"] == result["mlm"]["positions"]  # the same draw as BERT's example (same vocabulary)
    assert e["signal"]["fraction"] == 1.0 and e["signal"]["positions"] == len(e["ids"])
    assert e["signal"]["masked_lm_positions"] == result["mlm"]["signal"]["positions"]
    assert len(e["p_replaced"]) == len(e["ids"]) and e["notes"] == []
    html = tab_examples.examples_html(result)
    assert "ELECTRA: replaced-token detection" in html and "P(replaced)" in html and "Discriminator" in html


def test_offline_electra_says_what_it_needs(tiny_models):
    minilm = models.load(models.MINILM_NAME, "encoder")
    result = objectives.build(TEXT, "", minilm, None, None, 0, (), (None, None)).to_json()
    e = result["electra"]
    assert e["generator"] is None and e["labels"] is None and e["p_replaced"] is None
    assert any("not measured here: needs google/electra-small-discriminator from the Hub" in n for n in e["notes"])
    assert any("Generator: not measured here" in n for n in e["notes"])
    assert e["positions"] == result["mlm"]["positions"] and e["signal"]["fraction"] == 1.0
    html = tab_examples.electra_card(e)
    assert "not measured here" in html and "P(replaced)" not in html


def test_the_generator_is_the_bert_model_when_no_electra_generator_is_offered(tiny_models, monkeypatch):
    bert = models.load(tiny_models["masked"], "masked")
    minilm = models.load(models.MINILM_NAME, "encoder")
    monkeypatch.setattr(electra, "is_generator", lambda choice: False)  # as where none is offered
    assert electra.resolve(fallback=bert)[0] is bert
    assert electra.resolve(fallback=minilm)[0] is None  # an encoder cannot fill blanks
    assert electra.resolve(fallback=tiny_models["masked"])[0] is bert
    assert electra.resolve(tiny_models["pretraining"], fallback=bert)[0].name == tiny_models["pretraining"]


def test_a_discriminator_with_another_vocabulary_is_refused(tiny_electra, tiny_models):
    t5 = models.load(tiny_models["seq2seq"], "seq2seq")  # a different (Unigram) vocabulary

    class Other:  # the discriminator as seen by detect, with T5's tokenizer
        name, tokenizer, max_tokens = "other", t5.tokenizer, 128

    with pytest.raises(BadInput, match="do not share one vocabulary"):
        electra.detect(TEXT, tiny_electra["generator"], Other(), 0)


@pytest.mark.skipif(not COURSE.exists(), reason="the course's documents are in ../shared/course")
def test_the_quotes_are_the_textbooks_own_text():
    text = next(COURSE.glob("003_*.txt")).read_text()
    assert "20.12.2 ELECTRA: A More Efficient Alternative" in text
    for _, _, quote in electra.COURSE:
        assert quote in text, quote
