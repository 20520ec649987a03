"""Tokens lab, two course points on real tokenizers: a word-level vocabulary (`tokenizers`' WordLevel) maps every
new word to [UNK] while the subword tokenizers rebuild it, against the library's own encode and decode; and a
model given another tokenizer's ids, against B.decode(A's ids) and the model's own loss."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from gradio_client.exceptions import AppError
from playwright.sync_api import expect
from tokenizers import Tokenizer, normalizers, pre_tokenizers, trainers
from tokenizers import models as tokenizer_models

from labs.core.errors import BadInput
from labs.core.models import gpt2_offline, models
from labs.core.ui import course_quotes
from labs.tokens import mismatch, tab_mismatch, tab_word_level, word_level

SMOL, MINILM, GPT2 = models.SMOLLM2_NAME, models.MINILM_NAME, gpt2_offline.NAME
SHOTS = Path(__file__).resolve().parent / "screenshots"


def library_word_level(vocabulary_size: int) -> Tokenizer:
    """The oracle: a WordLevel tokenizer trained here by the library on the corpus file's sentences."""
    tokenizer = Tokenizer(tokenizer_models.WordLevel(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    lines = [line for line in word_level.CORPUS.read_text().splitlines() if line and not line.startswith("#")]
    tokenizer.train_from_iterator(lines, trainer=trainers.WordLevelTrainer(
        vocab_size=vocabulary_size, special_tokens=["[UNK]"], show_progress=False))
    return tokenizer


def corpus_words() -> set[str]:
    return {w for line in word_level.corpus_lines() for w in line.lower().replace(".", " ").replace("?", " ").split()}


# ---------------------------------------------------------------- word level

@pytest.mark.parametrize("size", [5, 40, 5000])
def test_word_level_tokens_are_the_library_tokenizers_own(size):
    text = "I learned to cook a tasty soup, and Anna ran to the park!"
    r = word_level.word_level(text, size)
    expected = library_word_level(size).encode(text)
    assert (r.tokens, r.ids) == (expected.tokens, expected.ids)
    assert r.unknown == [t == "[UNK]" for t in expected.tokens]
    assert r.vocab_size == library_word_level(size).get_vocab_size()


def test_a_word_the_corpus_never_has_is_unk_but_the_subword_tokenizers_rebuild_it():
    word = "Transformerify"
    assert word.lower() not in corpus_words()
    r = word_level.word_level(f"We learn to {word} the hat", 5000)
    assert r.tokens[r.words.index(word.lower())] == "[UNK]"
    rows = {row.model: row for row in r.subword}
    for name in (SMOL, GPT2):
        if name in rows and rows[name].error is None:
            tokenizer = models.load_tokenizer(name) if name != GPT2 else gpt2_offline.tokenizer()
            ids = tokenizer(r.text, add_special_tokens=False)["input_ids"]
            assert rows[name].ids == ids and tokenizer.decode(ids) == r.text and rows[name].round_trip
            assert rows[name].unknown == 0
    assert rows[MINILM].round_trip_uncased and rows[MINILM].decoded == r.text.lower()


def test_wordpiece_has_an_unk_of_its_own_for_a_character_it_never_saw():
    text = "The cat 🐱 sat"
    row = next(r for r in word_level.word_level(text, 5000).subword if r.model == MINILM)
    tokenizer = models.load_tokenizer(MINILM)
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert row.ids == ids and row.unknown == ids.count(tokenizer.unk_token_id) == 1 and "[UNK]" in row.pieces
    assert not row.round_trip_uncased


def test_the_default_is_the_courses_words_and_a_quarter_or_more_of_them_are_unk():
    assert word_level.DECK_WORDS == ("hat", "learn", "taaaaasty", "laern", "Transformerify")
    assert word_level.TEXTBOOK_WORDS == ("run", "running", "runner", "runs")
    assert all(w in course_quotes.text("word_level_morphology") for w in word_level.TEXTBOOK_WORDS)
    r = word_level.word_level(word_level.EXAMPLE)
    unknown = [w for w, unk in zip(r.words, r.unknown) if unk]
    assert unknown == ["taaaaasty", "laern", "transformerify", "runner"]
    assert r.to_json()["unk_share"] == round(4 / 9, 4)


def test_a_smaller_vocabulary_never_knows_more_words():
    text = "My friend likes to read books in the garden every day."
    counts = [sum(word_level.word_level(text, n).unknown) for n in (5, 20, 60, 200, 5000)]
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1]


@pytest.mark.parametrize("text, size", [("", 100), ("   ", 100), ("x" * 1001, 100), ("hat", 4), ("hat", 5001),
                                        ("hat", "many"), (None, 100), ("hat", 2.5)])
def test_word_level_bad_input_is_refused(text, size):
    with pytest.raises(BadInput):
        word_level.word_level(text, size)


def test_word_level_html_escapes_what_the_student_typed():
    html, _ = tab_word_level.on_word_level("<img src=x>hat learn", 5000)
    assert "<img" not in html and "&lt;" in html


# ---------------------------------------------------------------- a model needs its own tokenizer

def tokenizer(name):
    return gpt2_offline.tokenizer() if name == GPT2 else models.load_tokenizer(name)


@pytest.mark.parametrize("a, b", [(GPT2, SMOL), (SMOL, GPT2), (MINILM, SMOL), (SMOL, MINILM), (GPT2, MINILM)])
def test_the_garbled_text_is_b_decoding_a_s_ids(a, b):
    text = "The students were reading a long book about the history of the city."
    r = mismatch.tokenizer_mismatch(text, a, b)
    ids = tokenizer(a)(text)["input_ids"]
    assert r.ids == ids and r.garbled == tokenizer(b).decode(ids)
    assert r.garbled != text


@pytest.mark.parametrize("name", [GPT2, SMOL])
def test_the_same_tokenizer_both_ways_gives_the_text_back(name):
    text = "Pitfall 6: tokenization must match pre-training. Ça va? 🐱"
    r = mismatch.tokenizer_mismatch(text, name, name)
    assert r.garbled == text == r.own_decoded and r.ids == r.own_ids


def test_an_id_past_b_s_vocabulary_is_named_and_dropped():
    r = mismatch.tokenizer_mismatch("We watched the livestream", GPT2, SMOL)
    size = len(tokenizer(SMOL))
    past = [i for i in r.ids if i >= size]
    assert past and r.past_vocabulary == len(past)
    assert [p is None for p in r.read_pieces] == [i >= size for i in r.ids]
    assert r.garbled == tokenizer(SMOL).decode(r.ids)
    assert r.reading.left_out == len(past) and r.reading.foreign_tokens == len(r.ids) - len(past)


def test_smollm2_is_far_less_surprised_by_its_own_ids_than_by_gpt2_s():
    import torch

    text = "The students were reading a long book about the history of the city."
    r = mismatch.tokenizer_mismatch(text, GPT2, SMOL)
    loaded = models.load(SMOL, "causal")

    def oracle(ids):
        with torch.inference_mode():
            return math.exp(loaded.model(torch.tensor([ids]), labels=torch.tensor([ids])).loss.item())

    assert r.reading.perplexity_own == pytest.approx(oracle(r.own_ids), rel=1e-4)
    assert r.reading.perplexity_foreign == pytest.approx(oracle(r.ids), rel=1e-4)
    assert r.reading.perplexity_own * 100 < r.reading.perplexity_foreign


def test_no_perplexity_without_a_causal_lm_s_weights():
    for read_with in (MINILM, GPT2):
        r = mismatch.tokenizer_mismatch("The cat sat on the mat.", SMOL, read_with)
        assert r.reading is None and "not" in r.reading_note and r.to_json()["model"] is None


@pytest.mark.parametrize("text, a, b", [("", GPT2, SMOL), ("x" * 1001, GPT2, SMOL), ("hi", "no such model", SMOL),
                                        ("hi", GPT2, 3), ("hi", "", SMOL)])
def test_mismatch_bad_input_is_refused(text, a, b):
    with pytest.raises(Exception) as caught:
        mismatch.tokenizer_mismatch(text, a, b)
    assert isinstance(caught.value, BadInput) or type(caught.value).__name__ == "ModelUnavailable"


def test_the_pitfall_panel_quotes_the_lecture():
    shown = tab_mismatch.course_text()
    for quote_id in ("pitfall_title", "pitfall_match", "pitfall_solution"):
        assert course_quotes.text(quote_id) in shown


# ---------------------------------------------------------------- through the app

def test_the_apis_answer_what_the_compute_gives_here_and_refuse_bad_input(client):
    text = "We learn to Transformerify the hat"
    assert client.predict(text, 5000, api_name="/word_level") == word_level.word_level_json(text, 5000)
    assert (client.predict(text, GPT2, SMOL, api_name="/tokenizer_mismatch")
            == mismatch.tokenizer_mismatch_json(text, GPT2, SMOL))
    with pytest.raises(AppError, match="vocabulary size"):
        client.predict(text, 4, api_name="/word_level")
    with pytest.raises(AppError, match="Type"):
        client.predict("", GPT2, SMOL, api_name="/tokenizer_mismatch")


# ---------------------------------------------------------------- in the browser

def test_tokens_tab_draws_both_panels(browser, app_server):
    from conftest import at_each_width

    SHOTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context()
    page = context.new_page()
    page.goto(app_server["url"] + "?tab=tokens", wait_until="load")
    page.get_by_role("tab").first.wait_for(timeout=120000)  # ?tab=tokens opens the Tokens tab itself
    for width in at_each_width(page):
        name = "tokens_pitfalls" if width > 600 else "tokens_pitfalls_phone"
        expect(page.get_by_text("4 of 9 tokens are [UNK]", exact=False)).to_be_visible(timeout=60000)
        expect(page.locator("#tok-mismatch-panel").get_by_text("on tokenizer A's", exact=False)).to_be_visible(
            timeout=120000)
        expect(page.locator("#tok-mismatch-panel")).to_contain_text("jupyter_code")  # GPT-2's "." read by SmolLM2
        page.locator("#tok-word-level-panel").screenshot(path=str(SHOTS / f"{name}.png"))
        page.locator("#tok-mismatch-panel").screenshot(path=str(SHOTS / f"{name}_mismatch.png"))
    context.close()
