"""Choosing a model, T5's text-to-text prefixes (textbook 20.10.1): the prefix literally prepended, the ids the
model's own tokenizer gives, the output equal to `model.generate` called directly with the same ids and settings
(on a tiny random T5ForConditionalGeneration whose answers differ from input to input), t5-small "not measured
here" offline, the textbook quoted verbatim, bad input refused, the API and the panel in a browser."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import screenshot
from gradio_client.exceptions import AppError
from transformers import AutoTokenizer, T5ForConditionalGeneration

from labs.choosing import t5_prefixes as t5
from labs.choosing import tab_t5
from labs.core.errors import BadInput
from labs.core.models import models
from labs.core.models.registry import ModelChoice

COURSE = Path(__file__).resolve().parents[2] / "shared" / "course"
TEXTBOOK = "003_4e137ff2e23b0b86.txt"
TEXTS = ["this movie is great", "The cat sat on the mat.", "A cat sits. sentence2: A cat is sitting.",
         "Once upon a time there was a bank by the river."]


@pytest.fixture(scope="module")
def lively(tiny_models) -> models.LoadedModel:
    """The tiny T5 of conftest with larger random weights, so that greedy decoding writes different tokens for
    different inputs (the conftest copy writes <pad> everywhere); a LoadedModel of its own, not the shared one."""
    folder = models.get_choice(tiny_models["seq2seq"]).location
    model = T5ForConditionalGeneration.from_pretrained(folder)
    torch.manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0, 1.0)
    choice = ModelChoice("lively-t5", "seq2seq", "local", folder, "a tiny random T5")
    return models.LoadedModel(choice, model.eval(), AutoTokenizer.from_pretrained(folder), "cpu", 0.0)


def direct(loaded, text: str, new: int) -> list[int]:
    """The oracle: the model's own generate, called here with the tokenizer's ids and the same settings."""
    ids = loaded.tokenizer(text, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        return loaded.model.generate(ids, max_new_tokens=new, do_sample=False, num_beams=1)[0].tolist()


@pytest.mark.parametrize("key", list(t5.PREFIXES))
@pytest.mark.parametrize("text", TEXTS)
def test_the_prefix_is_prepended_and_the_output_is_generates_own(lively, key, text):
    prefix = t5.PREFIXES[key].prefix
    r = t5.text_to_text(lively, prefix, text, 12)
    assert r.input_text == prefix + " " + text and r.prefix == prefix and r.text == text
    assert r.input_ids == lively.tokenizer(prefix + " " + text)["input_ids"]
    assert r.input_ids[-1] == lively.tokenizer.eos_token_id  # T5 closes its input with </s>
    assert r.input_tokens == lively.tokenizer.convert_ids_to_tokens(r.input_ids)
    assert r.output_ids == direct(lively, prefix + " " + text, 12)
    assert r.output_ids[0] == lively.model.config.decoder_start_token_id
    assert r.output_text == lively.tokenizer.decode(r.output_ids, skip_special_tokens=True)
    assert r.settings == {"max_new_tokens": 12, "do_sample": False, "num_beams": 1}
    assert r.stopped == ("eos" if lively.tokenizer.eos_token_id in r.output_ids[1:] else "max_new_tokens")


def test_the_prefix_changes_the_answer_of_one_model(lively):
    """The oracle is not trivial: the lively T5's answers differ with the prefix (one model, several outputs)."""
    outputs = {tuple(r.output_ids) for r in t5.every_prefix(lively, "this movie is great", 12)}
    assert len(outputs) > 1
    rows = t5.every_prefix(lively, "this movie is great", 12)
    assert [r.prefix for r in rows] == [p.prefix for p in t5.PREFIXES.values()]


def test_no_prefix_is_the_text_alone_and_a_typed_prefix_is_used_as_typed(lively):
    r = t5.text_to_text(lively, "", "The cat sat.", 5)
    assert r.input_text == "The cat sat." and r.output_ids == direct(lively, "The cat sat.", 5)
    own = t5.text_to_text(lively, "  classify sentiment:  ", "  The cat sat.  ", 5)
    assert own.input_text == "classify sentiment: The cat sat."


def test_the_registered_tiny_t5_runs_through_the_api_function(tiny_models):
    r = t5.t5_text_to_text("translate English to German:", "The cat sat.", tiny_models["seq2seq"], 6)
    loaded = models.load(tiny_models["seq2seq"])
    assert r["output_ids"] == direct(loaded, "translate English to German: The cat sat.", 6)
    assert r["note"] == ""  # a T5: the prefixes are its own kind of input


def test_t5_small_is_not_measured_here_offline(tiny_models):
    assert not models.hub_online()
    if t5.T5_SMALL in models.choice_names("seq2seq"):
        pytest.skip("t5-small is in this machine's Hugging Face cache")
    for name in (t5.T5_SMALL, "", None):
        with pytest.raises(models.ModelUnavailable, match="Not measured here: needs t5-small from the Hub"):
            t5.t5_text_to_text("sst2 sentence:", "this movie is great", name, 8)
    html, shown = tab_t5.on_run("sst2 sentence:", "this <b>movie</b>", t5.T5_SMALL, 8)
    assert "not measured here: needs t5-small from the hub" in html.lower()
    assert "sst2 sentence: this &lt;b&gt;movie&lt;/b&gt;" in html and "<b>movie" not in html
    assert shown["input_text"] == "sst2 sentence: this <b>movie</b>"


@pytest.mark.parametrize("args, words", [
    (("sst2 sentence:", "", 8), "Type"),
    (("sst2 sentence:", 42, 8), "must be text"),
    ((["sst2"], "hello", 8), "prefix must be text"),
    (("x" * 300, "hello", 8), "prefix"),
    (("sst2 sentence:", "hello", 0), "max_new_tokens"),
    (("sst2 sentence:", "hello", 500), "max_new_tokens"),
])
def test_bad_input_is_refused_with_a_sentence(lively, args, words):
    prefix, text, new = args
    with pytest.raises(BadInput, match=words):
        t5.text_to_text(lively, prefix, text, new)


def test_a_causal_lm_is_refused(tiny_models):
    with pytest.raises(BadInput):
        t5.t5_text_to_text("sst2 sentence:", "hello", tiny_models["causal"], 5)


@pytest.mark.skipif(not COURSE.exists(), reason="the course's documents are in ../shared/course")
def test_the_textbook_is_quoted_verbatim():
    textbook = (COURSE / TEXTBOOK).read_text()
    for quote in t5.QUOTES:
        assert quote in textbook and quote in tab_t5.INTRO, quote
    assert t5.TEXTBOOK.removeprefix("Textbook ") in textbook
    for p in t5.PREFIXES.values():
        if p.source == t5.TEXTBOOK:  # the textbook's own prefix and example, as its table writes them
            assert f"{p.prefix} {p.example}" in textbook or p.key == "summarize", p.key
            assert p.prefix in textbook and p.target in textbook
        else:
            assert p.prefix not in textbook and "not in the course" in p.label
    assert "sst2 sentence: This movie is absolutely wonderful!" in textbook  # 20.10.6 uses the same prefix


def test_the_panel_handlers(lively, monkeypatch):
    monkeypatch.setattr(t5, "resolve", lambda name: lively)
    html, r = tab_t5.on_run("sst2 sentence:", "<i>great</i>", "lively-t5", 8)
    assert r["input_text"] == "sst2 sentence: <i>great</i>" and "&lt;i&gt;great&lt;/i&gt;" in html
    assert "<i>great" not in html and "max_new_tokens=8, do_sample=False, num_beams=1" in html
    table = tab_t5.on_every("this movie is great", "lively-t5", 8)
    assert list(table["Prefix"]) == [p.prefix for p in t5.PREFIXES.values()]
    assert list(table["Raw text out"]) == [lively.tokenizer.decode(direct(lively, f"{p.prefix} this movie is great", 8),
                                                                   skip_special_tokens=True)
                                           for p in t5.PREFIXES.values()]
    prefix, text, source = tab_t5.on_task("translate_de")
    assert (prefix, text) == ("translate English to German:", "Hello") and "Hallo" in source


def test_t5_text_to_text_api(client, tiny_models):
    r = client.predict("summarize:", "The cat sat on the mat.", tiny_models["seq2seq"], 7, api_name="/t5_text_to_text")
    assert r["input_text"] == "summarize: The cat sat on the mat."
    assert r["output_ids"] == direct(models.load(tiny_models["seq2seq"]), r["input_text"], 7)
    with pytest.raises(AppError, match="needs t5-small from the Hub"):
        client.predict("sst2 sentence:", "this movie is great", "t5-small", 8, api_name="/t5_text_to_text")
    with pytest.raises(AppError, match="max_new_tokens"):
        client.predict("sst2 sentence:", "hi", tiny_models["seq2seq"], 0, api_name="/t5_text_to_text")


def test_the_panel_in_the_browser_and_its_link(page, app_server):
    page.goto(app_server["url"] + "?tab=choosing&t5_prefix=translate+English+to+German%3A&t5_text=Hello+there",
              wait_until="load")
    page.get_by_text("translate English to German: Hello there").first.wait_for(timeout=60000)
    page.get_by_text("Raw text out").first.wait_for()
    page.get_by_text("6. One model, every task").scroll_into_view_if_needed()
    screenshot(page, "choosing-t5-prefixes")
    assert page.outside_requests == []
