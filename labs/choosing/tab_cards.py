"""Choosing a model, panel: the model card table (every model offered here, read from its config and
weights; latency on a button, measured once per process) and "Check the course": the course's own examples,
quoted exactly, beside what the real models and sources give."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from labs.choosing import cards, course
from labs.core.ui import ui
from labs.core.ui.build import Build

CARD_HEADERS = ["Model", "Family", "Layers", "Hidden", "Heads", "Vocabulary (tokenizer)", "Parameters",
                "of which embeddings", "Pre-training objective", "One forward pass"]
COURSE_HEADERS = ["Topic", "The course says (exactly)", "Where", "The real model or source", "Measured with", "Verdict",
                  "Why"]
VERDICT_MARKS = {course.AGREES: "✓ agrees", course.DIFFERS: "✗ differs", course.NOT_HERE: "— not measured here"}


def millions(n) -> str:
    return "" if n is None else f"{n / 1e6:,.2f}M" if n >= 1e5 else f"{n:,}"


def card_row(c: dict) -> list:
    layers = f"{c['layers']} + {c['decoder_layers']}" if c["decoder_layers"] else c["layers"]
    latency = "press Measure" if c["latency_ms"] is None else f"**{c['latency_ms']:,.1f} ms** ({c['latency_tokens']} tokens)"
    family = c["family"] + ("" if c["head_trained"] else " (random LM head)")
    share = f"{millions(c['embedding_params'])} ({c['embedding_params'] / c['params']:.0%})"
    return [f"**{ui.md(c['name'])}**", family, layers, c["hidden_size"], c["heads"],
            f"{c['vocab_size']:,} ({c['tokenizer']})", f"**{millions(c['params'])}**", share, ui.md(c["objective"]),
            latency]


def card_table(result: dict) -> str:
    """The measured models as a Markdown table (it wraps and reads large on a projector)."""
    rows = [card_row(c) for c in result["models"] if c["params"] is not None]
    lines = ["| " + " | ".join(CARD_HEADERS) + " |", "|" + "---|" * len(CARD_HEADERS)]
    return "\n".join(lines + ["| " + " | ".join(str(x) for x in row) + " |" for row in rows])


def cards_note(result: dict) -> str:
    missing = [c["name"] for c in result["models"] if c["source"] == "not here"]
    text = ("Every figure is read from the model loaded in this server: layers, hidden size and heads from its "
            "config, parameters counted from its weights (a tied input/output embedding counted once).")
    if missing:
        text += (f" **Not measured here** (the Hugging Face Hub is {'reachable' if result['online'] else 'not reachable'} "
                 f"and they are not in the local cache): {ui.md(', '.join(missing))}. While online, run "
                 "`./lab download` once to have them.")
    waiting = [c["name"] for c in result["models"] if c["source"] != "not here" and c["params"] is None]
    if waiting:
        text += (f" **Offered, loaded on demand** (their card appears once a lab has loaded them): "
                 f"{ui.md(', '.join(waiting))}.")
    return text


def on_cards(measure: bool = False):
    """The table for every model offered here (latency when asked, once per process per model)."""
    result = cards.model_card([], measure)
    note = cards_note(result)
    if measure:
        note += (f" Latency: one forward pass over “{ui.md(result['latency_text'])}”, the median of "
                 f"{cards.LATENCY_RUNS} after a warm-up, measured once per server start; other work on this server at "
                 "the same moment slows it down.")
    return card_table(result), note, result


def on_measure():
    return on_cards(True)


def cell(text: str) -> str:
    """Text for a Markdown table cell, shown literally (ui.md escapes | too)."""
    return ui.md(text) if text else "—"


def quote_cell(text: str) -> str:
    """The course's words as the document writes them (LaTeX source included), in a code span."""
    return "`" + text.replace("|", "\\|").replace("`", "'") + "`"


def on_course(row: str = "") -> str:
    """The course's rows (a link's row alone) as a Markdown table: it wraps, and reads on a projector."""
    rows = course.check_course(row or "")["rows"]
    lines = ["| " + " | ".join(COURSE_HEADERS) + " |", "|" + "---|" * len(COURSE_HEADERS)]
    lines += ["| " + " | ".join([f"**{cell(r['topic'])}**", quote_cell(r["quote"]),
                                 cell(f"{r['document']}: {r['where']}"), cell(r["measured"]), cell(r["measured_with"]),
                                 f"**{VERDICT_MARKS[r['verdict']]}**", cell(r["note"])]) + " |" for r in rows]
    return "\n".join(lines)


def build() -> SimpleNamespace:
    gr.Markdown("## 1. Families and variants, measured here")
    table = gr.Markdown(elem_classes=["lab-cards"])
    note = gr.Markdown()
    measure = gr.Button("Measure the forward-pass latency of every model", variant="secondary")
    with gr.Accordion("The cards as JSON (as /model_card returns them)", open=False):
        box = gr.JSON()
    gr.Markdown("### Check the course: its examples, quoted exactly, on the real models and sources")
    row = gr.Dropdown([("every row", "")] + [(i.replace("_", " "), i) for i in course.row_ids()], value="",
                      label="Row (a lab's link opens its row)")
    course_table = gr.Markdown(elem_classes=["lab-course-check"])
    return SimpleNamespace(note=note, table=table, measure=measure, box=box, row=row, course=course_table)


def wire(ctx: Build, p: SimpleNamespace) -> None:
    outputs = [p.table, p.note, p.box]
    ctx.on_load(on_cards, None, outputs)
    ui.wire(p.measure.click, on_measure, None, outputs, concurrency_limit=1, concurrency_id="choosing-latency")
    ctx.on_load(on_course, p.row, p.course)
    ui.wire(p.row.change, on_course, p.row, p.course)
