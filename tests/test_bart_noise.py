"""Pre-training, BART's denoising: each corruption against a hand computation from the same seeded numpy draws,
BART's ids from the tokenizer's own, a tiny random BART's reconstruction against `model.generate` and its loss
against F.cross_entropy, the offline message, the textbook quoted verbatim, RoBERTa, ALBERT and BART offered
online only and never preloaded, the API and the panel in a browser."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import linked_inputs, open_tab, screenshot
from gradio_client.exceptions import AppError

from labs.core.errors import BadInput
from labs.core.models import download, gpt2_offline, models, registry
from labs.core.models.registry import ModelChoice
from labs.pretraining import bart_noise as bn
from labs.pretraining import tab_bart

COURSE = Path(__file__).resolve().parents[2] / "shared" / "course"
if not COURSE.exists():
    COURSE = Path("/work/shared/course")
TEXT = ("The storm reached the coast at night. Fishermen pulled their boats onto the sand. "
        "By morning the harbour was calm again. Nobody had expected it to pass so quickly.")
ON_DEMAND = {"roberta-base": "masked", "albert-base-v2": "masked", "facebook/bart-base": "seq2seq"}


@pytest.fixture(scope="module")
def tiny_bart(tmp_path_factory):
    """A 1+1-layer BART with random weights and BART's kind of tokenizer: GPT-2's byte-level BPE (the real merges,
    read offline) with BART's special tokens <s> <pad> </s> <unk> <mask>."""
    from tokenizers import Tokenizer
    from transformers import BartConfig, BartForConditionalGeneration, PreTrainedTokenizerFast

    if not gpt2_offline.available():
        pytest.fail("openai-whisper's GPT-2 ranks are missing: pip install --no-deps -r requirements-offline.txt")
    backend = Tokenizer.from_str(gpt2_offline.tokenizer().backend_tokenizer.to_str())
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                        unk_token="<unk>", mask_token="<mask>")
    torch.manual_seed(0)
    config = BartConfig(vocab_size=len(tokenizer), d_model=16, encoder_layers=1, decoder_layers=1,
                        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
                        max_position_embeddings=600, pad_token_id=tokenizer.pad_token_id,
                        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                        decoder_start_token_id=tokenizer.eos_token_id, forced_eos_token_id=tokenizer.eos_token_id)
    model = BartForConditionalGeneration(config).eval()
    choice = ModelChoice("tiny-bart", "seq2seq", "local", str(tmp_path_factory.mktemp("bart")), "a tiny random BART")
    return models.LoadedModel(choice, model, tokenizer, "cpu", 0.0)


def pieces_of(text: str) -> list[str]:
    return gpt2_offline.tokenizer().tokenize(text)


# ---------------------------------------------------------------- the five corruptions, by hand


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_masking_and_deletion_take_the_positions_numpy_draws(seed):
    pieces = pieces_of(TEXT)
    n = len(pieces)
    k = round(bn.MASK_RATE * n)
    drawn = sorted(np.random.default_rng(seed).choice(n, size=k, replace=False).tolist())  # the hand computation
    masked = bn.corrupt(pieces, "mask", seed)
    assert masked.details["positions"] == drawn
    assert masked.noised == [bn.MASK if i in drawn else p for i, p in enumerate(pieces)]
    deleted = bn.corrupt(pieces, "delete", seed)
    assert deleted.noised == [p for i, p in enumerate(pieces) if i not in drawn] and len(deleted.noised) == n - k
    assert [i for i, f in enumerate(deleted.fate) if f == "deleted"] == drawn


@pytest.mark.parametrize("seed", range(6))
def test_infilling_replaces_poisson_spans_with_one_mask_each(seed):
    pieces = pieces_of(TEXT)
    n = len(pieces)
    c = bn.corrupt(pieces, "infill", seed)
    lengths, spans = c.details["lengths"], c.details["spans"]
    budget = round(bn.INFILL_RATE * n)
    assert sum(lengths) == budget and [s["length"] for s in spans] == lengths
    rng = np.random.default_rng(seed)  # the same generator's first draws: Poisson(3) until the budget is met
    draws = [int(rng.poisson(3.0)) for _ in lengths]
    assert draws[:-1] == lengths[:-1] and lengths[-1] == budget - sum(draws[:-1]) <= draws[-1]
    assert c.noised.count(bn.MASK) == len(lengths)  # one <mask> per span, an empty span too
    assert len(c.noised) == n - budget + len(lengths)
    rebuilt, k = [], 0  # each <mask> replaced by its span gives back the text
    for piece in c.noised:
        if piece == bn.MASK:
            rebuilt += pieces[spans[k]["start"]:spans[k]["start"] + spans[k]["length"]]
            k += 1
        else:
            rebuilt.append(piece)
    assert rebuilt == pieces
    assert all(s["tokens"] == bn.readable(pieces[s["start"]:s["start"] + s["length"]]) for s in spans)


def test_the_span_lengths_follow_poisson_three_over_many_seeds():
    lengths = [length for seed in range(400) for length in bn.span_lengths(np.random.default_rng(seed), 1000)[:-1]]
    assert np.mean(lengths) == pytest.approx(3.0, abs=0.05)
    assert np.mean(np.array(lengths) == 0) == pytest.approx(np.exp(-3.0), abs=0.01)  # P(0) = e^-λ: inserted masks


@pytest.mark.parametrize("seed", [0, 3])
def test_permutation_and_rotation_move_whole_sentences_and_the_start(seed):
    pieces = pieces_of(TEXT)
    p = bn.corrupt(pieces, "permute", seed)
    bounds = [tuple(b) for b in p.details["sentences"]]
    assert len(bounds) == 4 and bounds[-1][1] == len(pieces)
    assert p.details["order"] == np.random.default_rng(seed).permutation(4).tolist()
    assert p.noised == [x for k in p.details["order"] for x in pieces[slice(*bounds[k])]]
    assert sorted(p.noised) == sorted(pieces)
    r = bn.corrupt(pieces, "rotate", seed)
    start = r.details["start"]
    assert 1 <= start < len(pieces) and r.noised == pieces[start:] + pieces[:start]
    assert start == int(np.random.default_rng(seed).integers(1, len(pieces)))


def test_the_same_seed_gives_the_same_corruption_and_seeds_differ():
    for t in bn.TRANSFORMS:
        assert bn.run(None, TEXT, t, 5) == bn.run(None, TEXT, t, 5)
    assert len({tuple(bn.run(None, TEXT, "infill", s)["noised_tokens"]) for s in range(5)}) > 1


def test_offline_the_pieces_are_gpt2s_and_the_reconstruction_is_not_measured():
    assert bn.BART not in models.registry() or models.in_hub_cache(bn.BART)
    r = bn.bart_noise(TEXT, "infill", 0)
    assert r["tokenizer"] == gpt2_offline.NAME and r["original_tokens"] == bn.readable(pieces_of(TEXT))
    assert r["reconstruction"] is None and "not measured here" in r["note"] and r["original_ids"] is None
    assert r["noised_text"] == gpt2_offline.tokenizer().convert_tokens_to_string(
        [p.replace("␣", "Ġ") for p in r["noised_tokens"]])


# ---------------------------------------------------------------- a tiny random BART


def test_barts_ids_are_its_tokenizers_own(tiny_bart):
    r = bn.run(tiny_bart, TEXT, "mask", 2)
    tok = tiny_bart.tokenizer
    own = tok(TEXT, add_special_tokens=False)["input_ids"]
    assert r["original_ids"] == [tok.bos_token_id] + own + [tok.eos_token_id]
    masks = [i for i, t in enumerate(r["noised_tokens"]) if t == bn.MASK]
    assert [r["noised_ids"][i + 1] for i in masks] == [tok.mask_token_id] * len(masks)
    assert r["tokenizer"] == "tiny-bart" and r["note"] == ""


@pytest.mark.parametrize("transform", ["infill", "delete"])
def test_the_reconstruction_is_generates_and_the_loss_is_cross_entropy(tiny_bart, transform):
    from transformers.models.bart.modeling_bart import shift_tokens_right

    r = bn.run(tiny_bart, TEXT, transform, 1)
    model, tok = tiny_bart.model, tiny_bart.tokenizer
    source = torch.tensor([r["noised_ids"]])
    with torch.no_grad():
        expected = model.generate(input_ids=source, max_new_tokens=len(r["original_tokens"]) + 16, do_sample=False,
                                  num_beams=1)[0].tolist()
        labels = torch.tensor([r["original_ids"]])
        decoder_in = shift_tokens_right(labels, model.config.pad_token_id, model.config.decoder_start_token_id)
        logits = model(input_ids=source, decoder_input_ids=decoder_in).logits[0]
    rebuilt = r["reconstruction"]
    assert rebuilt["output_ids"] == expected
    assert rebuilt["text"] == tok.decode(expected, skip_special_tokens=True).strip()
    assert rebuilt["loss"] == pytest.approx(float(torch.nn.functional.cross_entropy(logits, labels[0])), rel=1e-5)
    assert rebuilt["exact"] == (rebuilt["text"] == TEXT) and rebuilt["loss"] > 5  # random weights: far from it


def test_bad_input_is_refused_with_a_reason(tiny_bart, tiny_models):
    with pytest.raises(BadInput, match="transform must be one of"):
        bn.run(None, TEXT, "shuffle", 0)
    with pytest.raises(BadInput, match="seed"):
        bn.run(None, TEXT, "mask", -1)
    with pytest.raises(BadInput, match="at least two tokens"):
        bn.run(None, "Hi", "rotate", 0)
    with pytest.raises(BadInput, match="Type a text first"):
        bn.run(None, "   ", "mask", 0)
    with pytest.raises(BadInput, match="at most 256"):
        bn.run(None, "word " * 300, "mask", 0)
    with pytest.raises(BadInput, match="not a BART model"):
        bn.run(models.load(tiny_models["seq2seq"], "seq2seq"), TEXT, "mask", 0)


@pytest.mark.skipif(not COURSE.exists(), reason="the course's documents are in ../shared/course")
def test_the_textbook_is_quoted_verbatim_under_its_section():
    text = (COURSE / bn.TEXTBOOK).read_text()
    section = text.split(bn.SECTION, 1)[1].split("20.13 ", 1)[0]
    assert bn.QUOTE in section and all(q in section for q in bn.QUOTE_ITEMS.values())
    assert bn.QUOTE in tab_bart.COURSE


# ---------------------------------------------------------------- RoBERTa, ALBERT and BART: offered online


def test_roberta_albert_and_bart_are_offered_online_and_not_offline(monkeypatch):
    for name, family in ON_DEMAND.items():
        assert (name in models.registry()) == models.in_hub_cache(name)  # offline: only from the cache
    try:
        monkeypatch.setattr(registry, "hub_online", lambda: True)
        models.reset_registry()
        offered = models.registry()
        for name, family in ON_DEMAND.items():
            assert offered[name].family == family and offered[name].on_demand and offered[name].source == "hub"
        assert {"roberta-base", "albert-base-v2"} <= set(models.choice_names("masked"))
        assert models.default_name("masked") == "bert-base-uncased" and models.default_name("seq2seq") == "t5-small"
    finally:
        monkeypatch.undo()
        models.reset_registry()
    assert all(c.name not in ON_DEMAND for c in registry.PRELOADED)
    fetched = []  # `./lab download` without names fetches the preloaded defaults only
    monkeypatch.setattr(download, "download", lambda ids: fetched.extend(ids) or 0)
    download.main([])
    assert fetched == [c.location for c in registry.PRELOADED] and set(ON_DEMAND).isdisjoint(fetched)


def test_the_full_card_table_never_loads_an_on_demand_model(monkeypatch):
    from labs.choosing import cards

    loads = []
    monkeypatch.setattr(models, "load", lambda name, *a, **k: loads.append(name) or (_ for _ in ()).throw(
        models.ModelUnavailable("stand-in")))
    choice = registry.HUB_MODELS[-1]
    monkeypatch.setattr(models, "registry", lambda: {choice.name: choice})
    rows = cards.model_card([], measure=False)["models"]
    assert loads == [] and rows[0]["name"] == choice.name and "loaded on demand" in rows[0]["note"]
    cards.model_card([choice.name], measure=False)  # asked by name: loaded
    assert loads == [choice.name]


# ---------------------------------------------------------------- the API and the panel


def test_bart_noise_api(client, tiny_models):
    out = client.predict(TEXT, "permute", 3, "", api_name="/bart_noise")
    assert out["details"]["order"] == bn.run(None, TEXT, "permute", 3)["details"]["order"]
    assert out["reconstruction"] is None and "not measured here" in out["note"]
    with pytest.raises(AppError, match="transform must be one of"):
        client.predict(TEXT, "scramble", 0, "", api_name="/bart_noise")
    with pytest.raises(AppError, match="not a BART model"):
        client.predict(TEXT, "mask", 0, tiny_models["seq2seq"], api_name="/bart_noise")


def test_the_panel_handler_draws_five_corruptions():
    html, rebuilt, out = tab_bart.on_bart(TEXT, "rotate", 0)
    assert html.count("BART&#x27;s encoder reads") + html.count("BART's encoder reads") == 5
    assert all(bn.NAMES[t] in html for t in bn.TRANSFORMS) and "not measured here" in rebuilt
    assert out["transform"] == "rotate"


def test_a_link_sets_the_panels_inputs_and_a_bad_value_falls_back():
    from labs.core.ui import links

    specs = linked_inputs("pretraining")
    assert {"bart_text", "bart_transform", "bart_seed"} <= set(specs)
    good = {"tab": "pretraining", "bart_text": TEXT, "bart_transform": "rotate", "bart_seed": "3"}
    tab, values, notes = links.read(good, ["pretraining"], {"pretraining": specs})
    assert tab == "pretraining" and notes == []
    assert {name: v for (_, name), v in values.items()} == {"bart_text": TEXT, "bart_transform": "rotate",
                                                            "bart_seed": 3}
    bad = {"tab": "pretraining", "bart_transform": "<b>shuffle</b>"}
    _, values, notes = links.read(bad, ["pretraining"], {"pretraining": specs})
    assert values == {} and len(notes) == 1 and "default" in notes[0]


def test_the_panel_in_the_browser(page):
    page.set_default_timeout(120000)  # a busy machine: every step waits for its state, however long
    open_tab(page, "Pre-training")
    page.get_by_text("6. BART: corrupt a document five ways").first.scroll_into_view_if_needed()
    page.get_by_text("Document rotation").first.wait_for(timeout=60000)
    page.get_by_text("not measured here: needs facebook/bart-base").first.wait_for(timeout=60000)
    page.get_by_text("6. BART: corrupt a document five ways").first.scroll_into_view_if_needed()
    screenshot(page, "pretraining_bart")
    assert page.outside_requests == []
