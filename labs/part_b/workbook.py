"""A student's workbook as data: their answers per question (what the page keeps in the browser), every
checkable answer judged (the `/check_part_b` API), and the Markdown file "Download my Part B" gives."""

from __future__ import annotations

import datetime
import importlib.metadata
import json

from labs.core.errors import BadInput
from labs.core.models import models
from labs.core.ui.escape import md
from labs.part_b import answers, checks
from labs.part_b.questions import BY_ID, QUESTIONS

MAX_STORED_CHARS = 200_000  # a whole workbook kept in the browser: every answer at its limit stays far below


def clean(workbook) -> dict:
    """What a page (or an API client) sent as the workbook, checked: {question id: {field: text}}. Unknown
    ids and fields are dropped (a workbook from an older version still loads); long answers are refused."""
    if workbook in (None, ""):
        return {}
    if isinstance(workbook, str):
        if len(workbook) > MAX_STORED_CHARS:
            raise BadInput("This workbook is too large to read.")
        try:
            workbook = json.loads(workbook)
        except ValueError:
            raise BadInput("The answers must be JSON: {\"B2.1\": {\"sat\": \"0.58\", …}, …}.") from None
    if not isinstance(workbook, dict):
        raise BadInput("The answers must be an object of question id: {field: answer}.")
    kept = {}
    for qid, given in workbook.items():
        q = BY_ID.get(qid)
        if q is None:
            continue
        if not isinstance(given, dict):
            raise BadInput(f"The answers to {qid} must be an object of field: answer, e.g. {example(q)}.")
        kept[qid] = {f.key: answers.text(given.get(f.key), f.label) for f in q.fields if given.get(f.key) is not None}
    return kept


def example(q) -> str:
    """The shape of a question's answers, with its own fields: {"sign": "…", "theta": "…"}."""
    return json.dumps({f.key: "…" for f in q.fields}, ensure_ascii=False)


def judge(qid: str, given: dict) -> dict:
    """One question's verdict as JSON; an answer that cannot be read is wrong, and says why. The id and the
    answers' lengths were checked by clean(), the only way answers reach here."""
    try:
        return checks.check(qid, given).to_json()
    except BadInput as exc:
        return {"id": qid, "verdict": checks.WRONG, "expected": {}, "tolerance": BY_ID[qid].tolerance,
                "evidence": str(exc), "fields": {}}


def check_part_b(answers_json: dict) -> dict:
    """The `/check_part_b` API: every question answered in answers_json ({id: {field: answer}}), judged.
    Verdicts: right | wrong | open (never marked) | not measured here."""
    workbook = clean(answers_json)
    if not workbook:
        raise BadInput("Send at least one answer, e.g. {\"B2.1\": {\"sat\": 0.58, \"ran\": 0.13, "
                       "\"jumped\": 0.08, \"slept\": 0.21}}. The ids and fields are in /part_b_questions.")
    return {"results": [judge(q.id, workbook[q.id]) for q in QUESTIONS if q.id in workbook],
            "versions": versions()}


def versions() -> dict:
    names = ("transformers", "torch", "peft", "gradio")
    found = {}
    for name in names:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    found["models"] = {"masked": models.default_name("masked"), "causal": models.default_name("causal"),
                       "encoder": models.default_name("encoder", "masked")}
    return found


VERDICT_WORDS = {"right": "✓ right", "wrong": "✗ not yet", "open": "✎ open (not marked)",
                 "not measured here": "not measured here"}


def report(workbook: dict, evidence: dict | None = None) -> str:
    """The whole workbook as Markdown: each question in the handout's words, the student's answer, the
    verdict and its evidence, and what produced them."""
    evidence = evidence or {}
    v = versions()
    lines = ["# My Part A and Part B (LM Lab workbook)", "",
             f"Saved {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}. Checked with transformers "
             f"{v.get('transformers', '?')}, torch {v.get('torch', '?')}, peft {v.get('peft', '?')}; models: "
             + ", ".join(f"{k} {m}" for k, m in v["models"].items() if m) + ".", ""]
    for q in QUESTIONS:
        given = workbook.get(q.id, {})
        lines += [f"## {q.id} · {q.section}", "", "\n>\n".join(f"> {md(line)}" for line in q.quote), ""]
        if q.erratum:
            lines += [f"*Note:* {q.erratum}", ""]
        for f in q.fields:
            lines.append(f"- **{f.label}**: {md(given.get(f.key, '')) or '*(no answer)*'}")
        if given:
            verdict = judge(q.id, given)
            lines += ["", f"**Verdict:** {VERDICT_WORDS[verdict['verdict']]}"]
            if verdict["verdict"] != checks.OPEN:
                lines += ["", verdict["evidence"]]
        if q.id in evidence:
            lines += ["", "**Evidence:**", "", evidence[q.id]]
        lines.append("")
    return "\n".join(lines)
