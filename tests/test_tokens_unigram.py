"""Tokens lab, "The unigram tokenizer, whole": the Viterbi segmentation against sentencepiece's own encode and against
every segmentation enumerated by brute force (on a model made by hand and on the trained one), the n-best scores
against hand sums of GetScore and the library's own scores, the segmentations' total against the brute-force sum,
sampling's reproducibility and frequencies, friendly refusals, and the endpoint's JSON."""

from __future__ import annotations

import io
import json
import math
import re

import pytest
import sentencepiece as spm

from labs.core.errors import BadInput
from labs.tokens import endpoints, train, unigram

WORDS = ("unbelievable", "predictable", "lowest", "reviewers", "The film was wonderful")


@pytest.fixture(scope="module")
def model() -> unigram.Model:
    """The reviews' model with the panel's default size, trained once (the panel's cache holds it too)."""
    return unigram.trained(train.builtin_text(), unigram.VOCAB_DEFAULT)


def hand_sum(model: unigram.Model, pieces: list[str]) -> float:
    """Σ GetScore(PieceToId(piece)): the pieces' log-probabilities, read from the model one by one."""
    return sum(model.processor.GetScore(model.processor.PieceToId(p)) for p in pieces)


def all_segmentations(text: str, vocabulary: dict[str, float]) -> list[list[str]]:
    """Every way to cut `text` into pieces of the vocabulary, by brute force (no dynamic programming)."""
    if not text:
        return [[]]
    return [[text[:end]] + rest for end in range(1, len(text) + 1) if text[:end] in vocabulary
            for rest in all_segmentations(text[end:], vocabulary)]


def log_sum_exp(values: list[float]) -> float:
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


def hand_made(pieces: dict[str, float]) -> unigram.Model:
    """A unigram model whose pieces and log-probabilities are written here: a trained model's settings (its
    normaliser, its <unk>, <s>, </s>) with every other piece replaced."""
    model_pb2 = pytest.importorskip("sentencepiece.sentencepiece_model_pb2")  # needs protobuf
    writer = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(["low lower newest widest"] * 5), model_writer=writer,
                                   model_type="unigram", vocab_size=20, hard_vocab_limit=False, minloglevel=2)
    proto = model_pb2.ModelProto()
    proto.ParseFromString(writer.getvalue())
    del proto.pieces[3:]
    for piece, score in pieces.items():
        proto.pieces.add(piece=piece, score=score)
    return unigram.model_of(spm.SentencePieceProcessor(model_proto=proto.SerializeToString()))


# "▁lowest": greedy longest-first would take ▁low; the best path is ▁lo + west (−4.5 against ▁low + est's −6).
HAND = {"▁": -3.0, "l": -4.0, "o": -4.0, "w": -4.0, "e": -4.0, "s": -4.0, "t": -4.0, "▁lo": -2.5, "▁low": -3.0,
        "west": -2.0, "est": -3.0, "we": -2.5, "st": -2.5, "es": -3.0, "lo": -3.5, "ow": -3.5}


def test_on_a_hand_made_model_viterbi_is_the_best_of_every_segmentation():
    model = hand_made(HAND)
    normalized = model.processor.normalize("lowest")
    assert normalized == "▁lowest"
    every = all_segmentations(normalized, HAND)
    scores = [sum(HAND[p] for p in s) for s in every]
    best = every[scores.index(max(scores))]
    assert model.processor.encode("lowest", out_type=str) == best == ["▁lo", "west"]
    assert len(every) > 20 and scores.count(max(scores)) == 1
    total, count = unigram.lattice_total(model, normalized)
    assert count == len(every) and total == pytest.approx(log_sum_exp(scores))
    viterbi = unigram.segmentation(model, model.processor.encode("lowest", out_type="proto"), total)
    assert viterbi.score == pytest.approx(max(scores))
    assert viterbi.probability == pytest.approx(math.exp(max(scores)) / sum(math.exp(s) for s in scores))
    # the n-best list is the brute force's ranking, best first
    nbest = model.processor.nbest_encode("lowest", out_type=str, nbest_size=5)
    ranked = sorted(zip(scores, every), key=lambda sp: -sp[0])[:5]
    assert [sum(HAND[p] for p in s) for s in nbest] == pytest.approx([s for s, _ in ranked])


@pytest.mark.parametrize("word", ["lowest", "unbelievable", "reviewers"])
def test_on_the_trained_model_viterbi_is_the_best_of_every_segmentation(model, word):
    normalized = model.processor.normalize(word)
    every = all_segmentations(normalized, model.scores)
    scores = [hand_sum(model, s) for s in every]
    r = unigram.unigram(word)
    assert r.viterbi.pieces == every[scores.index(max(scores))]
    assert r.viterbi.score == pytest.approx(max(scores))
    assert r.segmentations == len(every) and r.log_total == pytest.approx(log_sum_exp(scores))
    assert sum(s.probability for s in r.nbest) <= 1 + 1e-9


@pytest.mark.parametrize("word", WORDS)
def test_viterbi_is_the_librarys_encode_and_the_nbest_scores_are_hand_sums(model, word):
    r = unigram.unigram(word)
    assert r.viterbi.pieces == model.processor.encode(word, out_type=str)
    assert r.viterbi.ids == model.processor.encode(word)
    assert r.viterbi.score == pytest.approx(hand_sum(model, r.viterbi.pieces))
    assert r.nbest[0].pieces == r.viterbi.pieces
    assert 1 < len(r.nbest) <= unigram.NBEST
    assert [s.pieces for s in r.nbest] == model.processor.NBestEncodeAsPieces(word, unigram.NBEST)
    for s in r.nbest:
        assert s.score == pytest.approx(hand_sum(model, s.pieces))
    scores = [s.score for s in r.nbest]
    assert scores == sorted(scores, reverse=True)
    library = model.processor.nbest_encode(word, out_type="proto", nbest_size=unigram.NBEST).nbests
    assert scores == pytest.approx([n.score for n in library], abs=1e-3)  # its own sums (in float32)
    assert all(p["log_prob"] == pytest.approx(model.processor.GetScore(p["id"]), abs=1e-4) for p in r.pieces)


def test_unknown_characters_score_as_the_library_scores_them(model):
    r = unigram.unigram("日本 film")
    assert "日本" in r.viterbi.pieces and [p for p in r.pieces if p["unknown"]][0]["piece"] == "日本"
    assert r.unk_score == pytest.approx(min(model.scores.values()) - 10)
    library = model.processor.nbest_encode("日本 film", out_type="proto", nbest_size=unigram.NBEST).nbests
    assert [s.score for s in r.nbest] == pytest.approx([n.score for n in library], abs=1e-3)


def test_the_same_seed_draws_the_same_samples_and_each_decodes_to_the_text(model):
    first = unigram.unigram("unbelievable", alpha=0.05, samples=30, seed=7)
    unigram.unigram("unbelievable", alpha=0.05, samples=30, seed=8)
    again = unigram.unigram("unbelievable", alpha=0.05, samples=30, seed=7)
    assert [(s.pieces, s.count) for s in first.samples] == [(s.pieces, s.count) for s in again.samples]
    assert sum(s.count for s in first.samples) == 30 and len(first.samples) > 3
    counts = [s.count for s in first.samples]
    assert counts == sorted(counts, reverse=True)
    for s in first.samples:
        assert model.processor.decode(s.pieces) == "unbelievable"
        assert s.score == pytest.approx(hand_sum(model, s.pieces))


def test_with_alpha_large_most_samples_are_the_viterbi_segmentation():
    sharp = unigram.unigram("unbelievable", alpha=1.0, samples=100, seed=1)
    flat = unigram.unigram("unbelievable", alpha=0.05, samples=100, seed=1)
    assert sharp.samples[0].pieces == sharp.viterbi.pieces
    assert sharp.samples[0].count >= 50 > next(s.count for s in flat.samples if s.pieces == flat.viterbi.pieces)
    assert len(sharp.samples) < len(flat.samples)


@pytest.mark.parametrize("alpha", [0.1, 1.0])
def test_sampled_frequencies_follow_exp_alpha_score_over_the_lattice_total(model, alpha):
    """The expected share the panel shows is the library's sampling distribution: 4,000 draws agree."""
    spm.set_random_generator_seed(3)
    draws = [tuple(model.processor.encode("predictable", out_type=str, enable_sampling=True, alpha=alpha,
                                          nbest_size=-1)) for _ in range(4000)]
    total = unigram.lattice_total(model, model.processor.normalize("predictable"), alpha)[0]
    for pieces in set(draws):
        expected = math.exp(alpha * hand_sum(model, list(pieces)) - total)
        assert draws.count(pieces) / len(draws) == pytest.approx(expected, abs=0.03)


@pytest.mark.parametrize("args, message", [
    ({"text": "   "}, "Type a text to segment first"),
    ({"text": "x" * (unigram.MAX_CHARS + 1)}, "at most 80"),
    ({"text": 12345}, "must be text"),
    ({"text": "\u200b"}, "Once normalised (NFKC, invisible characters dropped) your text is empty"),
    ({"vocab_size": 59}, "vocabulary size must be a whole number from 60 to 900"),
    ({"vocab_size": 901}, "from 60 to 900"),
    ({"alpha": 0}, "Alpha must be a number at least 0.05 and at most 1"),
    ({"alpha": "nan"}, "Alpha"),
    ({"samples": 0}, "number of samples"),
    ({"seed": -1}, "seed"),
    ({"corpus": "x" * (train.MAX_TEXT_CHARS + 1)}, "at most 50,000"),
    ({"corpus": "hello world"}, "too small to train on: your text allows only 11 pieces"),
    ({"corpus": "".join(chr(0x4E00 + i) for i in range(1000))}, "so many different characters"),
    ({"corpus": "".join(chr(0x4E00 + i) for i in range(200)) + " abc", "vocab_size": 60},
     "needs at least 207 pieces: one for each character it keeps, and <unk>, <s>, </s>. Raise the vocabulary size to "
     "207 or more"),
])
def test_bad_inputs_are_friendly(args, message):
    with pytest.raises(BadInput, match=re.escape(message)):
        unigram.unigram_json(**({"text": "unbelievable"} | args))


def test_a_vocabulary_too_large_for_a_pasted_text_names_the_largest_that_works():
    corpus = "\n".join(train.builtin_text().splitlines()[:40])
    with pytest.raises(BadInput, match="too large for your text: the largest that works is") as caught:
        unigram.unigram("lowest", 900, corpus)
    largest = int(re.search(r"is ([\d,]+)\.", str(caught.value)).group(1).replace(",", ""))
    assert unigram.unigram("lowest", largest, corpus).vocab_size == largest  # and that size trains


def test_the_slider_ends_train_on_the_reviews_and_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for size in unigram.VOCAB_RANGE:
        assert unigram.unigram("lowest", size).vocab_size == size
    corpus = "\n".join(train.builtin_text().splitlines()[:40])
    assert unigram.unigram("lowest", 60, corpus).trained_on == "your text"
    assert list(tmp_path.iterdir()) == []


def test_the_endpoint_returns_every_field():
    (endpoint,) = [e for e in endpoints.ENDPOINTS if e.name == "unigram"]
    out = endpoint.fn("unbelievable", 500, "", 0.1, 8, 0)
    json.dumps(out)
    assert {"pieces", "viterbi", "nbest", "samples", "vocab_size", "trained_on"} <= set(out)
    assert set(out["pieces"][0]) >= {"piece", "id", "log_prob"}
    assert set(out["viterbi"]) >= {"pieces", "score"} and out["nbest"][0]["pieces"] == out["viterbi"]["pieces"]
    assert set(out["samples"][0]) >= {"pieces", "count"} and sum(s["count"] for s in out["samples"]) == 8
    assert out["vocab_size"] == 500 and out["trained_on"] == "the built-in reviews"


def test_the_panel_escapes_what_the_student_typed():
    from labs.tokens import tab_unigram

    summary, nbest, drawn, sampled, pieces, result = tab_unigram.on_unigram("<b>x</b>", 500, "", 0.1, 8, 0)
    assert "<b>x" not in summary and "&lt;b&gt;" in summary
    assert "▁" in summary and result["viterbi"]["pieces"] == list(nbest["segmentation"][0].split(" · "))
