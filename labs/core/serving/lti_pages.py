"""The LMS's pages of LM Lab (LTI 1.3): a launched student's workbook activity, the lecturer's deep-linking choice,
the lecturer's view of an activity's scores and a refusal; plain HTML, everything from the LMS or a student escaped.

These pages live outside the Gradio app on purpose: an LMS frames them, often in a small iframe, and a launched
student must see only the activity's questions. The questions and their checking come from the workbook's own
endpoints (`part_b_questions`, `check_part_b`), called by name (labs.core.work.services)."""

from __future__ import annotations

import json

from labs.core.ui.escape import esc

STYLE = """<style>body{font-family:system-ui,sans-serif;max-width:52rem;margin:1rem auto;padding:0 1rem;line-height:1.45}
.q{border:1px solid #ccd;border-radius:8px;padding:.6rem 1rem;margin:.8rem 0}.q h2{font-size:1.05rem;margin:.2rem 0}
label{display:block;margin:.4rem 0 .1rem}input[type=text]{width:100%;padding:.35rem;box-sizing:border-box}
.verdict{font-weight:600}.right{color:#176b2c}.wrong{color:#a4161a}.open,.pending{color:#555}
button{padding:.45rem 1rem;font-size:1rem;margin:.5rem .5rem .5rem 0}.note{color:#555;font-size:.92rem}
fieldset{border:1px solid #ccd;border-radius:8px;margin:1rem 0}table{border-collapse:collapse}
td,th{border:1px solid #ccd;padding:.2rem .5rem;text-align:left}</style>"""


def page(title: str, body: str, status: int = 200) -> tuple[str, int]:
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8><meta name=viewport "
            f"content='width=device-width,initial-scale=1'><title>{esc(title)} · LM Lab</title>{STYLE}</head>"
            f"<body>{body}</body></html>", status)


def refused(message: str, status: int = 403) -> tuple[str, int]:
    return page("Not allowed", f"<h1>LM Lab cannot open this</h1><p id=lti-refused>{esc(message)}</p>"
                "<p class=note>Open the activity again from your course's page. If this keeps happening, tell "
                "your lecturer: the LMS and LM Lab do not agree on this course's registration.</p>", status)


def _question(q: dict) -> str:
    marked = q["kind"] == "check"
    fields = "".join(
        f"<label for='{esc(q['id'])}-{esc(f['key'])}'>{esc(f['label'])}</label>"
        f"<input type=text id='{esc(q['id'])}-{esc(f['key'])}' data-q='{esc(q['id'])}' data-f='{esc(f['key'])}'"
        f" placeholder='{esc(f['hint'])}' maxlength=2000>" for f in q["fields"])
    wording = esc(q["wording"]).replace("\n", "<br>")
    note = "" if marked else "<p class=note>Not marked: your lecturer reads it (it counts as pending).</p>"
    return (f"<div class=q data-id='{esc(q['id'])}'><h2>{esc(q['id'])} · {esc(q['section'])}</h2><p>{wording}</p>"
            f"{note}{fields}<p class=verdict id='verdict-{esc(q['id'])}' aria-live=polite></p></div>")


STUDENT_JS = """<script>
const S = document.getElementById('lti-session').value;
const box = document.getElementById('lti-score');
async function check() {
  const answers = {};
  for (const input of document.querySelectorAll('input[data-q]')) {
    if (!input.value.trim()) continue;
    (answers[input.dataset.q] ||= {})[input.dataset.f] = input.value;
  }
  box.textContent = 'Checking on the real model…';
  const r = await fetch('check', {method: 'POST', headers: {'Content-Type': 'application/json'},
                                  body: JSON.stringify({session: S, answers})});
  const data = await r.json();
  if (!r.ok) { box.textContent = data.error; return; }
  for (const res of data.results) {
    const p = document.getElementById('verdict-' + res.id);
    if (!p) continue;
    p.className = 'verdict ' + res.verdict.split(' ')[0];
    p.textContent = res.verdict + (res.evidence ? ' · ' + res.evidence.replace(/\*\*|`/g, '') : '');
  }
  box.dataset.state = 'checked';
  box.textContent = data.summary;
}
document.getElementById('lti-check').addEventListener('click', check);
</script>"""


def student(title: str, questions: list[dict], session: str, graded: bool) -> tuple[str, int]:
    grade_note = ("When you check, your score goes to your course's grade book; checking again replaces it."
                  if graded else "This activity is not graded.")
    body = (f"<h1>{esc(title)}</h1><p class=note>{grade_note} Only your LMS's anonymous id is kept with it, never "
            f"your name.</p><input type=hidden id=lti-session value='{esc(session)}'>"
            + "".join(_question(q) for q in questions)
            + "<button id=lti-check type=button>Check my answers</button><p id=lti-score aria-live=polite></p>"
            + STUDENT_JS)
    return page(title, body)


def lecturer(title: str, questions: list[dict], rows: list, session: str) -> tuple[str, int]:
    table = "".join(f"<tr><td>{esc(r.user_id[:12])}…</td><td>{r.score_given:g} / {r.score_maximum:g}</td>"
                    f"<td>{esc(r.grading_progress)}</td><td>{'sent' if r.sent_at else esc(r.error or 'waiting')}"
                    f"</td></tr>" for r in rows)
    body = (f"<h1>{esc(title)}</h1><p>Questions: {esc(', '.join(q['id'] for q in questions))}.</p>"
            f"<p>{len(rows)} students have checked. Each row: the LMS's anonymous id, the score, whether the grade "
            f"book has it.</p><table id=lti-scores><tr><th>Student (LMS id)</th><th>Score</th><th>Grading</th>"
            f"<th>Grade book</th></tr>{table}</table>"
            f"<button id=lti-send-again type=button>Send scores again</button><p id=lti-sent aria-live=polite></p>"
            f"<input type=hidden id=lti-session value='{esc(session)}'><script>"
            "document.getElementById('lti-send-again').addEventListener('click', async () => {"
            " const r = await fetch('send_again', {method: 'POST', headers: {'Content-Type': 'application/json'},"
            " body: JSON.stringify({session: document.getElementById('lti-session').value})});"
            " const d = await r.json(); document.getElementById('lti-sent').textContent = r.ok ?"
            " `${d.sent} of ${d.scores} scores sent` + (d.failed ? `, ${d.failed} failed` : '') : d.error; });"
            "</script>")
    return page(title, body)


def chooser(session: str, questions: list[dict], labs: list[tuple[str, str]]) -> tuple[str, int]:
    """The lecturer's "add an activity": a workbook part or single questions (graded), a lab with its link
    parameters, or a class session."""
    parts = {}
    for q in questions:
        parts.setdefault(q["part"], []).append(q)
    boxes = "".join(
        f"<p><label><input type=checkbox class=part data-part='{esc(part)}'> The whole Part {esc(part)}</label></p>"
        + "".join(f"<label><input type=checkbox name=question value='{esc(q['id'])}' data-part='{esc(part)}'> "
                  f"{esc(q['id'])} · {esc(q['section'])}{'' if q['kind'] == 'check' else ' (not marked)'}</label>"
                  for q in qs) for part, qs in parts.items())
    options = "".join(f"<option value='{esc(lab_id)}'>{esc(title)}</option>" for lab_id, title in labs)
    body = (
        "<h1>Add LM Lab to your course</h1><form method=post action=deep_link id=lti-choose>"
        f"<input type=hidden name=session value='{esc(session)}'>"
        "<fieldset><legend>Workbook questions (graded: right answers over the marked questions)</legend>"
        "<label for=wb-title>Title in the course</label><input type=text id=wb-title name=title "
        f"value='LM Lab workbook'>{boxes}"
        "<button name=kind value=workbook id=lti-add-workbook>Add these questions</button></fieldset>"
        "<fieldset><legend>A lab (not graded)</legend><label for=lab>Lab</label><select id=lab name=lab>"
        f"{options}</select><label for=lab-params>Link parameters (as in a slide link, e.g. text=The+cat+sat)</label>"
        "<input type=text id=lab-params name=params><button name=kind value=lab id=lti-add-lab>Add this lab</button>"
        "</fieldset><fieldset><legend>A class session (Ask the class)</legend><label for=class-code>The class's "
        "join code</label><input type=text id=class-code name=class_code maxlength=12>"
        "<button name=kind value=class id=lti-add-class>Add this class session</button></fieldset></form><script>"
        "for (const all of document.querySelectorAll('input.part')) all.addEventListener('change', () => {"
        " for (const box of document.querySelectorAll(`input[name=question][data-part='${all.dataset.part}']`))"
        " box.checked = all.checked; });</script>")
    return page("Add an activity", body)


def auto_post(url: str, fields: dict) -> tuple[str, int]:
    """A form the browser posts at once (the deep-linking response back to the LMS)."""
    inputs = "".join(f"<input type=hidden name='{esc(k)}' value='{esc(v)}'>" for k, v in fields.items())
    return page("Back to your course", f"<form id=lti-return method=post action='{esc(url)}'>{inputs}"
                "<noscript><button>Back to the course</button></noscript></form>"
                "<script>document.getElementById('lti-return').submit();</script>")


def as_json(value) -> str:
    return json.dumps(value, ensure_ascii=False)
