"""n-grams against a neural LM (Next token lab): the trigram model against a hand computation of interpolated
Kneser–Ney and against nltk's own score and perplexity, SmolLM2's perplexities against transformers' own loss,
backing off on an unseen pair, <UNK>, bad input, the endpoint's JSON and the panel's handler."""

from __future__ import annotations

import json
import math

import pytest
import torch

from labs.core.errors import BadInput
from labs.core.models import models
from labs.next_token import endpoints, ngram, tab_ngram

D = 0.1  # nltk's default discount for KneserNeyInterpolated
TINY = [["the", "cat", "sat"], ["the", "dog", "sat"], ["a", "cat", "ran"]]
# Padded (<s> <s> the cat sat </s> </s>, …), the three sentences have 12 distinct word pairs: <s> <s>, <s> the,
# <s> a, the cat, the dog, a cat, cat sat, cat ran, dog sat, sat </s>, ran </s>, </s> </s>.
PAIRS = 12


@pytest.fixture(scope="module")
def tiny():
    return ngram.train(TINY, unk_cutoff=1)


@pytest.fixture(scope="module")
def smol():
    return models.load(models.SMOLLM2_NAME, "causal")


@pytest.fixture(scope="module")
def example(smol):
    return ngram.compare(ngram.EXAMPLE)


def test_a_trigram_probability_is_interpolated_kneser_ney_by_hand(tiny):
    """Interpolated Kneser–Ney for a trigram, d = 0.1 (Chen & Goodman; what nltk implements):
        P(w | u v) = max(c(u v w) − d, 0) / c(u v ·) + d · N1+(u v ·) / c(u v ·) · P_cont(w | v)
        P_cont(w | v) = max(N1+(· v w) − d, 0) / N1+(· v ·) + d · N1+(v ·) / N1+(· v ·) · P_cont(w)
        P_cont(w) = N1+(· w) / N1+(· ·)
    c: counts; N1+(u v ·): how many different words follow u v; N1+(· v w): how many different words come before
    v w; N1+(· v ·): how many different trigram types have v in the middle; N1+(· ·): how many different pairs."""
    # P(sat | the cat): c(the cat sat) = 1 = c(the cat ·), 1 word follows "the cat"; "cat sat" follows 1 word
    # (the) of the 2 trigram types with "cat" in the middle (the cat sat, a cat ran); "cat" is followed by 2 words;
    # "sat" follows 2 different words (cat, dog).
    unigram = 2 / PAIRS
    middle = max(1 - D, 0) / 2 + D * 2 / 2 * unigram
    by_hand = max(1 - D, 0) / 1 + D * 1 / 1 * middle
    row = ngram.ngram_rows(["the", "cat", "sat"], tiny)[2]
    assert row.ngram_p == pytest.approx(by_hand, abs=1e-12) and by_hand == pytest.approx(0.946666667)
    assert row.bigram_level_p == pytest.approx(middle, abs=1e-12) and row.unigram_level_p == pytest.approx(unigram)
    assert (row.trigram_count, row.context_count, row.bigram_count, row.backed_off_to) == (1, 1, 1, None)


def test_an_unseen_pair_is_flagged_and_gets_the_lower_levels_probability(tiny):
    # "ran" never followed "the cat": c = 0, so P = γ(the cat) · P_cont(ran | cat), γ = d · 1 / 1
    seen_context = ngram.ngram_rows(["the", "cat", "ran"], tiny)[2]
    middle = (1 - D) / 2 + D * 2 / 2 * (1 / PAIRS)
    assert seen_context.backed_off_to == "bigram" and seen_context.context_seen
    assert seen_context.ngram_p == pytest.approx(D * 1 / 1 * middle, abs=1e-12)
    assert seen_context.weight == pytest.approx(D)
    # "dog cat" was never a context at all: nltk passes the bigram level on as it is (alpha 0, gamma 1)
    dog, cat, sat = ngram.ngram_rows(["dog", "cat", "sat"], tiny)
    assert not sat.context_seen and sat.backed_off_to == "bigram"
    assert sat.ngram_p == sat.bigram_level_p == pytest.approx((1 - D) / 2 + D * 2 / 2 * (2 / PAIRS))
    # "dog cat" was never counted either: down to the unigram level, through γ(dog) = d · 1 / 1
    assert cat.backed_off_to == "unigram" and cat.ngram_p == pytest.approx(D * 1 / 1 * 2 / PAIRS, abs=1e-12)
    assert dog.backed_off_to == "unigram"


def test_scoring_leaves_the_trained_counts_as_they_were(tiny):
    before = {order: dict(tiny.counts[order]) for order in (2, 3)}
    ngram.ngram_rows(["a", "dog", "ran", "off"], tiny)
    assert {order: dict(tiny.counts[order]) for order in (2, 3)} == before


def test_the_corpus_is_split_deterministically_and_the_rows_are_nltks_own_score(example):
    c = ngram.corpus()
    texts = ngram.reviews()
    assert len(texts) == 352 and (len(c.train_texts), len(c.held_out_texts)) == (317, 35)
    assert c.held_out_texts == texts[9::10] and ngram.split(texts) == (c.train_texts, c.held_out_texts)
    words = ["the", "film", "was", "a", "great", "success", "."]
    assert [r.word for r in example.rows] == words == ngram.words_of(ngram.EXAMPLE)
    padded = ["<s>", "<s>"] + words
    for i, r in enumerate(example.rows):
        context = (padded[i], padded[i + 1])
        assert r.ngram_p == c.model.score(r.word, context) and r.context == tuple(c.model.vocab.lookup(context))
        assert r.bigram_level_p == c.model.score(r.word, context[1:]) and r.unigram_level_p == c.model.score(r.word)
    # What the panel's "Try this" says of the default: a word the reviews never use, a trigram they never have
    assert [r.word for r in example.rows if r.oov] == ["success"] and example.rows[-1].context == ("great", "<UNK>")
    assert example.rows[4].backed_off_to == "bigram" and example.rows[4].context_seen
    # … and its "film" instead of "success": a word used often, never after "a great", falls below <UNK>
    film = ngram.ngram_rows(words[:5] + ["film"], c.model)[5]
    assert film.backed_off_to == "unigram" and film.train_count > 10 and film.ngram_p < example.rows[5].ngram_p


def test_held_out_perplexity_per_word_is_nltks_perplexity():
    c, h = ngram.corpus(), ngram.held_out()
    trigrams = []
    for text in c.held_out_texts:
        padded = ["<s>", "<s>"] + ngram.words_of(text)
        trigrams += [tuple(padded[i:i + 3]) for i in range(len(padded) - 2)]
    assert h.words == len(trigrams)
    # nltk's perplexity is 2 ** (mean −log2 P): the same number as exp(mean −ln P)
    assert h.ngram_per_word == pytest.approx(c.model.perplexity(trigrams), rel=1e-9)
    known = [t for t in trigrams if c.model.vocab.lookup(t[-1]) != ngram.UNK]
    assert h.known == len(known) < h.words
    assert h.ngram_per_known_word == pytest.approx(c.model.perplexity(known), rel=1e-9)


def test_smollm2s_perplexities_are_transformers_own_loss(smol):
    c, h = ngram.corpus(), ngram.held_out()
    start = ngram.start_id(smol.tokenizer)
    total, tokens, words = 0.0, 0, 0
    for i, text in enumerate(c.held_out_texts):
        ids = torch.tensor([[start] + smol.tokenizer(text, add_special_tokens=False)["input_ids"]])
        with torch.inference_mode():
            loss = smol.model(ids, labels=ids).loss.item()
        if i == 0:  # one held-out review: its own per-token perplexity is exp(loss)
            one = ngram.neural(smol, [text])[0]
            assert math.exp(-sum(one.token_logprobs) / len(one.token_logprobs)) == pytest.approx(math.exp(loss),
                                                                                                  rel=1e-4)
            assert sum(one.word_logprobs) == pytest.approx(sum(one.token_logprobs), abs=1e-9)
        n = ids.shape[1] - 1
        total, tokens, words = total + loss * n, tokens + n, words + len(ngram.words_of(text))
    assert (h.tokens, h.words) == (tokens, words) and tokens > words
    assert h.smollm2_per_token == pytest.approx(math.exp(total / tokens), rel=1e-4)
    assert h.smollm2_per_word == pytest.approx(math.exp(total / words), rel=1e-4)


def test_each_word_has_its_own_smollm2_tokens(example):
    for r, pieces, p in zip(example.rows, example.neural.word_tokens, example.smollm2_p):
        assert "".join(pieces).replace("␣", " ").strip().lower() == r.word and 0 < p < 1
    assert example.smollm2_p[0] == pytest.approx(math.exp(example.neural.token_logprobs[0]))


def test_an_unknown_word_is_oov_and_gets_the_probability_of_any_unknown_word(smol):
    c = ngram.corpus()
    rows = ngram.compare("I loved this zxqvw movie").rows
    other = ngram.ngram_rows(["i", "loved", "this", "qwrtyp"], c.model)[3]
    unknown = rows[3]
    assert unknown.oov and unknown.looked_up == "<UNK>" and unknown.train_count == 0
    assert 0 < unknown.ngram_p == other.ngram_p == c.model.score("<UNK>", ("loved", "this"))
    assert rows[4].context == ("this", "<UNK>")
    assert not any(r.oov for r in rows if r.word != "zxqvw")


@pytest.mark.parametrize("text, message", [
    ("", "Type a sentence first, for example “The film was a great success.”"), ("   ", "Type a sentence first"),
    (None, "The sentence must be text"), ("?! ... !", "no words, only punctuation"),
    ("word " * 61, "61 words .* at most 60"), ("x" * 401, "401 characters long; this lab reads at most 400")])
def test_bad_input_is_a_friendly_message(text, message):
    with pytest.raises(BadInput, match=message):
        ngram.compare(text)


def test_the_endpoint_json_has_its_fields(example):
    assert "ngram" in [e.name for e in endpoints.ENDPOINTS]
    out = json.loads(json.dumps(ngram.ngram_json(ngram.EXAMPLE)))
    assert "sentiment.csv" in out["corpus"] and (out["train_reviews"], out["held_out_reviews"]) == (317, 35)
    assert set(out["perplexities"]) >= {"ngram_per_word", "smollm2_per_token", "smollm2_per_word"}
    assert out["perplexities"]["smollm2_per_token"] < out["perplexities"]["smollm2_per_word"]
    assert [w["word"] for w in out["words"]] == ["the", "film", "was", "a", "great", "success", "."]
    for w in out["words"]:
        assert {"word", "ngram_p", "smollm2_p", "context_seen", "backed_off_to", "oov"} <= set(w)


def test_the_panel_escapes_the_sentence_and_shows_unk_as_text(example):
    table, note, words, found, figure, result = tab_ngram.on_ngram("I loved <b>this</b> zxqvw movie")
    assert len(table) == 3 and len(words["data"]) == len(result["words"]) == 12
    assert "<UNK>" not in note + found and "&lt;UNK&gt;" in found and "<b>" not in found
    assert len(figure.data) == 2
