"""Ask the class, the lecturer's controls: start a class, the join card for the projector (code, link, QR
code), copy the lecturer link (the key is never on screen), ask a question (typed, from the handout's Part A,
or from Fill in the blank and Next token), end the class."""

from __future__ import annotations

import gradio as gr

from labs.classroom import backup, presets, sessions, store, views
from labs.classroom.tab_projector import PLAN_HEADERS
from labs.core.models import models
from labs.core.ui import ui

KIND_CHOICES = [("Fill in the blank (a masked LM answers too)", "fill_mask"),
                ("The next word (a causal LM answers too)", "next_token"),
                ("Multiple choice", "choice"), ("A number", "number")]
FAMILY = {"fill_mask": "masked", "next_token": "causal"}
# The lecturer link (with its key) goes to the clipboard, never to the screen that is projected.
COPY_LECTURER_LINK_JS = """(state) => { const url = state && state.lecturer_url;
  if (url && navigator.clipboard) navigator.clipboard.writeText(url).catch(() => {});
  return []; }"""


def build_start() -> tuple[gr.Column, gr.Textbox, gr.Button]:
    with gr.Column() as start_box:
        gr.Markdown("### Lecturer: start a class\nThe class joins from their phones with a code, a link or a QR "
                    "code; you ask, they answer, you reveal their answers beside the model's.")
        note = backup.lecturer_note(data=store.data_dir())  # what a restart does to a class (nothing on a laptop)
        if note:
            gr.Markdown(note, elem_id="lab-class-restart-note")
        with gr.Row():
            title = gr.Textbox(label="Title (shown to the class)", placeholder="Week 6: pre-trained language models",
                               max_length=sessions.MAX_TITLE_CHARS, scale=3)
            start = gr.Button("Start a class", variant="primary", scale=1)
    return start_box, title, start


def build_card() -> tuple[gr.HTML, gr.Button, gr.Button]:
    """The join card beside the question on the projector (late-comers read the code off it)."""
    card = gr.HTML(elem_id="lab-class-card")
    with gr.Row(elem_classes=["lab-class-actions"]):
        copy = gr.Button("Copy my lecturer link", size="sm", scale=0, min_width=200)
        end = gr.Button("End the class", size="sm", scale=0, min_width=140)
    return card, copy, end


def build_ask() -> tuple:
    with gr.Accordion("Ask a question", open=True, elem_id="lab-class-ask") as ask_box:
        preset = gr.Dropdown([p.label for p in presets.PRESETS], value=None, label="From the handout (optional)",
                             info="Part A's own exercises: the class guesses before it sees a model.")
        source = gr.Markdown(elem_classes=["lab-class-source"])
        kind = gr.Radio(KIND_CHOICES, value="fill_mask", label="Kind of question")
        text = gr.Textbox(label="Question (write [MASK] or ___ for the blank)", max_length=sessions.MAX_QUESTION_CHARS,
                          value="The cat sat on the ____")
        with gr.Row():
            model = gr.Dropdown(models.choice_names("masked"), value=models.default_name("masked"), label="Model",
                                allow_custom_value=True, info="The model whose answers are revealed beside the class's.")
            top_k = gr.Slider(1, 20, value=sessions.DEFAULT_TOP_K, step=1, label="The model's top-k to show")
        choices = gr.Textbox(label="Options, one per line (2 to 6)", lines=3, visible=False)
        correct = gr.Textbox(label="The right answer (optional)", visible=False, max_length=80)
        with gr.Row(elem_classes=["lab-class-actions"]):
            ask = gr.Button("Ask the class", variant="primary", elem_id="lab-class-ask-button", scale=0, min_width=200)
            prepare = gr.Button("Add to the prepared questions", scale=0, min_width=280, elem_id="lab-class-prepare")
    return ask_box, preset, source, kind, text, model, choices, correct, top_k, ask, prepare


def build_plan() -> tuple:
    """The lecture's questions prepared ahead: written here ("Add to the prepared questions") or imported, run in
    order with "Next", kept as a file between lectures."""
    with gr.Accordion("The lecture's questions, prepared ahead", open=False, elem_id="lab-class-plan") as box:
        gr.Markdown("Write them above (“Add to the prepared questions”) or import a file; in class, “Next” asks "
                    "the next one. Keep the file for next year: CSV holds every kind, Moodle's GIFT and XML hold "
                    "the choice and number questions (for a Moodle quiz).")
        table = ui.table(PLAN_HEADERS, "Prepared questions")
        with gr.Row():
            upload = gr.File(label="Import a file (CSV, GIFT or Moodle XML): it replaces the list",
                             file_types=[".csv", ".txt", ".gift", ".xml"], type="binary", scale=2)
            with gr.Column(scale=1, min_width=240):
                handout = gr.Button("Use the handout's Part A")
                export_format = gr.Radio([("CSV", "csv"), ("GIFT", "gift"), ("Moodle XML", "xml")], value="csv",
                                         label="Download as")
                export = gr.Button("⬇ Download the questions")
    return box, table, upload, handout, export_format, export


def kind_fields(kind: str) -> tuple:
    """The form for a kind of question: a model for a word question, options for a choice, a right answer."""
    family = FAMILY.get(kind)
    names = models.choice_names(family) if family else []
    note = ("" if names or not family else
            "No masked LM (BERT) is available here: ask for the next word instead, or run ./lab download online.")
    label = {"fill_mask": "Question (write [MASK] or ___ for the blank)", "next_token": "The start of a sentence",
             "choice": "Question", "number": "Question"}[kind]
    return (gr.update(visible=family is not None, choices=names, value=names[0] if names else None,
                      info=note or "The model whose answers are revealed beside the class's."),
            gr.update(visible=family is not None), gr.update(visible=kind == "choice"),
            gr.update(visible=kind in ("choice", "number")), gr.update(label=label))


def on_preset(label):
    """A question from the handout fills the form (the kind's own fields follow through kind.change)."""
    preset = presets.BY_LABEL.get(label)
    if preset is None:
        return [gr.skip()] * 5
    return preset.kind, preset.text, "\n".join(preset.choices), preset.correct, f"*{ui.md(preset.source)}*"


def wire(lecturer) -> None:
    fields = [lecturer.model, lecturer.top_k, lecturer.choices, lecturer.correct, lecturer.text]
    ui.wire(lecturer.kind.change, kind_fields, lecturer.kind, fields, queue=False)
    ui.wire(lecturer.preset.change, on_preset, lecturer.preset,
            [lecturer.kind, lecturer.text, lecturer.choices, lecturer.correct, lecturer.source], queue=False)


def start_state(start: dict) -> dict:
    """What the lecturer's browser keeps (the key included: it is theirs) and what the projector shows."""
    keep = ("lecturer_key", "code", "shown_code", "title", "join_url", "lecturer_url")
    return {("key" if k == "lecturer_key" else k): start[k] for k in keep}


def card_html(state: dict) -> str:
    return views.join_card(state)
