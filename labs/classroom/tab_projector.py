"""Ask the class, the projector: the question in large type and the number of answers, live (the answers stay
hidden); Reveal: the class beside the model and the comparison; the history, the export and the workbook as
the class shared it. Everything here is drawn from `/class_overview`'s JSON."""

from __future__ import annotations

import gradio as gr
import pandas as pd

from labs.classroom import timer, views
from labs.core.ui import ui

POLL_SECONDS = 1  # the projector's count is at most a second or two behind the class
HISTORY_HEADERS = ["#", "question", "kind", "model", "answers", "revealed"]
WORKBOOK_HEADERS = ["question", "right", "wrong", "open", "not measured here", "not tried"]
# A file the server wrote into a hidden box ({filename, type, text}) saved by the browser, with its own name.
DOWNLOAD_JS = """(file) => { if (!file) return; const got = JSON.parse(file);
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([got.text], {type: got.type}));
  link.download = got.filename; link.click(); URL.revokeObjectURL(link.href); }"""
PIECES_NOTE = ("A guess shown as “cou…” is the start of a longer word (given it, the model goes on with the same "
               "word); the class's words are scored whole.")


def build_live() -> tuple[gr.HTML, gr.HTML, gr.Button, gr.Button, gr.Button]:
    """The question in large type, the count, Reveal, Vote again and Next: the top of the projector."""
    question = gr.HTML(elem_id="lab-class-projector-question")
    count = gr.HTML(elem_id="lab-class-count")
    with gr.Row(elem_classes=["lab-class-actions"]):
        reveal = gr.Button("Reveal the answers", variant="primary", scale=0, min_width=220, elem_id="lab-class-reveal")
        # Peer instruction: the students discuss with a neighbour, then vote again on the same question.
        again = gr.Button("Discuss, then vote again", scale=0, min_width=300, elem_id="lab-class-again", visible=False)
        next_question = gr.Button("Next question", scale=0, min_width=180, elem_id="lab-class-next")
    return question, count, reveal, again, next_question


def build_timer() -> tuple:
    """The countdown's controls, under the question while it is open: 30, 60 or 90 s, or typed; more time; none."""
    with gr.Row(elem_classes=["lab-class-actions", "lab-class-timer"], visible=False) as row:
        presets = [gr.Button(f"Timer {n} s" if n == timer.PRESET_SECONDS[0] else f"{n} s", size="sm", scale=0,
                             min_width=110 if n == timer.PRESET_SECONDS[0] else 70) for n in timer.PRESET_SECONDS]
        seconds = gr.Number(120, label="Timer: seconds", show_label=False, container=False, minimum=5,
                            maximum=timer.MAX_SECONDS, precision=0, scale=0, min_width=80, elem_id="lab-class-seconds")
        typed = gr.Button("Start", size="sm", scale=0, min_width=70)
        more = gr.Button("+30 s", size="sm", scale=0, min_width=70)
        stop = gr.Button("No timer", size="sm", scale=0, min_width=100)
    return row, presets, seconds, typed, more, stop


def build_results() -> tuple:
    agreement = gr.HTML(elem_id="lab-class-agreement")
    class_plot = gr.Plot(label="The class's answers beside the model's", elem_id="lab-class-plot", visible=False)
    details = gr.HTML(elem_id="lab-class-details")  # under the chart: the second vote's own figures, confidence
    model_plot = gr.Plot(label="The model's own guesses beside the class's", visible=False)
    note = gr.Markdown(elem_classes=["lab-class-note"])
    return agreement, class_plot, details, model_plot, note


def build_more() -> tuple:
    """What the lecturer needs now and then: rare and hidden answers, the history, the export, the workbook."""
    with gr.Accordion("On the projector: rare and hidden answers", open=False):
        with gr.Row():
            min_count = gr.Slider(1, 10, value=2, step=1, label="Answers given by fewer students show as “other (n)”")
            hide_choice = gr.Dropdown([], label="Take an answer off the screen", allow_custom_value=True)
            hide = gr.Button("Hide it", scale=0, min_width=120)
    with gr.Accordion("This class: questions, export, the workbook", open=False):
        history = ui.table(HISTORY_HEADERS, "Questions asked")
        with gr.Row():
            export = gr.Button("⬇ Download the class as CSV", scale=0, min_width=280)
            report_html = gr.Button("⬇ The lecture's report (HTML, with charts)", scale=0, min_width=340)
            report_csv = gr.Button("⬇ The lecture's report (CSV)", scale=0, min_width=260)
            delete = gr.Button("Delete this class now", scale=0, min_width=220, variant="stop")
        export_text = gr.Textbox(visible=False)
        workbook = ui.table(WORKBOOK_HEADERS, "The Part A & B workbook, as students shared it (answers stay with them)")
    return min_count, hide_choice, hide, history, export, report_html, report_csv, export_text, delete, workbook


PLAN_HEADERS = ["#", "kind", "question", "right answer", "lab", "asked"]


def plan_rows(plan: dict) -> pd.DataFrame:
    """The prepared questions, the next one marked."""
    return pd.DataFrame([[i, views.KIND_WORDS[q["kind"]], q["text"], q.get("correct") or "", q.get("link") or "",
                          "✓" if i <= plan["next"] else ("▶ next" if i == plan["next"] + 1 else "")]
                         for i, q in enumerate(plan["questions"], 1)], columns=PLAN_HEADERS)


def history_rows(overview: dict) -> pd.DataFrame:
    return pd.DataFrame([[q["number"], q["text"], views.kind_words(q), q["model"] or "", q["answers"],
                          "yes" if q["revealed"] else ""] for q in overview["history"]], columns=HISTORY_HEADERS)


def workbook_rows(overview: dict) -> pd.DataFrame:
    shared = overview["workbook"]
    rows = []
    for question, verdicts in sorted(shared["questions"].items()):
        counts = [verdicts.get(v, 0) for v in ("right", "wrong", "open", "not measured here")]
        rows.append([question, *counts, shared["students"] - sum(counts)])
    return pd.DataFrame(rows, columns=WORKBOOK_HEADERS)


def results_updates(current: dict | None) -> dict:
    """The reveal's part of the projector: nothing until the reveal, then the figures and the comparison."""
    view = (current or {}).get("results")
    if not view:
        return {"agreement": "", "details": "", "class_plot": gr.update(value=None, visible=False),
                "model_plot": gr.update(value=None, visible=False), "note": "", "hide_choice": gr.update(choices=[])}
    word = bool(view.get("model_top"))
    note = ""
    if word:
        note = (f"Model: **{ui.md(view['model'])}** ({ui.md(view['source'])}). {ui.md(view['approximation'])}"
                + (f" {PIECES_NOTE}" if any(t.get("piece") for t in view["model_top"]) else "")
                + (f" {view['hidden']} hidden answer(s) are not shown." if view["hidden"] else ""))
    # The first screen of a 1280×720 projector: one row of figures, then the chart; the rest under the chart.
    rounds = view.get("rounds")
    agreement = views.rounds_html(rounds) if rounds else views.agreement_html(view)
    details = (views.agreement_html(view) if rounds else "") + views.confidence_html(view)
    return {"agreement": agreement, "details": details, "class_plot": gr.update(value=views.class_figure(view), visible=True),
            "model_plot": gr.update(value=views.model_figure(view) if word else None, visible=word), "note": note,
            "hide_choice": gr.update(choices=[r["answer"] for r in view["class"]])}


def projector_updates(overview: dict | None) -> dict:
    """The projector for this overview (None: no class on this page)."""
    if overview is None:
        return {"timer": gr.Timer(active=False), "seen": None, **results_updates(None)}
    current = overview["current"]
    question = current["question"] if current else None
    revealed = bool(question and question["revealed"])
    voted_again = question is not None and any(q.get("first_round") == question["id"] for q in overview["history"])
    can_vote_again = (question is not None and question.get("round") == 1 and not voted_again
                      and current["answers"] > 0 and not overview["closed"])
    plan = overview["plan"]
    prepared = plan["left"] > 0 and (question is None or revealed)
    next_label = (f"Next: prepared question {plan['next'] + 1} of {len(plan['questions'])}" if prepared
                  else "Next question")
    return {"question": views.question_html(question, waiting="Ask a question: the class sees it at once."
                                            + (" Or press “Next” for the prepared one." if prepared else "")),
            "again": gr.update(visible=can_vote_again),
            "count": views.count_html(current["answers"], revealed) if current else "",
            "reveal": gr.update(visible=bool(question) and not revealed and not overview["closed"]),
            "next": gr.update(visible=(revealed or prepared) and not overview["closed"], value=next_label),
            "timer_row": gr.update(visible=bool(question) and not revealed and not overview["closed"]),
            "plan_table": plan_rows(plan),
            "ask_box": gr.update(open=question is None and not overview["closed"]),
            "min_count": overview["min_count"],
            "history": history_rows(overview), "workbook": workbook_rows(overview),
            "timer": gr.Timer(active=not overview["closed"]),
            "seen": {"version": overview["version"], "answers": current["answers"] if current else 0,
                     "revealed": revealed},
            **results_updates(current)}
