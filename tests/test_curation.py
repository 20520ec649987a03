"""Pre-training, curating the data (labs/pretraining/curation.py): the built-in corpus's labels (written beside
each document in assets/curation_corpus.jsonl, never read by the lab) against what each step removes; MinHash
near-duplicates against the shingles' exact Jaccard computed by hand; perplexities against SmolLM2's own loss."""

from __future__ import annotations

import itertools
import json
import math
import re

import pytest

from labs.core.errors import BadInput
from labs.core.models import models
from labs.pretraining import curation as cu
from labs.pretraining import tab_curation

CORPUS = [json.loads(line) for line in cu.CORPUS.read_text().splitlines() if line.strip()]
KIND = {d["id"]: d["kind"] for d in CORPUS}


def fresh_documents() -> list[cu.Document]:
    return [cu.Document(i + 1, t, len(t.split())) for i, t in enumerate(cu.builtin_corpus())]


def hand_jaccard(a: str, b: str) -> float:
    """Word 3-grams written out here, and |A ∩ B| / |A ∪ B|."""
    def grams(text):
        w = re.findall(r"\w+", text.lower())
        return {tuple(w[i:i + 3]) for i in range(len(w) - 2)} or {tuple(w)}
    A, B = grams(a), grams(b)
    return len(A & B) / len(A | B)


@pytest.fixture(scope="module")
def smol():
    return models.load(models.SMOLLM2_NAME, "causal")


def test_the_corpus_is_labelled_and_numbered_in_order():
    assert [d["id"] for d in CORPUS] == list(range(1, len(CORPUS) + 1)) and 40 <= len(CORPUS) <= 80
    assert {d["kind"] for d in CORPUS} == {"prose", "exact_duplicate", "near_duplicate", "boilerplate", "non_english",
                                           "spam", "fragment"}
    assert list(cu.builtin_corpus()) == [d["text"] for d in CORPUS]


def test_exact_duplicates_are_the_hand_counted_copies():
    docs = fresh_documents()
    cu.exact_duplicates(docs)
    removed = {d.number for d in docs if d.step == "exact duplicate"}
    # by hand: 23 and 26 copy 2, 24 copies 7, 25 is 12 in capitals with spaces, 34 and 35 repeat banner 33
    assert removed == {23, 24, 25, 26, 34, 35}
    assert {n for n, k in KIND.items() if k == "exact_duplicate"} <= removed
    assert all(d.kept for d in docs if d.number in (2, 7, 12, 33))


def test_a_hand_worked_jaccard():
    assert cu.jaccard(cu.shingles("a b c d"), cu.shingles("a b c e")) == pytest.approx(1 / 3)
    assert cu.jaccard(cu.shingles("The cat sat."), cu.shingles("the CAT sat")) == 1.0


@pytest.mark.parametrize("threshold", [0.5, 0.7])
def test_minhash_near_duplicates_agree_with_the_exact_jaccard(threshold):
    docs = fresh_documents()
    cu.exact_duplicates(docs)
    survivors = [d for d in docs if d.kept]
    pairs = cu.near_duplicates(docs, threshold)
    flagged = {p.document: p for p in pairs}
    for p in pairs:  # each flagged pair: the exact Jaccard is near the threshold or above, and MinHash near it
        exact = hand_jaccard(docs[p.document - 1].text, docs[p.of - 1].text)
        assert p.exact_jaccard == pytest.approx(exact, abs=1e-4)
        assert exact >= threshold - 0.1 and abs(p.minhash_jaccard - exact) <= 0.1
    for a, b in itertools.combinations(survivors, 2):  # every clear case decided as the exact Jaccard says
        exact = hand_jaccard(a.text, b.text)
        if exact >= threshold + 0.1:
            assert b.number in flagged, (a.number, b.number, exact)
        elif exact < threshold - 0.1 and b.number in flagged:
            assert flagged[b.number].of != a.number, (a.number, b.number, exact)
    if threshold == 0.5:
        assert set(flagged) == {n for n, k in KIND.items() if k == "near_duplicate"}
        assert 32 not in flagged  # the same topic as document 2 in other words


def test_heuristics_remove_the_boilerplate_and_fragments_for_their_reasons():
    docs = fresh_documents()
    cu.heuristics(docs)
    removed = {d.number: d.reason for d in docs if not d.kept}
    fragments = {n for n, k in KIND.items() if k == "fragment"}
    assert fragments <= set(removed) and all("fewer than" in removed[n] for n in fragments)
    assert "symbols per word" in removed[36] and "symbols per word" in removed[38]  # navigation, footer
    assert "repeat an earlier line" in removed[37] and "repeat an earlier line" in removed[39]
    assert not {n for n, k in KIND.items() if k in ("prose", "near_duplicate", "non_english")} & set(removed)
    assert cu.repeated_lines("a\na\nb\na") == pytest.approx(0.5)
    assert cu.symbol_ratio("a | b | c") == pytest.approx(2 / 5)  # two symbols, five "words"


def test_perplexity_is_smollm2s_own_loss(smol):
    import torch

    texts = [cu.builtin_corpus()[i - 1] for i in (2, 40, 44, 47)]  # prose, French, spam, a fragment
    for text, (ppl, n) in zip(texts, cu.perplexities(smol, texts)):
        ids = smol.tokenizer(text, return_tensors="pt")["input_ids"]
        with torch.inference_mode():
            loss = smol.model(ids, labels=ids).loss  # the oracle: transformers' own shifted cross-entropy
        assert n == ids.shape[1] and ppl == pytest.approx(math.exp(float(loss)), rel=1e-4)


def test_batched_perplexities_equal_one_at_a_time(smol):
    texts = [cu.builtin_corpus()[i - 1] for i in (3, 41, 45)]
    together = cu.perplexities(smol, texts)
    assert together == [cu.perplexities(smol, [t])[0] for t in texts]


def test_spam_and_other_languages_are_more_surprising_than_prose(smol):
    pick = {k: [d["text"] for d in CORPUS if d["kind"] == k][:4] for k in ("prose", "spam", "non_english")}
    ppl = {k: [p for p, _ in cu.perplexities(smol, texts)] for k, texts in pick.items()}
    assert min(ppl["spam"]) > max(ppl["prose"]) and min(ppl["non_english"]) > max(ppl["prose"])


@pytest.mark.slow
def test_the_whole_corpus_step_by_step(smol):
    r = cu.curate(smol, "").to_json()
    assert [c["removed"] for c in r["counts"]] == [6, 5, 7, 10] and r["kept"] == 23
    step = {d["number"]: d["step"] for d in r["documents"]}
    expected = {"exact_duplicate": "exact duplicate", "near_duplicate": "near-duplicate", "fragment": "heuristics",
                "spam": "perplexity", "non_english": "perplexity"}
    assert all(step[n] == expected[k] for n, k in KIND.items() if k in expected)
    prose = sorted(d["perplexity"] for d in r["documents"] if KIND[d["number"]] == "prose" and d["perplexity"])
    for d in r["documents"]:
        if KIND[d["number"]] in ("spam", "non_english"):
            assert d["perplexity"] > prose[len(prose) // 2]
        if KIND[d["number"]] == "spam":
            assert d["perplexity"] > prose[-1]
    counts, frame, result = tab_curation.on_curate("", 0.5, 150, 22, models.SMOLLM2_NAME)
    assert result == r and len(frame) == len(CORPUS) and "23 of 51 documents kept" in counts


def test_your_own_documents_and_the_floor(smol):
    text = ("The cat sat on the warm mat by the door.\n\nthe cat sat on the warm mat by the door.\n\nHi there\n\n"
            "A quiet evening by the lake, with ducks gliding past the reeds.")
    r = cu.curate_json(text, 0.5, 100_000, 0, models.SMOLLM2_NAME)
    assert [d["step"] for d in r["documents"]] == ["", "exact duplicate", "heuristics", ""]
    lowest = min(d["perplexity"] for d in r["documents"] if d["kept"])
    raised = cu.curate_json(text, 0.5, 100_000, lowest + 0.01, models.SMOLLM2_NAME)
    assert sum(d["kept"] for d in raised["documents"]) == 1 and "below" in raised["documents"][0]["reason"] + \
        raised["documents"][3]["reason"]


def test_nothing_left_for_the_model(smol):
    r = cu.curate(smol, "Read more\n\nRead more")
    assert [d.step for d in r.documents] == ["heuristics", "exact duplicate"] and r.to_json()["kept"] == 0


@pytest.mark.parametrize("args, words", [
    ((5,), "must be text"), (([1, 2],), "must be text"), (("\n\n".join(["a b c d e"] * 81),), "at most 80"),
    (("x" * 1001,), "at most 1,000"), (("ok", 2.0), "threshold"), (("ok", 0.5, 10, 20), "below the limit"),
    (("ok", 0.5, "lots"), "perplexity limit"), (("ok", 0.5, 150, -1), "floor"),
])
def test_bad_input_is_a_friendly_error(args, words):
    with pytest.raises(BadInput, match=words):
        cu.curate_json(*args)
