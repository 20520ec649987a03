"""Every entry of labs/core/ui/course_quotes.py, the one table of what the app presents as the course's words, is
in its document verbatim (exact characters: an en dash is not a hyphen) and stands under the slide or section
it names."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from labs.core.ui import course_quotes as cq

pytestmark = pytest.mark.skipif(not cq.COURSE_DIR.exists(), reason="the course's documents are in ../shared/course")

# No whitespace is normalised: the documents are one paragraph or bullet a line, and an entry that spans a line
# break (BART's "single\n[MASK]") keeps the document's own newline, so an exact substring test is the right one.

NUMBERED = {cq.HANDOUT, cq.TEXTBOOK}  # "20.2.3 …", "6 B1: …", "6.1 …": a heading says its level
HEADING = re.compile(r"^(\d+(?:\.\d+)*) [A-Z]")  # not a table cell such as "5.0 |"
# The decks and the summary sheet mark no heading: a slide title is a line like any other. There a heading is
# every line some entry names, plus the titles of slides next to quoted ones (a quote filed under the slide
# before its own then fails), and a quote must follow its title within MAX_LINES lines with none of them between.
NEIGHBOURS = {
    cq.LECTURE: ("BERT's Special Tokens", "Special Tokens: Purpose and Usage", "BERT's Two Pre-training Objectives",
                 "Pre-training Data: The Foundation", "Transfer Learning: Best Practices"),
    cq.SUMMARY: ("Token Classification (NER, POS)", "Span Prediction (QA)", "Sentence Pair Classification"),
    cq.STRATEGIES: (),
}
MAX_LINES = 60


def lines_of(document: str) -> list[str]:
    return (cq.COURSE_DIR / cq.FILES[document]).read_text().split("\n")


def span_numbered(lines: list[str], where: str, start: int) -> tuple[int, int] | None:
    """The lines of the section headed by the first heading line at or after start that contains `where`."""
    for i in range(start, len(lines)):
        m = HEADING.match(lines[i])
        if m and where in lines[i]:
            level = m.group(1).count(".")
            end = next((j for j in range(i + 1, len(lines)) if (n := HEADING.match(lines[j]))
                        and n.group(1).count(".") <= level), len(lines))
            return i, end
    return None


def sections(document: str, where: str) -> list[tuple[int, int]]:
    """Every (first line, end line) of the document that stands under the heading `where`."""
    lines = lines_of(document)
    found = []
    if document in NUMBERED:
        start = 0
        while (span := span_numbered(lines, where, start)) is not None:
            found.append(span)
            start = span[0] + 1
        return found
    headings = {q.where for q in cq.QUOTES if q.document == document} | set(NEIGHBOURS[document])
    for i, line in enumerate(lines):
        if line.strip() == where:
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() in headings), len(lines))
            found.append((i, min(end, i + MAX_LINES)))
    return found


def test_the_table_has_unique_ids_and_known_documents():
    assert len(cq.BY_ID) == len(cq.QUOTES)
    assert {q.document for q in cq.QUOTES} <= set(cq.FILES)


@pytest.mark.parametrize("quote", cq.QUOTES, ids=[q.id for q in cq.QUOTES])
def test_each_quote_is_verbatim_under_its_heading(quote):
    document = (cq.COURSE_DIR / quote.file).read_text()
    assert quote.text in document, f"not verbatim in {quote.document}: {quote.text!r}"
    spans = sections(quote.document, quote.where)
    assert spans, f"no heading {quote.where!r} in {quote.document}"
    lines = lines_of(quote.document)
    assert any(quote.text in "\n".join(lines[a:b]) for a, b in spans), (
        f"{quote.text!r} is not under {quote.where!r} in {quote.document}")


def test_a_misfiled_quote_fails():
    """The check can fail: the [CLS] sentence is on "Special Tokens: Purpose and Usage", not the slide before."""
    quote = cq.get("pooling_lecture")
    assert quote.where == "Special Tokens: Purpose and Usage"
    lines = lines_of(cq.LECTURE)
    assert not any(quote.text in "\n".join(lines[a:b]) for a, b in sections(cq.LECTURE, "BERT's Special Tokens"))
    assert not any(cq.get("adapters_0").text in "\n".join(lines_of(cq.TEXTBOOK)[a:b])
                   for a, b in sections(cq.TEXTBOOK, "20.14.2 LoRA: Low-Rank Adaptation"))


# ---- no course text in quotation marks outside the table ---------------------------------------------------
LABS = Path(__file__).resolve().parents[1] / "labs"
# The handout's own questions, shown as the workbook's questions (tests/test_part_b.py checks each verbatim)
QUESTIONS = {"part_b/questions.py"}
# The worked examples' input sentences, typed into the models (inputs, not claims the course makes)
EXAMPLE_INPUTS = {"The cat sat on the mat", "The [MASK] sat on the mat", "The cat sat on the ____",
                  "barked loudly at the mailman"}
MIN_CHARS = 20  # shorter “…” spans are words and names (“Washington”, “the”), which every document also has


def flat(text: str) -> str:
    return " ".join(text.split())


def test_no_lab_quotes_the_course_outside_the_table():
    """Every “…” span of 20 characters or more in a lab's strings that is the course's text must be (part of) a
    table entry, so that it is checked under its heading. This finds verbatim course text only: a paraphrase
    in quotation marks is not the documents' text, and needs a reader."""
    documents = flat(" ".join((cq.COURSE_DIR / f).read_text() for f in cq.FILES.values()))
    entries = [flat(q.text) for q in cq.QUOTES]
    outside = []
    for path in sorted(LABS.rglob("*.py")):
        name = path.relative_to(LABS).as_posix()
        if name == "core/ui/course_quotes.py" or name in QUESTIONS:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            for span in map(flat, re.findall(r"“([^”]+)”", node.value)):
                if (len(span) >= MIN_CHARS and span in documents and span not in EXAMPLE_INPUTS
                        and not HEADING.match(span) and not any(span in entry for entry in entries)):
                    outside.append((name, node.lineno, span))
    assert outside == []


def test_what_the_workbook_and_ask_the_class_quote_is_in_the_table():
    """The Part A & B workbook's exercise lines and Ask the class's ready questions marked verbatim are the table's
    entries (so the test above checks them), not copies of their own."""
    from labs.classroom import presets
    from labs.part_b import questions

    texts = {q.text for q in cq.QUOTES if q.document == cq.HANDOUT}
    assert all(line in texts for q in questions.QUESTIONS for line in q.quote)
    verbatim = [p for p in presets.PRESETS if "(verbatim)" in p.source]
    assert len(verbatim) == 6 and all(p.text in texts for p in verbatim)
