"""Part A & B workbook, the tab: one question at a time in the handout's words, the student's answer kept in
their browser, Check (judged live), Show the evidence (the labs' measurements and the student's own runs),
and the whole workbook as a Markdown download."""

from __future__ import annotations

import gradio as gr
from gradio.context import Context

from labs.core.errors import BadInput
from labs.core.ui import class_hooks, ui
from labs.core.ui.build import Build
from labs.core.work import jobs
from labs.part_b import checks, evidence, questions, workbook
from labs.part_b.questions import BY_ID, QUESTIONS

TITLE = "Part A & B workbook"
ID = "part_b"
EXPLAINER = """**The handout's exercises, answered and checked on the real models.** Pick a question, type your
answer, press **Check**: the value is computed live (the softmax, the masking draw, peft's LoRA count, the
connections in the masks…) and the tolerance is stated. Open questions are never marked: write, then **Show the
evidence** for what the labs measure. Your answers stay in this browser; **Download my workbook** saves them all."""
TRY_THIS = (
    "Start with Part A before the lecture: guess first, then press Show the evidence to see what the model guesses.",
    "B3.1: type the handout's own sign (+) and Check: why is it marked wrong? Show the evidence takes both steps.",
    "B3.2 and B5.1: run your own schedule, then 1e-2 beside it. Which run kept what pre-training taught?")
MAX_FIELDS = max(len(q.fields) for q in QUESTIONS)
STORAGE_KEY = "lm-lab-part-b"  # the browser's copy of the workbook (localStorage)
VERDICT_MARK = {"right": "✓", "wrong": "✗", "empty": "·"}
# The download happens in the browser, from the Markdown the server just wrote into a hidden box.
DOWNLOAD_JS = """(text) => { if (!text) return;
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([text], {type: "text/markdown"}));
  link.download = "my-part-b.md"; link.click(); URL.revokeObjectURL(link.href); }"""


def choices() -> list[tuple[str, str]]:
    return [(f"{q.id} · {q.section.split(': ', 1)[-1]}", q.id) for q in QUESTIONS]


def stored(saved) -> dict:
    """The browser's copy, read defensively: {"answers": {id: {field: text}}, "evidence": {id: markdown}}."""
    saved = saved if isinstance(saved, dict) else {}
    try:
        kept = workbook.clean(saved.get("answers"))
    except BadInput:
        kept = {}
    notes = saved.get("evidence") if isinstance(saved.get("evidence"), dict) else {}
    return {"answers": kept, "evidence": {k: str(v)[:20_000] for k, v in notes.items() if k in BY_ID}}


def question_card(q: questions.Question) -> str:
    quote = "\n>\n".join(f"> {ui.md(line)}" for line in q.quote)  # one line of the handout per line, literally
    parts = [f"### {q.id} · {ui.md(q.section.split(': ', 1)[-1])}", quote]
    if q.erratum:
        parts.append(f"**Where the handout is wrong or unclear.** {q.erratum}")
    if q.tolerance:
        parts.append(f"*Checked:* {q.tolerance}.")
    if q.lab[0]:
        parts.append(f"**See why in the lab:** [{ui.esc(q.lab[1])}](?{q.lab[0]})")
    return "\n\n".join(parts)


def progress(saved: dict) -> str:
    answers = saved["answers"]
    answered = sum(1 for q in QUESTIONS if any(answers.get(q.id, {}).values()))
    checkable = [q.id for q in QUESTIONS if q.id in checks.CHECKS]
    right = sum(1 for qid in checkable if answers.get(qid) and workbook.judge(qid, answers[qid])["verdict"] == "right")
    return f"**{answered} of {len(QUESTIONS)}** answered · **{right} of {len(checkable)}** checkable answers right"


def verdict_markdown(qid: str, given: dict) -> str:
    """The verdict per box; an answer that cannot be read is a message (BadInput), not a wrong answer."""
    verdict = checks.check(qid, given).to_json()
    if verdict["verdict"] == checks.OPEN:
        return "✎ Not marked: compare with the evidence and the model answer."
    labels = {f.key: f.label for f in BY_ID[qid].fields}
    lines = [f"**{workbook.VERDICT_WORDS[verdict['verdict']]}**"]
    for key, mark in verdict["fields"].items():
        expected = verdict["expected"].get(key)
        shown = ("" if mark == "right" or expected is None else ": no answer yet" if mark == "empty"
                 else f": expected {ui.md(expected)}")
        lines.append(f"- {VERDICT_MARK.get(mark, '')} {ui.md(labels[key])}{shown}")
    return "\n".join(lines) + "\n\n" + verdict["evidence"]


def shown_verdict(qid: str, given: dict) -> str:
    """A kept answer's verdict when its question comes back on screen (one that cannot be read says why)."""
    try:
        return verdict_markdown(qid, given)
    except BadInput as exc:
        return ui.md(str(exc))


def field_updates(q: questions.Question, given: dict) -> list:
    updates = []
    for i in range(MAX_FIELDS):
        if i < len(q.fields):
            f = q.fields[i]
            updates.append(gr.update(visible=True, label=f.label, placeholder=f.hint or None,
                                     value=given.get(f.key, f.default)))
        else:
            updates.append(gr.update(visible=False, value=""))
    return updates


def on_show(qid, saved):
    """A question on screen: its card, the student's kept answers, the buttons it has, and what was shown."""
    q = BY_ID.get(qid) or QUESTIONS[0]
    saved = stored(saved)
    given = saved["answers"].get(q.id, {})
    verdict = shown_verdict(q.id, given) if q.id in checks.CHECKS and any(given.values()) else ""
    return (question_card(q), *field_updates(q, given), gr.update(visible=q.id in checks.CHECKS),
            gr.update(value="Run my settings" if q.kind == "run" else "Show the evidence"),
            verdict, saved["evidence"].get(q.id, ""), progress(saved))


def answers_from(qid: str, values) -> dict:
    q = BY_ID[qid]
    return {f.key: "" if v is None else str(v) for f, v in zip(q.fields, values)}


def kept_with(saved, qid: str, values) -> dict:
    """The browser's copy with this question's boxes as they are now (each answer's length checked)."""
    saved = stored(saved)
    saved["answers"] = workbook.clean({**saved["answers"], qid: answers_from(qid, values)})
    return saved


def on_save(qid, *args):
    *values, saved = args
    return kept_with(saved, qid, values) if qid in BY_ID else gr.skip()


def on_check(qid, *args):
    *values, saved = args
    saved = kept_with(saved, qid, values)
    if not any(saved["answers"][qid].values()):
        raise BadInput("Type your answer in the boxes first, then press Check.")
    return verdict_markdown(qid, saved["answers"][qid]), saved, progress(saved)


async def on_evidence(qid, *args, request: gr.Request = None):
    """The evidence for this question (a run streams its progress); kept in the browser with the answers."""
    *values, saved = args
    saved = kept_with(saved, qid, values)
    jobs.owner_var.set(getattr(request, "session_hash", None))  # one waiting run per student
    text = ""
    async for text in evidence.evidence(qid, saved["answers"][qid]):
        yield text, gr.skip()
    saved["evidence"][qid] = text
    yield text, saved


def on_download(saved) -> str:
    saved = stored(saved)
    return workbook.report(saved["answers"], saved["evidence"])


def step(qid, delta: int) -> str:
    order = questions.ids()
    return order[(order.index(qid) + delta) % len(order)] if qid in BY_ID else order[0]


def on_previous(qid) -> str:
    return step(qid, -1)


def on_next(qid) -> str:
    return step(qid, 1)


def build(ctx: Build) -> None:
    own_tab = Context.block
    ui.explainer(EXPLAINER)
    saved = gr.BrowserState({"answers": {}, "evidence": {}}, storage_key=STORAGE_KEY,
                            secret=class_hooks.BROWSER_SECRET)  # kept across a restart (see class_hooks)
    with gr.Row():
        picker = gr.Dropdown(choices(), value=QUESTIONS[0].id, label="Question", scale=3)
        back, forward = gr.Button("◀ Previous", scale=0, min_width=160), gr.Button("Next ▶", scale=0, min_width=160)
    done = gr.Markdown(elem_id="lab-part-b-progress")
    card = gr.Markdown(elem_id="lab-part-b-card")
    boxes = [gr.Textbox(visible=False, max_lines=6, max_length=workbook.answers.MAX_ANSWER_CHARS)
             for _ in range(MAX_FIELDS)]
    with gr.Row():
        check = gr.Button("Check", variant="primary", scale=0, min_width=160)
        show = gr.Button("Show the evidence", scale=0, min_width=220)
        download = gr.Button("⬇ Download my workbook (Markdown)", scale=0, min_width=340)
        ctx.share_button(saved)  # shown once the student joined a class (Ask the class)
    verdict = gr.Markdown(elem_id="lab-part-b-verdict")
    shown = gr.Markdown(elem_id="lab-part-b-evidence")
    report = gr.Textbox(visible=False)
    ui.try_this(*TRY_THIS)
    ctx.link(__name__, q=picker)

    view = [card, *boxes, check, show, verdict, shown, done]
    ui.wire(picker.change, on_show, [picker, saved], view)
    ctx.on_load(on_show, [picker, saved], view)
    if isinstance(own_tab, gr.Tab):  # the browser's copy is read when the tab is first on the page: show it then
        ui.wire(own_tab.select, on_show, [picker, saved], view)
    ui.wire(back.click, on_previous, picker, picker)
    ui.wire(forward.click, on_next, picker, picker)
    ui.wire([b.blur for b in boxes], on_save, [picker, *boxes, saved], saved, queue=False, show_progress="hidden")
    ui.wire([check.click] + [b.submit for b in boxes], on_check, [picker, *boxes, saved], [verdict, saved, done])
    ui.wire(show.click, on_evidence, [picker, *boxes, saved], [shown, saved])
    ui.wire(download.click, on_download, saved, report).then(None, report, None, js=DOWNLOAD_JS)
