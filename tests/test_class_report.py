"""The lecture's record (`/class_report`): one class with a choice question voted twice (some students change
their answer) and a next-word question revealed beside the real SmolLM2, as CSV and as a standalone HTML page.
Checked against hand counts, what the reveal returned, the model's own probability through transformers (the
chain rule), and the page's own plotly data; a formula stays text and a script stays escaped; only the lecturer
key gets it. On a real SQLite database."""

from __future__ import annotations

import csv
import html
import io
import json
import math
import re
import time
from html.parser import HTMLParser

import pytest
from test_classroom import fresh_store  # noqa: F401  (autouse: each test on its own SQLite file)

from labs.classroom import answers, report, second_vote, sessions
from labs.core.errors import BadInput
from labs.core.models import models

CHOICES = ["BERT", "GPT-2", "T5"]
# (answer, confidence 1 guessing … 4 sure) per student, in each vote
FIRST = {"student-0001": ("BERT", 4), "student-0002": ("GPT-2", 2), "student-0003": ("GPT-2", 3),
         "student-0004": ("T5", 1), "student-0005": ("GPT-2", 2), "student-0006": ("BERT", 3)}
SECOND = {"student-0001": ("BERT", 4), "student-0002": ("BERT", 3), "student-0003": ("GPT-2", 3),
          "student-0004": ("BERT", 2), "student-0005": ("BERT", 4), "student-0007": ("BERT", 1)}
PROMPT = "The capital of France is"
FORMULA = '=HYPERLINK("x","click")'
KEPT = answers.word(FORMULA)[0]  # as the class keeps it: its edge punctuation trimmed, still a formula
SCRIPT = "<script>alert(1)</script>"
WORDS = {"student-0001": ("Paris", 4), "student-0002": ("paris", 3), "student-0003": ("Paris", None),
         "student-0004": ("Lyon", 1), "student-0005": (FORMULA, None), "student-0006": (SCRIPT, 2)}
NUMBERS = {"student-0001": ("12", 4), "student-0002": ("12", 2), "student-0003": ("8", None)}  # never revealed


def send(code: str, given: dict) -> None:
    for student, (answer, sure) in given.items():
        sessions.class_answer(code, student, answer, confidence=sure)
    sessions._snapshots.clear()  # the next look reads the database, as another front-end's would


def lecture() -> dict:
    """The lecture: question 1 voted twice, question 2 beside SmolLM2, question 3 left unrevealed, question 4
    asked and never answered. Every answer shown on the projector (minimum count 1)."""
    start = sessions.class_start("Week 6 <LMs> & you")
    key, code = start["lecturer_key"], start["code"]
    sessions.class_min_count(key, 1)
    sessions.class_ask(key, "choice", "Which model reads both sides of a blank?", choices=CHOICES, correct="BERT")
    send(code, FIRST)
    second_vote.class_round(key)
    send(code, SECOND)
    choice = sessions.class_reveal(key)
    sessions.class_ask(key, "next_token", PROMPT, models.SMOLLM2_NAME, top_k=5)
    send(code, {s: (w, c) for s, (w, c) in WORDS.items()})
    word = sessions.class_reveal(key)
    sessions.class_ask(key, "number", "How many heads has this model?", correct="12")
    send(code, NUMBERS)
    sessions.class_ask(key, "number", "How many layers?")
    return {"start": start, "choice": choice, "word": word}


def counted(given: dict) -> dict:
    """Hand counts: answers by their case-folded form."""
    out: dict = {}
    for answer, _ in given.values():
        kept = answers.word(answer)[0].casefold()
        out[kept] = out.get(kept, 0) + 1
    return out


def mean_sure(given: dict, answer: str) -> float | None:
    levels = [c for a, c in given.values() if a.casefold() == answer.casefold() and c is not None]
    return sum(levels) / len(levels) if levels else None


def smollm2_probability(word: str) -> float:
    """The oracle: P(word | prompt) by the chain rule, from SmolLM2's logits through transformers directly."""
    import torch

    loaded = models.load(models.SMOLLM2_NAME, "causal")  # the lab's own copy: no second load
    prompt_ids = loaded.tokenizer(PROMPT)["input_ids"]
    word_ids = loaded.tokenizer(" " + word, add_special_tokens=False)["input_ids"]
    with torch.inference_mode():
        logits = loaded.model(torch.tensor([prompt_ids + word_ids])).logits[0].double()
    logp = torch.log_softmax(logits, -1)
    return math.exp(sum(float(logp[len(prompt_ids) - 1 + i, t]) for i, t in enumerate(word_ids)))


def test_the_csv_has_every_vote_and_answer_with_the_models_figures():
    made = lecture()
    out = report.class_report(made["start"]["lecturer_key"], "csv")
    code = made["start"]["code"]
    assert (out["code"], out["format"], out["filename"]) == (code, "csv", f"lm-lab-class-{code}-report.csv")
    rows = list(csv.DictReader(io.StringIO(out["text"])))
    assert list(rows[0])[:6] == ["question", "vote round", "kind", "question text", "model", "answer"]
    by = {(r["question"], r["vote round"], r["answer"].casefold()): r for r in rows}
    # The counts the students sent, by hand, vote by vote.
    for vote, given in (("1", FIRST), ("2", SECOND)):
        assert {a: int(r["count"]) for (q, v, a), r in by.items() if (q, v) == ("1", vote)} == counted(given)
        for answer in counted(given):
            row = by["1", vote, answer]
            assert float(row["share"]) == pytest.approx(counted(given)[answer] / len(given))
            assert float(row["mean confidence"]) == pytest.approx(mean_sure(given, answer))
    assert [int(by["1", "2", "bert"][f"confidence {i} ({w})"]) for i, w in
            enumerate(("guessing", "unsure", "fairly sure", "sure"), 1)] == [1, 1, 1, 2]
    # The right answer's share and who changed, by hand: 0002, 0004 and 0005 of the five who voted twice.
    first, again = by["1", "1", "bert"], by["1", "2", "bert"]
    assert float(first["share right"]) == pytest.approx(2 / 6) and float(again["share right"]) == pytest.approx(5 / 6)
    assert (again["voted twice"], again["changed"], again["moved"]) == ("5", "3", "towards")
    assert first["voted twice"] == first["changed"] == "" and first["right answer"] == "BERT"
    assert float(again["question mean confidence"]) == pytest.approx(sum(c for _, c in SECOND.values()) / 6)
    # The word question: the reveal's probabilities, and one of them the model's own through transformers.
    words = {(r["answer"] or "").casefold(): r for r in made["word"]["class"]}
    mine = {a: r for (q, v, a), r in by.items() if q == "2"}
    assert {a: int(r["count"]) for a, r in mine.items()} == {
        ("'" + a if a.startswith("=") else a): n for a, n in counted(WORDS).items()}
    for answer, row in words.items():
        got = mine["'" + answer if answer.startswith("=") else answer]
        assert float(got["model probability"]) == pytest.approx(row["model_prob"], rel=1e-9)
        assert int(got["model rank"]) == row["model_rank"]
    assert float(mine["paris"]["model probability"]) == pytest.approx(smollm2_probability("Paris"), rel=1e-4)
    assert mine["paris"]["answer"] == "Paris" and mine["paris"]["model"] == models.SMOLLM2_NAME
    agreement = made["word"]["agreement"]
    assert mine["lyon"]["class favourite"] == "Paris" == agreement["class_favourite"]
    assert int(mine["lyon"]["model rank of the class favourite"]) == words["paris"]["model_rank"]
    assert float(mine["lyon"]["perplexity"]) == pytest.approx(agreement["perplexity"], rel=1e-9)
    assert mine["lyon"]["model favourite"] == agreement["model_favourite"].strip()
    # A formula a student typed is text in a spreadsheet.
    assert KEPT.startswith("=") and mine["'" + KEPT.casefold()]["answer"] == "'" + KEPT
    assert not any(v.startswith(("=", "+", "@")) for r in rows for v in r.values() if v)
    # Not revealed: the counts only; asked and never answered: one row.
    unrevealed = [r for r in rows if r["question"] == "3"]
    assert {r["answer"]: int(r["count"]) for r in unrevealed} == {"12": 2, "8": 1}
    assert {r["revealed"] for r in unrevealed} == {"not revealed"} and not unrevealed[0]["model probability"]
    assert [(r["mean confidence"], r["confidence 4 (sure)"]) for r in unrevealed] == [("3", "1"), ("", "0")]
    never = [(r["answer"], r["count"], r["revealed"]) for r in rows if r["question"] == "4"]
    assert never == [("", "0", "not revealed")]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", first["revealed"])


class Page(HTMLParser):
    """The page's sections, each with its vote blocks, headings and plotly scripts; every script's src."""

    def __init__(self):
        super().__init__()
        self.sections, self.sources, self.title, self.lang, self.charset = [], [], "", None, None
        self._in, self._text = None, []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "html":
            self.lang = attrs.get("lang")
        if tag == "meta" and "charset" in attrs:
            self.charset = attrs["charset"]
        if tag == "section" and "question" in (attrs.get("class") or ""):
            self.sections.append({"id": attrs.get("id"), "rounds": [], "scripts": [], "h2": ""})
        if tag == "div" and attrs.get("class") == "round" and self.sections:
            self.sections[-1]["rounds"].append(attrs.get("data-round"))
        if tag == "script":
            self.sources.append(attrs.get("src"))
        self._in, self._text = tag, []

    def handle_data(self, data):
        if self._in == "title":
            self.title += data
        if self._in == "h2" and self.sections:
            self.sections[-1]["h2"] += data
        if self._in == "script" and self.sections:
            self.sections[-1]["scripts"].append(data)


def plotly_data(scripts: list[str]) -> list[list[dict]]:
    """Each figure's traces, as the page hands them to Plotly.newPlot."""
    figures = []
    for text in scripts:
        for found in re.finditer(r'Plotly\.newPlot\(\s*"[^"]+",\s*', text):
            figures.append(json.JSONDecoder().raw_decode(text, found.end())[0])
    return figures


def test_the_page_stands_alone_with_a_section_a_chart_and_the_figures_per_question():
    made = lecture()
    out = report.class_report(made["start"]["lecturer_key"], "html")
    page_text = out["text"]
    assert out["filename"] == f"lm-lab-class-{made['start']['code']}-report.html" and out["format"] == "html"
    page = Page()
    page.feed(page_text)
    assert page_text.startswith("<!doctype html>") and page.lang == "en" and page.charset == "utf-8"
    assert page.title == f"Week 6 <LMs> & you · {time.strftime('%Y-%m-%d', time.gmtime())}"
    # Offline: plotly.js once, inline; nothing fetched.
    assert set(page.sources) == {None} and page_text.count("Plotly.newPlot") == 3 and 'src="http' not in page_text
    assert page_text.count("plotly.js v") <= 2  # one copy of the library (its banner)
    assert [s["id"] for s in page.sections] == ["question-1", "question-2", "question-3", "question-4"]
    assert [s["rounds"] for s in page.sections] == [["1", "2"], ["1"], ["1"], ["1"]]
    assert "two votes" in page.sections[0]["h2"] and "The next word" in page.sections[1]["h2"]
    # The second vote's chart: both votes, the counts the students sent.
    (both,) = plotly_data(page.sections[0]["scripts"])
    for trace, given in zip(both, (FIRST, SECOND)):
        hand = {c: sum(a == c for a, _ in given.values()) for c in CHOICES}
        assert dict(zip(trace["y"], trace["x"])) == hand
    # The word question: the class's counts beside the model's probabilities, then the model's own top 5.
    class_chart, model_chart = plotly_data(page.sections[1]["scripts"])
    counts = {html.unescape(y).casefold(): x for y, x in zip(class_chart[0]["y"], class_chart[0]["x"])}
    assert counts == counted(WORDS)
    probs = {r["answer"]: r["model_prob"] for r in made["word"]["class"]}
    assert [html.unescape(y) for y in class_chart[1]["y"]] == list(probs)
    assert class_chart[1]["x"] == pytest.approx(list(probs.values()))
    assert model_chart[0]["x"] == pytest.approx([t["prob"] for t in made["word"]["model_top"]])
    assert not plotly_data(page.sections[2]["scripts"]) and "not revealed" in page_text
    # The figures, as the reveal gave them.
    assert "3 of 5" in page_text and "towards" in page_text and "83 %" in page_text  # changed; 5/6 right
    assert f"#{made['word']['agreement']['class_favourite_model_rank']:,}" in page_text
    # What a student typed is escaped, everywhere.
    assert SCRIPT not in page_text and html.escape(SCRIPT) in page_text
    assert "<LMs>" not in page_text and "Week 6 &lt;LMs&gt; &amp; you" in page_text


def test_only_the_lecturer_gets_the_report_in_a_format_it_has():
    start = sessions.class_start()
    key, code = start["lecturer_key"], start["code"]
    student = sessions.class_join(code)["student_id"]
    for not_the_key in (student, code, "wrong-key", "", None):
        with pytest.raises(sessions.Refused, match="Only the lecturer"):
            report.class_report(not_the_key, "csv")
    with pytest.raises(BadInput, match="html.*csv"):
        report.class_report(key, "pdf")
    empty = report.class_report(key, " HTML ")
    assert "No questions" in empty["text"] and "Plotly" not in empty["text"]
    assert report.class_report(key, "csv")["text"].splitlines() == [",".join(report.HEADERS)]


def test_the_page_shows_what_the_projector_showed_and_the_csv_has_every_answer():
    start = sessions.class_start("Week 7")
    key, code = start["lecturer_key"], start["code"]
    sessions.class_ask(key, "number", "How many tokens in 'unbelievable'?", correct="3")
    send(code, {"student-0001": ("3", 4), "student-0002": ("3", None), "student-0003": ("4", 1),
                "student-0004": ("-31337", 2), "student-0005": ("-31337", 3)})
    sessions.class_hide(key, "-31337")  # taken off the projector; 4 is given once: "other" at minimum count 2
    revealed = sessions.class_reveal(key)
    rows = list(csv.DictReader(io.StringIO(report.class_report(key, "csv")["text"])))
    assert [(r["answer"], r["count"], r["on the projector"]) for r in rows] == [
        ("'-31337", "2", "hidden"), ("3", "2", "shown"), ("4", "1", "other")]  # a leading minus is not a formula
    assert float(rows[0]["share right"]) == pytest.approx(revealed["agreement"]["right_share"]) == pytest.approx(2 / 3)
    assert float(rows[1]["mean confidence"]) == 4 and float(rows[0]["question mean confidence"]) == pytest.approx(2.5)
    page = report.class_report(key, "html")["text"]
    assert "31337" not in page and "2 answers taken off the projector" in page
    assert "other (1 answer given by fewer than 2 students)" in page and "2.5 of 4 (2 students said)" in page
    (chart,) = plotly_data([page])
    assert dict(zip(chart[0]["y"], chart[0]["x"])) == {"3": 2, "4": 1}
