"""A lecture's plan as a file (labs/classroom/plan_formats.py): what a lecturer writes, exports and imports comes
back the same, and what Moodle reads and writes is understood as Moodle means it.

The oracles are independent of the code under test: Python's csv module and ElementTree for our own CSV and XML,
Moodle's structure as its XML format documents it, and for GIFT the examples of Moodle's "GIFT format"
documentation, quoted as printed (the PyPI parser pygiftparser does not import on this Python: its pinned
Markdown 3.0 needs pkg_resources, which setuptools no longer ships)."""

from __future__ import annotations

import csv
import io
import xml.etree.ElementTree as ET
from urllib.parse import parse_qs, urlsplit

import pytest

from labs.classroom import plan_formats, presets
from labs.classroom.access import check_link
from labs.core.errors import BadInput


def q(kind, text, model="", top_k=10, choices=(), correct="", link=""):
    return {"kind": kind, "text": text, "model": model, "top_k": top_k, "choices": list(choices),
            "correct": correct, "link": link}


EVERY_KIND = [
    q("fill_mask", "The cat sat on the [MASK], \"quoted\", with commas", model="distilbert-base-uncased", top_k=5,
      link="?tab=fill_mask&text=The+cat+sat+on+the+%5BMASK%5D"),
    q("next_token", "=SUM(A1:A9) is not a formula here", link="https://example.org/lab?tab=next_token&prompt=x"),
    q("next_token", "Ünïcödé: 日本語の文は ____", model="HuggingFaceTB/SmolLM2-135M", top_k=20),
    q("choice", "-5 or +5: which is it, “really”?", choices=["-5", "+5", "@home", "a, b; c"], correct="+5"),
    q("choice", "A poll with no right answer", choices=["yes", "no"]),
    q("number", "What is 2 × 3?", correct="6"),
    q("number", "A negative answer", correct="-2.5", link="/?tab=cost"),
    q("number", "An estimate with no right answer"),
    q("fill_mask", "Line one\nline two with a ____"),
]
# Every character GIFT gives a meaning to (Moodle's docs: "\character: Backslash escapes the special meaning of
# ~, =, #, {, }, and :"), and the backslash itself.
SPECIAL = [
    q("choice", "Which is {braced} = #1: a ~ or a \\?",
      choices=["~tilde", "=equals", "#hash", "{brace}", "a:b", "back\\slash"], correct="{brace}",
      link="?tab=fill_mask&text=x"),
    q("choice", "[MASK] starts with a bracket; %50% is not a weight", choices=["%50% off", "[plain] text"],
      correct="%50% off"),
    q("choice", "Poll: pick one", choices=["a = b", "c ~ d", "e # f"]),
    q("number", "LoRA r = 16 on a 768 × 768 weight: trainable parameters?", correct="24576"),
    q("number", "How sure are you, in %?"),
    q("number", "Below zero", correct="-40", link="https://example.org/x#y"),
]


LORA = "LoRA r = 16 on one 768 × 768 weight: trainable parameters?"  # as the Moodle exports below hold it


def lines_of(text: str) -> list[str]:
    return text.split("\n")


# ------------------------------------------------------------------ round trips


def test_csv_keeps_every_kind_exactly_and_a_spreadsheet_sees_text_not_formulas():
    text = plan_formats.write(EVERY_KIND, "csv")
    assert plan_formats.read(text, "csv") == EVERY_KIND
    assert plan_formats.read(text) == EVERY_KIND  # told by its content
    assert plan_formats.read(text.encode("utf-8")) == EVERY_KIND
    rows = list(csv.DictReader(io.StringIO(text, newline="")))  # the oracle: what a spreadsheet gets
    assert list(rows[0]) == ["kind", "text", "model", "top_k", "choices", "correct", "link"]
    assert rows[0]["text"] == EVERY_KIND[0]["text"] and rows[0]["top_k"] == "5"
    assert rows[0]["model"] == "distilbert-base-uncased"
    assert rows[1]["text"] == "'=SUM(A1:A9) is not a formula here"
    assert rows[3]["choices"] == "'-5 | +5 | @home | a, b; c" and rows[3]["correct"] == "'+5"
    assert rows[6]["correct"] == "'-2.5" and rows[6]["link"] == "/?tab=cost"
    assert rows[8]["text"] == "Line one\nline two with a ____"
    formulas = [cell for row in rows for cell in row.values() if cell.startswith(("=", "+", "-", "@"))]
    assert formulas == []


def test_csv_keeps_an_apostrophe_the_lecturer_typed():
    plan = [q("number", "'=1 typed with its apostrophe", correct="1"), q("next_token", "'quoted' words")]
    assert plan_formats.read(plan_formats.write(plan, "csv")) == plan


@pytest.mark.parametrize("fmt", ["gift", "xml"])
def test_moodle_formats_keep_choice_and_number_questions_with_gifts_special_characters(fmt):
    text = plan_formats.write(SPECIAL, fmt)
    assert plan_formats.read(text, fmt) == SPECIAL
    assert plan_formats.read(text) == SPECIAL
    assert plan_formats.guess(text) == fmt


def test_moodle_formats_write_a_number_plainly():
    plan = [q("number", "How many parameters?", correct="1,287")]
    assert "{#1287}" in plan_formats.write(plan, "gift")
    assert plan_formats.read(plan_formats.write(plan, "xml"))[0]["correct"] == "1287"


# ------------------------------------------------------------------ GIFT against Moodle's documentation


def test_gift_is_escaped_as_moodles_documentation_says():
    text = plan_formats.write(SPECIAL, "gift")
    assert lines_of(text)[2:4] == [
        "// lm-lab-link: ?tab=fill_mask&text=x",
        r"::Q1::Which is \{braced\} \= \#1\: a \~ or a \\?{~\~tilde ~\=equals ~\#hash =\{brace\} ~a\:b ~back\\slash}"]
    assert (r"::Q2::[moodle][MASK] starts with a bracket; %50% is not a weight"
            r"{=[moodle]%50% off ~[moodle][plain] text}") in text
    assert r"::Q3::Poll\: pick one{=a \= b ~%100%c \~ d ~%100%e \# f}" in text  # every option is right
    assert r"::Q4::LoRA r \= 16 on a 768 × 768 weight\: trainable parameters?{#24576}" in text
    assert r"::Q5::How sure are you, in %?{#*}" in text  # Moodle's "any answer"
    blocks = [b for b in text.split("\n\n") if b.strip()]
    assert len(blocks) == 1 + len(SPECIAL)  # the comment, then one question per blank-line separated block


# The examples of Moodle's GIFT documentation, as printed there.
MOODLE_DOCS_GIFT = """// multiple choice with specified feedback for right and wrong answers
::Q2:: What's between orange and green in the spectrum?
{ =yellow # right; good! ~red # wrong, it's yellow ~blue # wrong, it's yellow }

Who's buried in Grant's tomb?{~Grant ~Jefferson =no one}

Grant is {~buried =entombed ~living} in Grant's tomb.

The American holiday of Thanksgiving is celebrated on the {
    ~second
    ~third
    =fourth
} Thursday of November.

Difficult question.{~wrong answer ~%50%half credit answer =full credit answer}

When was Ulysses S. Grant born? {#
    =1822:0      # Correct! Full credit.
    =%50%1822:2  # He was born in 1822. Half credit for being close.
}

Which answer equals 5? {
     ~ \\= 2 + 2
     = \\= 2 + 3
     ~ \\= 2 + 4
}
"""


def test_reads_the_examples_of_moodles_gift_documentation():
    read = plan_formats.read(MOODLE_DOCS_GIFT)
    assert [(x["kind"], x["text"], x["choices"], x["correct"]) for x in read] == [
        ("choice", "What's between orange and green in the spectrum?", ["yellow", "red", "blue"], "yellow"),
        ("choice", "Who's buried in Grant's tomb?", ["Grant", "Jefferson", "no one"], "no one"),
        ("choice", "Grant is _____ in Grant's tomb.", ["buried", "entombed", "living"], "entombed"),
        ("choice", "The American holiday of Thanksgiving is celebrated on the _____ Thursday of November.",
         ["second", "third", "fourth"], "fourth"),
        ("choice", "Difficult question.", ["wrong answer", "half credit answer", "full credit answer"],
         "full credit answer"),  # the half credit is left out
        ("number", "When was Ulysses S. Grant born?", [], "1822"),
        ("choice", "Which answer equals 5?", ["= 2 + 2", "= 2 + 3", "= 2 + 4"], "= 2 + 3"),
    ]


@pytest.mark.parametrize("question, says", [
    ("::Q1:: 1+1=2 {T}", "true/false"),
    ("::Q3:: Two plus {=two =2} equals four.", "short-answer"),
    ("::Q4:: Which animal eats which food? { =cat -> cat food =dog -> dog food }", "matching"),
    ("::Q5:: What is a number from 1 to 5? {#3:2}", "margin of ±2"),
    ("::Q6:: What is a number from 1 to 5? {#1..5}", "range"),
    ("When was Ulysses S. Grant born?{#1822:5}", "margin of ±5"),
    ("What two people are entombed in Grant's tomb? {\n   ~%-100%No one\n   ~%50%Grant\n   ~%50%Grant's wife\n"
     "   ~%-100%Grant's father\n}", "multiple-answer"),
    ("A description of what follows, with no answers.", "description"),
])
def test_gift_questions_lm_lab_cannot_ask_are_refused_with_their_line(question, says):
    text = "// a good question first\n::A:: Two options{=a ~b}\n\n\n" + question + "\n"
    with pytest.raises(BadInput, match=r"^Line 5\b") as refused:
        plan_formats.read(text, "gift")
    assert says in str(refused.value)


MOODLE_GIFT_EXPORT = """// question: 0  name: Switch category to $course$/top/Default for LM 101
$CATEGORY: $course$/top/Default for LM 101


// question: 12  name: Capital
::Capital::[html]<p>What is the <b>capital</b> of France&nbsp;?</p>{
\t=<p>Paris</p>
\t~<p>Lyon</p>#<p>No, that is a city of its own.</p>
\t~<p>Marseille</p>
}


// question: 13  name: LoRA
::LoRA::[moodle]LoRA r \\= 16 on one 768 × 768 weight\\: trainable parameters?{#
\t=%100%24576:0#
}


"""


def test_reads_a_gift_file_as_moodle_exports_it():  # HTML loses its tags, &nbsp; is a space
    assert plan_formats.read(MOODLE_GIFT_EXPORT.encode("utf-8")) == [
        q("choice", "What is the capital of France ?", choices=["Paris", "Lyon", "Marseille"], correct="Paris"),
        q("number", LORA, correct="24576")]


# ------------------------------------------------------------------ Moodle XML


def test_xml_has_moodles_structure():
    quiz = ET.fromstring(plan_formats.write(SPECIAL, "xml"))
    assert quiz.tag == "quiz"
    questions = quiz.findall("question")
    assert [x.get("type") for x in questions] == ["multichoice"] * 3 + ["numerical"] * 3
    assert [x.findtext("name/text") for x in questions] == ["Q1", "Q2", "Q3", "Q4", "Q5", "Q6"]
    first = questions[0]
    assert first.findtext("questiontext/text") == SPECIAL[0]["text"]
    assert first.findtext("single") == "true"
    assert [(a.findtext("text"), a.get("fraction")) for a in first.findall("answer")] == [
        ("~tilde", "0"), ("=equals", "0"), ("#hash", "0"), ("{brace}", "100"), ("a:b", "0"), ("back\\slash", "0")]
    assert first.find("lmlab").get("link") == "?tab=fill_mask&text=x"
    assert {a.get("fraction") for a in questions[2].findall("answer")} == {"100"}  # a poll: every option is right
    lora = questions[3].find("answer")
    assert (lora.get("fraction"), lora.findtext("text"), lora.findtext("tolerance")) == ("100", "24576", "0")
    assert questions[4].find("answer").findtext("text") == "*"


MOODLE_XML_EXPORT = """<?xml version="1.0" encoding="UTF-8"?>
<quiz>
<!-- question: 0  -->
  <question type="category">
    <category>
      <text>$course$/top/Default for LM 101</text>
    </category>
  </question>

<!-- question: 12  -->
  <question type="multichoice">
    <name>
      <text>Capital</text>
    </name>
    <questiontext format="html">
      <text><![CDATA[<p>What is the <b>capital</b> of France?</p>]]></text>
    </questiontext>
    <generalfeedback format="html">
      <text></text>
    </generalfeedback>
    <defaultgrade>1.0000000</defaultgrade>
    <penalty>0.3333333</penalty>
    <hidden>0</hidden>
    <idnumber></idnumber>
    <single>true</single>
    <shuffleanswers>true</shuffleanswers>
    <answernumbering>abc</answernumbering>
    <answer fraction="0" format="html">
      <text><![CDATA[<p>Lyon</p>]]></text>
      <feedback format="html">
        <text></text>
      </feedback>
    </answer>
    <answer fraction="100" format="html">
      <text><![CDATA[<p>Paris &amp; nowhere else</p>]]></text>
      <feedback format="html">
        <text>Right.</text>
      </feedback>
    </answer>
  </question>

<!-- question: 13  -->
  <question type="numerical">
    <name>
      <text>LoRA</text>
    </name>
    <questiontext format="moodle_auto_format">
      <text>LoRA r = 16 on one 768 × 768 weight: trainable parameters?</text>
    </questiontext>
    <answer fraction="100" format="moodle_auto_format">
      <text>24576</text>
      <feedback format="html">
        <text></text>
      </feedback>
      <tolerance>0</tolerance>
    </answer>
    <unitgradingtype>0</unitgradingtype>
  </question>

</quiz>
"""


def test_reads_an_xml_file_as_moodle_exports_it():
    assert plan_formats.read(MOODLE_XML_EXPORT) == [
        q("choice", "What is the capital of France?", choices=["Lyon", "Paris & nowhere else"],
          correct="Paris & nowhere else"),
        q("number", LORA, correct="24576")]


# ------------------------------------------------------------------ what cannot be written


@pytest.mark.parametrize("fmt", ["gift", "xml"])
def test_word_questions_are_refused_for_moodle_naming_the_question_and_csv(fmt):
    plan = [q("choice", "Ok?", choices=["yes", "no"]), q("next_token", "Once upon a")]
    with pytest.raises(BadInput, match=r"^Question 2 is a next-word question.*CSV"):
        plan_formats.write(plan, fmt)


def test_an_option_with_a_bar_is_refused_for_csv_only():
    plan = [q("choice", "Which?", choices=["a | b", "c"], correct="c")]
    with pytest.raises(BadInput, match=r"^Question 1: an option contains “\|”"):
        plan_formats.write(plan, "csv")
    assert plan_formats.read(plan_formats.write(plan, "xml")) == plan


def test_a_bad_question_is_refused_when_writing_too():
    with pytest.raises(BadInput, match=r"^Question 2: .*2 to 6 options"):
        plan_formats.write([EVERY_KIND[0], q("choice", "One option?", choices=["only"])], "csv")
    with pytest.raises(BadInput, match=r"^Question 1: .*Pick one of the options"):
        plan_formats.write([q("choice", "Which?", choices=["a", "b"], correct="z")], "gift")


# ------------------------------------------------------------------ malformed files


HEADER = "kind,text,model,top_k,choices,correct,link\n"


@pytest.mark.parametrize("text, fmt, line, says", [
    ("text,kind\nfill_mask,The [MASK].\n", "csv", 2, "kind"),  # columns swapped: the kind cell holds a sentence
    ("kind,question\nfill_mask,The [MASK].\n", "csv", 1, "header"),
    (HEADER + "fill_mask,The [MASK].\nessay,Write.\n", "csv", 3, "essay"),
    (HEADER + "fill_mask,The [MASK].\n\n\"next_token,\"Once upon\n", "csv", 4, "not valid CSV"),
    (HEADER + "fill_mask,The [MASK].,,10,,,,extra\n", "csv", 2, "more cells"),
    (HEADER + "choice,One option?,,,only,,\n", "csv", 2, "2 to 6 options"),
    (HEADER + "fill_mask,The [MASK].,,50,,,\n", "csv", 2, "Top-k"),
    (HEADER + "fill_mask,The [MASK].,,,,,javascript:alert(1)\n", "csv", 2, "link"),
    (HEADER + "number,How many?,,,,many,\n", "csv", 2, "not a number"),
    ("::A::Fine{=a ~b}\n\n// a comment\n::B::Unbalanced {=a ~b\n", "gift", 4, "braces"),
    ("::A::Fine{=a ~b}\n\n::B::Two {=a ~b} blocks {=c ~d}\n", "gift", 3, "braces"),
    ("::A::Fine{=a ~b}\n\n::B::Closed} before {=a ~b\n", "gift", 3, "braces"),
    ("<quiz>\n  <question type=\"multichoice\">\n    <name><text>A</text>\n  </question>\n</quiz>\n", "xml", 4,
     "not valid XML"),
    ("<quiz>\n  <question type=\"category\"/>\n  <question type=\"truefalse\">\n  </question>\n</quiz>", "xml", 3,
     "truefalse"),
    ("<?xml version=\"1.0\"?>\n<!DOCTYPE quiz [<!ENTITY a \"aaaaaaaaaa\">]>\n<quiz>&a;</quiz>", "xml", 2, "DOCTYPE"),
    ("<html>\n<body/></html>", "xml", 1, "not a Moodle XML quiz"),
    ("<quiz>\n<question type=\"multichoice\"><questiontext><text>Q?</text></questiontext>\n"
     "<answer fraction=\"fifty\"><text>a</text></answer></question></quiz>", "xml", 2, "not a number"),
])
def test_a_malformed_file_is_refused_naming_its_line(text, fmt, line, says):
    with pytest.raises(BadInput, match=rf"^Line {line}\b") as refused:
        plan_formats.read(text, fmt)
    assert says in str(refused.value)


def test_bytes_that_are_not_utf8_are_refused_naming_their_line():
    latin1 = (HEADER + "fill_mask,Le café est [MASK].\n").encode("latin-1")
    with pytest.raises(BadInput, match=r"^Line 2: The file is not UTF-8 text"):
        plan_formats.read(latin1)


@pytest.mark.parametrize("text, says", [
    ("", "empty"),
    (" \n\t\n", "empty"),
    (b"\xef\xbb\xbf", "empty"),
    (HEADER, "no questions"),
    ("// only a comment\n\n$CATEGORY: $course$/top\n", "no questions"),
    ("<quiz>\n</quiz>", "no questions"),
    ("x" * 1_000_001, "at most 1,000,000"),
    (b"x" * 1_000_001, "at most 1,000,000"),
    (HEADER + "next_token,Hello\n" * 201, "at most 200"),
    (12, "must be text"),
])
def test_an_empty_huge_or_wrong_file_is_refused(text, says):
    with pytest.raises(BadInput, match=says):
        plan_formats.read(text)


def test_an_unknown_format_is_refused():
    with pytest.raises(BadInput, match="csv, gift, xml"):
        plan_formats.read(HEADER + "next_token,Hello\n", "docx")
    with pytest.raises(BadInput, match="csv, gift, xml"):
        plan_formats.write(EVERY_KIND, "docx")


# ------------------------------------------------------------------ check


def refuse(text):
    def check(question):
        if question["text"] == text:
            raise BadInput("This model cannot read that question.")
    return check


def test_check_errors_name_the_line_the_question_starts_on():
    csv_text = HEADER + "next_token,First\n\"fill_mask\",\"Two lines:\nthe [MASK].\"\nnext_token,Third\n"
    with pytest.raises(BadInput, match=r"^Line 3 \(question 2\): This model cannot read that question\.$"):
        plan_formats.read(csv_text, check=refuse("Two lines:\nthe [MASK]."))
    with pytest.raises(BadInput, match=r"^Line 5 \(question 3\): This model"):
        plan_formats.read(csv_text, check=refuse("Third"))
    gift = plan_formats.write(SPECIAL, "gift")
    q3 = lines_of(gift).index(r"::Q3::Poll\: pick one{=a \= b ~%100%c \~ d ~%100%e \# f}") + 1
    with pytest.raises(BadInput, match=rf"^Line {q3} \(question 3\): This model"):
        plan_formats.read(gift, check=refuse("Poll: pick one"))
    xml = plan_formats.write(SPECIAL, "xml")
    q2 = [n for n, line in enumerate(lines_of(xml), 1) if line.strip().startswith("<question ")][1]
    with pytest.raises(BadInput, match=rf"^Line {q2} \(question 2\): This model"):
        plan_formats.read(xml, check=refuse(SPECIAL[1]["text"]))
    moodle = lines_of(MOODLE_XML_EXPORT).index('  <question type="numerical">') + 1
    with pytest.raises(BadInput, match=rf"^Line {moodle} \(question 2\)"):
        plan_formats.read(MOODLE_XML_EXPORT, check=refuse(LORA))


def test_check_sees_every_question_and_what_it_returns_is_kept():
    seen = []

    def check(question):
        seen.append(question["text"])
        return {**question, "model": "checked"}

    read = plan_formats.read(plan_formats.write(EVERY_KIND, "csv"), check=check)
    assert seen == [x["text"] for x in EVERY_KIND] and {x["model"] for x in read} == {"checked"}


# ------------------------------------------------------------------ the handout's set


def test_the_handouts_set_is_the_presets_and_survives_csv():
    plan = plan_formats.handout_part_a()
    assert [(x["kind"], x["text"], tuple(x["choices"]), x["correct"]) for x in plan] == [
        (p.kind, p.text, p.choices, p.correct) for p in presets.PRESETS]
    assert plan_formats.read(plan_formats.write(plan, "csv")) == plan
    moodle = [x for x in plan if x["kind"] in ("choice", "number")]
    assert plan_formats.read(plan_formats.write(moodle, "gift")) == moodle
    for question in plan:
        assert check_link(question["link"]) == question["link"]
        if question["kind"] in ("fill_mask", "next_token"):  # the lab's own link, showing this text
            params = parse_qs(urlsplit(question["link"]).query)
            assert params["tab"] == [question["kind"]]
            assert params["text" if question["kind"] == "fill_mask" else "prompt"] == [question["text"]]
        else:
            assert question["link"] == ""
