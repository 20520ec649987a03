"""Pre-training, curation's classifiers and C4's rules (labs/pretraining/classifier_filters.py, c4_rules.py): each
document's language and probability against py3langid's own classify / rank, each offensive score against
profanity_check's own predict_prob, and each C4 rule's count against a hand count on pages written here to break
every rule once."""

from __future__ import annotations

import json
from functools import lru_cache

import pytest

from labs.core.errors import BadInput
from labs.core.models import models
from labs.pretraining import c4_rules as c4
from labs.pretraining import classifier_filters as cf
from labs.pretraining import curation as cu
from labs.pretraining import tab_c4, tab_curation

CORPUS = [json.loads(line) for line in cu.CORPUS.read_text().splitlines() if line.strip()]
KIND = {d["id"]: d["kind"] for d in CORPUS}
FIVE = ("The ferry leaves the harbour at seven.\nIt crosses the bay in about forty minutes.\nGulls follow it most of "
        "the way.\nThe crew sells tea and biscuits on the upper deck.\nOn calm days you can see the lighthouse.")
# Pages that each break one rule of C4 once (the hand count is beside each).
PAGES = [
    # 1: kept. One line without terminal punctuation ("Menu"), one of 1 word ("Thanks!"), one mentioning JavaScript.
    "Menu\n" + FIVE + "\nTurn on JavaScript to see the timetable.\nThanks!",
    # 2: lorem ipsum (a page)
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit.\nOur shop sells warm socks.\nEvery pair is knitted "
    "by hand.\nWe ship to most countries.\nReturns are free for a month.\nWrite to us with any question.",
    # 3: a curly bracket (a page); kept when that rule is off
    "Write {name} in the template to greet each guest.\nThe letter then reads as if written to one person.\nMost "
    "mail programs can fill such fields.\nTest the letter on a friend first.\nCheck that every name is spelled "
    "right.\nSend the letters in the morning.",
    # 4: a word on the bad-words list (a page): "idiot"
    "Only an idiot would miss the last train home.\nThe station closes at midnight.\nTaxis wait outside the main "
    "entrance.\nThe night bus stops near the bridge.\nTickets can be bought from the driver.\nThe first train "
    "leaves at five.",
    # 5: four sentences (a page)
    "The museum opens at ten.\nEntry is free on Sundays.\nThe cafe serves soup and bread.\nGuided tours start at noon.",
    # 6: three sentences of page 1 in a row (three sentences), then five of its own: kept
    "It crosses the bay in about forty minutes.\nGulls follow it most of the way.\nThe crew sells tea and biscuits on "
    "the upper deck.\nMy uncle fished in these waters for thirty years.\nHe knew every rock along the coast.\nHe "
    "mended his nets on the quay each morning.\nHis boat was painted bright green.\nHe retired to a cottage by the "
    "beach.",
    # 7: French (a page)
    "Le bateau part du port à sept heures.\nIl traverse la baie en quarante minutes.\nLes mouettes le suivent "
    "presque tout le trajet.\nOn vend du thé sur le pont supérieur.\nPar beau temps, on voit le phare.",
]
HAND = {"lorem ipsum": 1, "curly bracket": 1, "bad word": 1, "terminal punctuation": 1, "short line": 1,
        "javascript": 1, "too few sentences": 1, "repeated span": 3, "language": 1}


@lru_cache(maxsize=1)
def fresh_identifier():
    """py3langid's own identifier, loaded here apart from the lab's."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


@pytest.fixture(scope="module")
def smol():
    return models.load(models.SMOLLM2_NAME, "causal")


def test_language_and_probability_are_py3langids_own():
    import py3langid

    oracle = fresh_identifier()
    texts = [d["text"] for d in CORPUS] + PAGES
    for text in texts:
        language, probability = cf.identify(text)
        assert (language, probability) == pytest.approx(oracle.classify(text))
        assert language == py3langid.classify(text)[0]  # the raw scores' best language is the same
        assert probability == pytest.approx(dict(oracle.rank(text))[language])
    assert [cf.identify(d["text"])[0] for d in CORPUS if d["kind"] == "non_english"] == ["fr", "de", "fi", "pl"]


def test_offensive_scores_are_profanity_checks_own_predict_prob():
    from profanity_check import predict_prob

    texts = [d["text"] for d in CORPUS] + PAGES
    assert cf.offensive_probabilities(texts) == pytest.approx(list(predict_prob(texts)), abs=0)
    assert cf.offensive_probabilities([]) == []


def test_the_bad_words_list_is_each_word_scored_alone():
    from profanity_check import predict_prob

    words = cf.bad_words(0.9)
    listed = sorted(words)
    assert all(p >= 0.9 for p in predict_prob(listed)) and "idiot" in words and "ferry" not in words
    vocabulary = sorted(cf._package().vectorizer.vocabulary_)
    assert sum(predict_prob(vocabulary) >= 0.9) == len(words) < len(vocabulary)
    assert cf.words_of("Only an IDIOT, twice: idiot!") == ["idiot", "twice", "idiot"]  # its analyzer: no stop words


def test_the_classifier_steps_remove_what_their_classifiers_say():
    docs = [cu.Document(i + 1, d["text"], len(d["text"].split())) for i, d in enumerate(CORPUS)]
    cf.annotate(docs)
    oracle = fresh_identifier()
    threshold = 0.99
    expected = {d.number for d in docs if (lambda lp: lp[0] != "en" or lp[1] < threshold)(oracle.classify(d.text))}
    cf.language_step(docs, threshold)
    assert {d.number for d in docs if d.step == "language"} == expected
    assert {n for n, k in KIND.items() if k == "non_english"} <= expected
    assert not expected & {n for n, k in KIND.items() if k == "prose"}  # every paragraph of prose is ≥ 0.99 English
    rude = cu.Document(1, "You are a stupid idiot and this website is crap.", 9)
    calm = cu.Document(2, "The ferry leaves the harbour at seven every morning.", 9)
    cf.annotate([rude, calm])
    cf.offensive_step([rude, calm], 0.5)
    assert (rude.kept, calm.kept, rude.step) == (False, True, "offensive") and "p(offensive)" in rude.reason


def test_curate_with_both_classifiers_on(smol):
    """The classifiers run after the heuristics and before the model; here nothing is left for it to read."""
    texts = [CORPUS[39]["text"], "You are a stupid idiot and this website is crap, shut up.", "Read more",
             "Read more"]
    r = cu.curate_json("\n\n".join(texts), 0.5, 150, 22, models.SMOLLM2_NAME, True, 0.99, True, 0.5)
    assert [d["step"] for d in r["documents"]] == ["language", "offensive", "heuristics", "exact duplicate"]
    assert [c["step"] for c in r["counts"]] == list(cu.STEPS)
    assert [c["removed"] for c in r["counts"]] == [1, 0, 1, 1, 1, 0] and r["kept"] == 0
    oracle = fresh_identifier()
    for d, text in zip(r["documents"], texts):
        assert (d["language"], d["language_probability"]) == pytest.approx(oracle.classify(text))
    assert all(d["perplexity"] is None for d in r["documents"])  # the model read nothing
    off = cu.curate_json(texts[2:], 0.5, 150, 22, models.SMOLLM2_NAME)
    assert [c["step"] for c in off["counts"]] == ["exact duplicate", "near-duplicate", "heuristics", "perplexity"]
    assert off["language_threshold"] is None and off["offensive_threshold"] is None
    assert off["documents"][0]["offensive_probability"] is not None  # scored, though the step is off
    _, frame, same = tab_curation.on_curate("\n\n".join(texts), 0.5, 150, 22, models.SMOLLM2_NAME, True, 0.99,
                                            True, 0.5)
    assert same == r and len(frame) == 4 and frame["language"][0].startswith("fr ")


def test_each_c4_rule_removes_its_hand_count():
    r = c4.c4_clean_json(PAGES)
    assert {c["rule"]: c["removed"] for c in r["counts"]} == HAND
    fate = {p["number"]: p["rule"] for p in r["pages"]}
    assert fate == {1: "", 2: "lorem ipsum", 3: "curly bracket", 4: "bad word", 5: "too few sentences", 6: "",
                    7: "language"}
    lines = {(x["page"], x["rule"], x["text"]) for x in r["removed"] if x["rule"] != "repeated span"}
    assert lines == {(1, "terminal punctuation", "Menu"), (1, "short line", "Thanks!"),
                     (1, "javascript", "Turn on JavaScript to see the timetable.")}
    spans = [(x["page"], x["of"]) for x in r["removed"] if x["rule"] == "repeated span"]
    assert spans == [(6, 1)] * 3
    page = {p["number"]: p for p in r["pages"]}
    assert page[1]["cleaned"] == FIVE and page[1]["sentences"] == 5 and page[5]["sentences"] == 4
    assert page[6]["cleaned"] == "\n".join(PAGES[5].split("\n")[3:]) and page[6]["sentences"] == 5
    oracle = fresh_identifier()
    for n in (1, 6, 7):  # language: py3langid on the cleaned text
        text = page[n]["cleaned"] or PAGES[n - 1]
        assert (page[n]["language"], page[n]["language_probability"]) == pytest.approx(oracle.classify(text))
    assert r["kept"] == 2 and [c["pages_out"] for c in r["counts"]][-1] == 2


def test_a_rule_turned_off_removes_nothing():
    r = c4.c4_clean_json(PAGES, "lorem ipsum, bad word, terminal punctuation, short line, javascript, "
                                "too few sentences, repeated span, language")
    assert {p["number"] for p in r["pages"] if p["kept"]} == {1, 3, 6} and "curly bracket" not in r["rules"]
    only = c4.clean(PAGES, ["too few sentences"]).to_json()  # the lines all stay: "Menu", "Thanks!" count as text
    assert [c["rule"] for c in only["counts"]] == ["too few sentences"]
    assert {p["number"] for p in only["pages"] if not p["kept"]} == {5}


def test_the_built_in_pages_break_the_rules_their_notes_say():
    counts, pages, removed, r = tab_c4.on_c4("", list(c4.RULES), 0.99, 0.9)
    assert r == c4.c4_clean_json() and len(pages) == len(c4.PAGES) == 8
    fate = [p["rule"] for p in r["pages"]]
    assert fate == ["", "", "lorem ipsum", "curly bracket", "too few sentences", "bad word", "", "language"]
    assert len(removed) == len(r["removed"]) and "3 of 8 pages kept" in counts


@pytest.mark.parametrize("call, words", [
    (lambda: c4.c4_clean_json(5), "must be text"),
    (lambda: c4.c4_clean_json("", "nonsense"), "not one of C4's rules"),
    (lambda: c4.c4_clean_json("", "", 2), "language probability"),
    (lambda: c4.c4_clean_json("", "", 0.99, 0.1), "bad-word probability"),
    (lambda: c4.c4_clean_json("x" * 2001), "at most 2,000"),
    (lambda: cu.curate_json("ok", 0.5, 150, 22, "", "maybe"), "true or false"),
    (lambda: cu.curate_json("ok", 0.5, 150, 22, "", True, 1.5), "language probability"),
    (lambda: cu.curate_json("ok", 0.5, 150, 22, "", False, 0.99, True, 0), "offensive-language"),
])
def test_bad_input_is_a_friendly_error(call, words):
    with pytest.raises(BadInput, match=words):
        call()
