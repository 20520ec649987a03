"""Choosing a model, panel: distillation checked (DistilBERT against BERT on the same blanks)."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr
import pandas as pd

from labs.choosing import distillation
from labs.core.models import models
from labs.core.ui import ui

HEADERS = ["Sentence", "Teacher's word (P)", "Student's word (P)", "Agree?", "KL (nats)"]


def build() -> SimpleNamespace:
    with gr.Accordion("Distillation, checked: a student against its teacher", open=False):
        if not models.hub_online():
            gr.Markdown(ui.notice(distillation.NEEDS_HUB))
        with gr.Row():
            # The Hub pair by default, even offline: the button then says what it needs.
            names = models.choice_names(*distillation.FAMILIES)
            teacher = gr.Dropdown(names, value=distillation.TEACHER, label="Teacher", allow_custom_value=True)
            student = gr.Dropdown(names, value=distillation.STUDENT, label="Student", allow_custom_value=True)
        text = gr.Textbox("\n".join(distillation.SENTENCES), lines=5, max_lines=12, max_length=4000,
                          label="Sentences, one [MASK] each (one per line)")
        button = gr.Button("Compare teacher and student")
        summary = gr.Markdown()
        table = ui.table(HEADERS, "Each blank: the two models' top word", wrap=True)
        with gr.Accordion("As /distillation returns it", open=False):
            box = gr.JSON()
    return SimpleNamespace(teacher=teacher, student=student, text=text, button=button, summary=summary, table=table,
                           box=box)


def summary_text(r: dict) -> str:
    return (f"**The student agrees with its teacher on {r['agreement']:.0%} of the blanks; mean "
            f"KL(teacher ‖ student) {r['mean_kl']:.3f} nats.** It has {r['student_layers']} layers to the teacher's {r['teacher_layers']} "
            f"and {r['size_ratio']:.0%} of its parameters ({r['student_params'] / 1e6:,.1f}M vs "
            f"{r['teacher_params'] / 1e6:,.1f}M), and reads these sentences **{r['speedup']:.1f}× faster** here "
            f"({r['student_ms']:,.1f} ms vs {r['teacher_ms']:,.1f} ms, median of 3 passes). KL is 0 when the two "
            "distributions are identical; distillation trained the student to make it small.")


def on_distill(text, teacher, student):
    r = distillation.distillation_api(text, teacher, student)
    rows = [[b["sentence"], f"{b['teacher_word']} ({b['teacher_prob']:.2g})",
             f"{b['student_word']} ({b['student_prob']:.2g})", "yes" if b["agree"] else "no", f"{b['kl']:.3f}"]
            for b in r["blanks"]]
    return summary_text(r), pd.DataFrame(rows, columns=HEADERS), r


def wire(panel: SimpleNamespace) -> None:
    ui.wire(panel.button.click, on_distill, [panel.text, panel.teacher, panel.student],
            [panel.summary, panel.table, panel.box])
