"""A lecture's plan as a file, so that the questions a lecturer prepares move between LM Lab, a spreadsheet (CSV:
every kind) and a course's Moodle (GIFT and Moodle XML: the choice and number questions a Moodle quiz can hold).
A file is untrusted: one bad question refuses the whole file, naming its line. XML is read by defusedxml (no
DOCTYPE, no entities). What Moodle writes is read too: categories, comments, HTML text. Decided here:
- GIFT and XML cannot hold a word question (fill_mask, next_token): write() refuses it and says to use CSV.
- A choice with no right answer (a poll) has every option right (GIFT `{=A ~%100%B}`, XML fraction 100 on each):
  any vote gets the mark in Moodle, and it reads back as a poll. Part credit is left out; multiple-answer refused.
- A number with no right answer is Moodle's "any answer" (GIFT `{#*}`, XML `*`); a right one is written plainly
  ("1,287" as 1287) with tolerance 0. A margin or range is refused (LM Lab checks exactly); part credit is left out.
- The link goes where Moodle ignores it: a GIFT comment `// lm-lab-link: …` on the line before the question, an
  XML `<lmlab link="…"/>` in the question. Choice and number questions have no model and the default top-k, so
  nothing else needs a place. Questions are named Q1, Q2… (Moodle's order).
- CSV: the header kind,text,model,top_k,choices,correct,link (any order, kind and text needed; ";" is read too),
  options joined by " | " (an option with "|" is refused on writing), and a cell a spreadsheet would run as a
  formula (= + - @ first) written after an apostrophe, which reading takes off."""

from __future__ import annotations

import csv
import html
import io
import re
import unicodedata
import xml.etree.ElementTree as ET

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import DefusedXMLParser

from labs.classroom import answers
from labs.classroom.access import check_link
from labs.classroom.presets import PRESETS
from labs.core.errors import BadInput, check_int, check_text
from labs.core.ui import links

FORMATS = ("csv", "gift", "xml")
FILENAME_SUFFIX = {"csv": ".csv", "gift": ".gift.txt", "xml": ".xml"}
NAMES = {"csv": "CSV", "gift": "GIFT", "xml": "Moodle XML"}
KINDS = ("fill_mask", "next_token", "choice", "number")
WORD_KINDS = {"fill_mask": "fill-in-the-blank", "next_token": "next-word"}
LINK_INPUT = {"fill_mask": "text", "next_token": "prompt"}  # the input a lab's ?tab= link fills with the text
CSV_COLUMNS = ("kind", "text", "model", "top_k", "choices", "correct", "link")
DEFAULT_TOP_K, MAX_BYTES, MAX_QUESTIONS = 10, 1_000_000, 200
MAX_TEXT_CHARS = 2000  # what a file may hold; /class_ask's own, shorter limit is the check's to apply
FORMULA = re.compile(r"^'*[=+\-@\t\r]")  # what a spreadsheet runs as a formula, after apostrophes written before it
GIFT_SPECIAL, GIFT_LINK = "\\~=#{}:", "// lm-lab-link:"
GIFT_WEIGHT = re.compile(r"^%(-?\d+(?:\.\d*)?)%")
GIFT_FORMAT = re.compile(r"^\[(html|moodle|plain|markdown)\]")
# While a GIFT question is taken apart, an escaped character stands in for itself as a private-use character.
GIFT_HIDDEN = {c: chr(0xE000 + i) for i, c in enumerate(":#={}~\n")}
GIFT_SHOWN = str.maketrans({v: k for k, v in GIFT_HIDDEN.items()})
HTML_BREAK = re.compile(r"<(?:br|p|div|li|tr|h\d)\b[^>]*>", re.IGNORECASE)  # a tag that separates words
HTML_OTHER = re.compile(r"<!--.*?-->|<[^>]*>", re.DOTALL)


def _question(fields) -> dict:
    """A plan's question, every field checked for what a file can say (a model is only named here)."""
    if not isinstance(fields, dict):
        raise BadInput("Each question must be an object with kind, text and its settings.")
    kind, text, model, top_k, choices, correct, link = (fields.get(k) for k in CSV_COLUMNS)
    if kind not in KINDS:
        raise BadInput(f"The kind “{str(kind)[:30]}” is not one of {', '.join(KINDS)}.")
    text = check_text(text.replace("\r\n", "\n") if isinstance(text, str) else text, "Paris is the [MASK] of France.",
                      max_chars=MAX_TEXT_CHARS, what="question")
    if any(unicodedata.category(c) == "Cc" and c not in "\n\t" for c in text):
        raise BadInput("The question contains a control character; type it again as plain text.")
    word = kind in WORD_KINDS
    model = check_text(model or "", "bert-base-uncased", max_chars=200, allow_empty=True, what="model") if word else ""
    top_k = check_int(DEFAULT_TOP_K if top_k in (None, "") else top_k, "Top-k", 1, 20) if word else DEFAULT_TOP_K
    if isinstance(choices, str):  # a CSV cell: "A | B | C", or one option per line
        choices = [c for c in re.split(r"\||\r?\n", choices) if c.strip()]
    if choices and kind != "choice":
        raise BadInput(f"Only a choice question has options; this is a {kind} question.")
    options = answers.options_of(list(choices or [])) if kind == "choice" else []
    correct = correct.strip() if isinstance(correct, str) else correct
    if correct not in (None, ""):
        correct = (answers.choice(correct, options)[0] if kind == "choice" else answers.number(correct)[0]
                   if kind == "number" else answers.one_line(correct, "right answer"))
    return {"kind": kind, "text": text, "model": model, "top_k": top_k, "choices": options,
            "correct": correct or "", "link": check_link(link)}


def write(questions: list[dict], fmt: str) -> str:
    """The plan as a file's text in `fmt` (csv, gift or xml); BadInput naming the question that cannot be written."""
    if fmt not in FORMATS:
        raise BadInput(f"A plan is written as one of {', '.join(FORMATS)}.")
    if not isinstance(questions, (list, tuple)) or len(questions) > MAX_QUESTIONS:
        raise BadInput(f"A plan is a list of at most {MAX_QUESTIONS} questions.")
    checked = []
    for number, question in enumerate(questions, 1):
        try:
            checked.append(_question(question))
        except BadInput as exc:
            raise BadInput(f"Question {number}: {exc}") from None
        if fmt != "csv" and checked[-1]["kind"] in WORD_KINDS:
            raise BadInput(f"Question {number} is a {WORD_KINDS[checked[-1]['kind']]} question, which {NAMES[fmt]} "
                           "cannot hold (Moodle has no such question). Export the plan as CSV, which keeps every kind.")
        if fmt == "csv" and any("|" in option for option in checked[-1]["choices"]):
            raise BadInput(f"Question {number}: an option contains “|”, which a CSV file puts between options.")
    return {"csv": _write_csv, "gift": _write_gift, "xml": _write_xml}[fmt](checked)


def read(text: str | bytes, fmt: str | None = None, check=None) -> list[dict]:
    """The questions of a file (fmt csv, gift, xml, or None: told by its content), all or nothing. `check(question)`
    may raise BadInput (told with the line the question starts on); what it returns, if not None, replaces it."""
    text = _decoded(text)
    fmt = fmt or guess(text)
    if fmt not in FORMATS:
        raise BadInput(f"A plan's file is one of {', '.join(FORMATS)}.")
    found = {"csv": _read_csv, "gift": _read_gift, "xml": _read_xml}[fmt](text)
    if not found:
        raise BadInput(f"The file has no questions that LM Lab can read (read as {NAMES[fmt]}).")
    if len(found) > MAX_QUESTIONS:
        raise BadInput(f"The file has {len(found)} questions; a plan holds at most {MAX_QUESTIONS}.")
    out = []
    for number, (line, fields) in enumerate(found, 1):
        try:
            question = _question(fields)
            kept = check(question) if check is not None else None
        except BadInput as exc:
            raise BadInput(f"Line {line} (question {number}): {exc}") from None
        out.append(question if kept is None else kept)
    return out


def guess(text: str) -> str:
    """The format a file's text is in: XML starts with "<", a CSV with its header, GIFT has {…} or ::names::."""
    body = text.lstrip("\ufeff \t\r\n")
    if body.startswith("<"):
        return "xml"
    gift = re.search(r"^\s*(::|\$CATEGORY:|//)|\{[^{}]*\}", body, re.M)
    return "gift" if gift and not re.match(r"kind\s*[,;]", body, re.IGNORECASE) else "csv"


def _decoded(data) -> str:
    if not isinstance(data, (str, bytes, bytearray)):
        raise BadInput("A plan's file must be text (CSV, GIFT or Moodle XML).")
    size = len(data) if not isinstance(data, str) else len(data.encode("utf-8", "surrogatepass"))
    if size > MAX_BYTES:
        raise BadInput(f"The file is {size:,} bytes; a plan's file is at most {MAX_BYTES:,} (1 MB).")
    try:
        data = data if isinstance(data, str) else bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        line = bytes(data[:exc.start]).count(b"\n") + 1
        raise BadInput(f"Line {line}: The file is not UTF-8 text; save it as UTF-8 (Excel: CSV UTF-8).") from None
    if not (data := data.removeprefix("\ufeff")).strip():
        raise BadInput("The file is empty.")
    return data



def _write_csv(questions: list[dict]) -> str:
    out, rows = io.StringIO(), [{**q, "top_k": str(q["top_k"]), "choices": " | ".join(q["choices"])} for q in questions]
    csv.writer(out).writerows([CSV_COLUMNS] + [["'" + row[c] if FORMULA.match(row[c]) else row[c]  # shown as text
                                                 for c in CSV_COLUMNS] for row in rows])
    return out.getvalue()


def _read_csv(text: str) -> list[tuple[int, dict]]:
    first = text.split("\n", 1)[0]
    rows = csv.reader(io.StringIO(text, newline=""), delimiter=";" if first.count(";") > first.count(",") else ",",
                      strict=True)
    found, header, end = [], None, 0
    while True:
        start = end + 1  # the line this row starts on (a quoted cell may hold line breaks)
        try:
            cells = [c[1:] if c.startswith("'") and FORMULA.match(c) else c for c in map(str.strip, next(rows))]
        except StopIteration:
            return found
        except csv.Error as exc:
            raise BadInput(f"Line {start}: This is not valid CSV ({exc}); a cell with a comma, a quote or a line "
                           "break is written in double quotes, a quote inside it doubled.") from None
        end = rows.line_num
        if not any(cells):
            continue
        if header is None:
            header = [cell.lower() for cell in cells]
            if set(header) - set(CSV_COLUMNS) or len(set(header)) < len(header) or not {"kind", "text"} <= set(header):
                raise BadInput(f"Line {start}: The first line must be the header {','.join(CSV_COLUMNS)} (kind and "
                               f"text are needed, the others may be left out), not “{','.join(cells)[:80]}”.")
        elif len(cells) > len(header):
            raise BadInput(f"Line {start}: This row has more cells than the header; quote a cell with a comma.")
        else:
            found.append((start, dict(zip(header, cells))))



def _gift_escaped(text: str) -> str:
    """Text as GIFT writes it (as Moodle's own export does): \\ ~ = # { } : escaped with a backslash, a line break
    as \\n; text that starts with "[" or "%" is marked [moodle] so that it is not taken for a format or a weight."""
    escaped = "".join("\\" + c if c in GIFT_SPECIAL else "\\n" if c == "\n" else c for c in text if c != "\r")
    return "[moodle]" + escaped if text.startswith(("[", "%")) else escaped


def _write_gift(questions: list[dict]) -> str:
    out = [f"// LM Lab: a lecture's {len(questions)} questions, in Moodle's GIFT format.", ""]
    for number, q in enumerate(questions, 1):
        if q["kind"] == "choice":
            marks = (["=" if o == q["correct"] else "~" for o in q["choices"]] if q["correct"]
                     else ["="] + ["~%100%"] * (len(q["choices"]) - 1))  # a poll: every option is right
            block = " ".join(mark + _gift_escaped(option) for mark, option in zip(marks, q["choices"]))
        else:
            block = "#" + (_plain_number(q["correct"]) if q["correct"] else "*")
        out += [f"{GIFT_LINK} {q['link']}"] if q["link"] else []
        out += [f"::Q{number}::{_gift_escaped(q['text'])}{{{block}}}", ""]
    return "\n".join(out)


def _plain_number(correct: str) -> str:
    """A right number as Moodle reads one: as typed when plain ("24576", "0.5"), else its value ("1,287" -> 1287)."""
    return correct if answers.NUMBER.match(correct) else answers.number(correct)[1]


def _read_gift(text: str) -> list[tuple[int, dict]]:
    """Questions are separated by blank lines; comment lines (//) are left out, an lm-lab-link comment kept."""
    found, lines, start, link = [], [], 0, ""
    for number, line in enumerate(re.split(r"\r\n|\r|\n", text) + [""], 1):
        stripped = line.strip()
        if stripped.startswith(GIFT_LINK):
            link = stripped[len(GIFT_LINK):].strip()
        elif stripped and not stripped.startswith("//"):
            start = start or number
            lines.append(line)
        elif not stripped:
            try:
                fields = _gift_question("\n".join(lines).strip()) if lines else None
            except BadInput as exc:
                raise BadInput(f"Line {start}: {exc}") from None
            found += [(start, {**fields, "link": link})] if fields else []
            lines, start, link = [], 0, ""
    return found


def _gift_text(raw: str, fmt: str = "moodle") -> tuple[str, str]:
    """A piece of GIFT as plain text, and its format: [html] text loses its tags."""
    marked = GIFT_FORMAT.match(raw.strip())
    fmt, raw = (marked[1], raw.strip()[marked.end():]) if marked else (fmt, raw)
    return _plain(raw.translate(GIFT_SHOWN), fmt), fmt


def _gift_parts(block: str, separator: str, weight: float) -> list[tuple[float, str]]:
    """A GIFT answer block's answers, each with its weight (%50% before it; = is right; else `weight`)."""
    parts = [part.strip() for part in block.split(separator)]
    parts = parts[1:] if parts and not parts[0] else parts
    out = [(1.0, p[1:]) if p.startswith("=") else (float(m[1]) / 100, p[m.end():]) if m else (weight, p)
           for p, m in zip(parts, map(GIFT_WEIGHT.match, parts))]
    return [(w, part.split("#", 1)[0]) for w, part in out]  # what follows # is feedback


def _gift_question(body: str) -> dict | None:
    """One GIFT question's fields (None for a $CATEGORY line), read as Moodle's qformat_gift reads it."""
    body = re.sub(r"\\([\\:#={}~n])", lambda m: "\\" if m[1] == "\\" else GIFT_HIDDEN["\n" if m[1] == "n" else m[1]],
                  body)
    if body.startswith("$CATEGORY:"):
        return None
    if body.startswith("::"):
        end = body.find("::", 2)
        body = body[end + 2:].strip() if end >= 0 else body[2:]
    start, finish = body.find("{"), body.find("}")
    if start < 0 and finish < 0:
        raise BadInput("This is a Moodle description (no answers in { }); LM Lab imports choice and number questions.")
    if start < 0 or finish < start or "{" in body[start + 1:finish] or re.search("[{}]", body[finish + 1:]):
        raise BadInput("Its braces { } do not match: the answers go in one {…}; a brace in the text is \\{ or \\}.")
    block = body[start + 1:finish].strip()
    block = block[:block.rfind("####")].strip() if "####" in block else block  # general feedback
    tail = body[finish + 1:]
    text, fmt = _gift_text(body[:start] + ("_____" + tail if tail.strip() else ""))  # Moodle's "missing word"
    if block.startswith("#"):  # numerical: value:margin answers; after ~ comes feedback for any other answer
        numbers = [(w, *part.translate(GIFT_SHOWN).partition(":")[::2])
                   for w, part in _gift_parts(block[1:].split("~", 1)[0], "=", 1.0)]
        return {"kind": "number", "text": text, "correct": _number_of(numbers)}
    if "~" in block:
        options = [(w, _gift_text(part, fmt)[0]) for w, part in _gift_parts(block.replace("=", "~="), "~", 0.0)]
        return {"kind": "choice", "text": text, **_choice_of(options)}
    raise BadInput("This is a Moodle true/false, short-answer, matching or essay question; LM Lab imports "
                   "multiple-choice and numerical questions from GIFT (a CSV file holds the word questions).")



def _choice_of(options: list[tuple[float, str]]) -> dict:
    """Moodle's weighted options: one right at 100 % (part credit is left out), or a poll (all right, or none)."""
    right = [option for weight, option in options if weight >= 0.999]
    one = len(right) == 1 < len(options)
    if one or len(right) == len(options) or all(weight <= 0 for weight, _ in options):
        return {"choices": [o for _, o in options], "correct": right[0] if one else ""}
    raise BadInput("Several options are (partly) right: a Moodle multiple-answer question. LM Lab's choice has one "
                   "right option, or none (a poll); mark one with = (in XML: fraction 100).")


def _number_of(numbers: list[tuple[float, str, str]]) -> str:
    """The right number of Moodle's answers (weight, value, margin): the one at 100 %; "" when only * ("any
    answer") is. Part-credit answers are left out; a range ("1..5") or a margin is refused."""
    right = [(value.strip(), float(answers.number(margin.strip() or "0")[1])) for weight, value, margin in numbers
             if weight >= 0.999 and value.strip() != "*"]
    if any(".." in value for value, _ in right):
        raise BadInput("The right number is a range; LM Lab checks a number exactly. Give one number.")
    if len(right) > 1:
        raise BadInput("Several numbers are right; LM Lab checks one right number. Keep one at 100 %.")
    if right and right[0][1] != 0:
        raise BadInput(f"The right number has a margin of ±{right[0][1]:g}; LM Lab checks it exactly: set it to 0.")
    return right[0][0] if right else ""


def _plain(text: str, fmt: str) -> str:
    """Moodle's text as LM Lab shows it: HTML (format html) as one line of plain text, without its tags."""
    return " ".join(html.unescape(HTML_OTHER.sub("", HTML_BREAK.sub(" ", text))).split()) if fmt == "html" else \
        text.strip()



def _text_element(parent, tag: str, text: str, **attrs) -> ET.Element:
    element = ET.SubElement(parent, tag, attrs)
    ET.SubElement(element, "text").text = text
    return element


def _write_xml(questions: list[dict]) -> str:
    quiz = ET.Element("quiz")
    for number, q in enumerate(questions, 1):
        question = ET.SubElement(quiz, "question", type="multichoice" if q["kind"] == "choice" else "numerical")
        _text_element(question, "name", f"Q{number}")
        _text_element(question, "questiontext", q["text"], format="moodle_auto_format")
        if q["link"]:
            ET.SubElement(question, "lmlab", link=q["link"])
        if q["kind"] == "choice":
            for tag, value in (("single", "true"), ("shuffleanswers", "false"), ("answernumbering", "ABCD")):
                ET.SubElement(question, tag).text = value
            for option in q["choices"]:
                right = option == q["correct"] or not q["correct"]  # a poll: every option is right
                _text_element(question, "answer", option, fraction="100" if right else "0", format="moodle_auto_format")
        else:
            answer = _text_element(question, "answer", _plain_number(q["correct"]) if q["correct"] else "*",
                                   fraction="100", format="moodle_auto_format")
            ET.SubElement(answer, "tolerance").text = "0"
    ET.indent(quiz)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(quiz, encoding="unicode") + "\n"


class _LineBuilder(ET.TreeBuilder):
    """A tree builder that notes the line each element starts on (expat's), for messages that name it."""

    def start(self, tag, attrs):
        element = super().start(tag, attrs)
        self.lines[element] = self.parser.parser.CurrentLineNumber
        return element


def _read_xml(text: str) -> list[tuple[int, dict]]:
    builder = _LineBuilder()
    parser, builder.lines = DefusedXMLParser(target=builder, forbid_dtd=True), {}
    builder.parser = parser
    try:
        parser.feed(text)
        quiz = parser.close()
    except ET.ParseError as exc:
        raise BadInput(f"Line {exc.position[0]}: This is not valid XML ({str(exc).rsplit(': line', 1)[0]}).") from None
    except DefusedXmlException:
        raise BadInput(f"Line {parser.parser.CurrentLineNumber}: The file declares a DOCTYPE or entities, which LM "
                       "Lab does not read (for safety); Moodle XML has none.") from None
    if quiz.tag != "quiz":
        raise BadInput(f"Line {builder.lines[quiz]}: This is not a Moodle XML quiz (it starts with <{quiz.tag[:30]}>).")
    found = []
    for element in quiz:
        try:
            fields = _xml_question(element) if element.tag == "question" else None
        except BadInput as exc:
            raise BadInput(f"Line {builder.lines[element]}: {exc}") from None
        found += [(builder.lines[element], fields)] if fields else []
    return found


def _xml_text(element, fmt: str = "moodle_auto_format") -> tuple[str, str]:
    fmt = element.get("format", fmt) if element is not None else fmt
    text = element.findtext("text") if element is not None else ""
    text = (element.text or "") if text is None else text  # an answer's text outside <text>: Moodle's old form
    return _plain(text, fmt), fmt


def _xml_question(question) -> dict | None:
    qtype = question.get("type", "")
    if qtype == "category":
        return None
    if qtype not in ("multichoice", "numerical"):
        raise BadInput(f"This is a Moodle “{qtype[:30]}” question; LM Lab imports multichoice and numerical "
                       "questions from Moodle XML (a CSV file holds the word questions).")
    text, fmt = _xml_text(question.find("questiontext"))
    link = question.find("lmlab")
    fields = {"text": text, "link": link.get("link", "") if link is not None else ""}
    answers_ = [(float(answers.number(a.get("fraction", "0"))[1]) / 100, a) for a in question.findall("answer")]
    if qtype == "multichoice":
        return {"kind": "choice", **fields, **_choice_of([(w, _xml_text(a, fmt)[0]) for w, a in answers_])}
    numbers = [(w, _xml_text(a, fmt)[0], a.findtext("tolerance") or "") for w, a in answers_]
    return {"kind": "number", **fields, "correct": _number_of(numbers)}


def handout_part_a() -> list[dict]:
    """The handout's questions (labs/classroom/presets.py), in its order, as a plan: a word question links to its
    lab showing that text (the app's own "Copy a link" form, ?tab=…); a choice or number question has no lab."""
    return [_question({"kind": p.kind, "text": p.text, "choices": list(p.choices), "correct": p.correct,
                       "link": links.query(p.kind, {LINK_INPUT[p.kind]: p.text}) if p.kind in LINK_INPUT else ""})
            for p in PRESETS]
