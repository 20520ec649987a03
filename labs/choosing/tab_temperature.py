"""Choosing a model, panel: distillation with temperature. The teacher's distribution over a blank softened at
T = 1, 2, 5, the student's beside it, and the loss α·L_CE + β·L_distill + γ·L_cos on the real pair."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr
import pandas as pd
import plotly.graph_objects as go

from labs.choosing import distillation
from labs.choosing import temperature as dt
from labs.core.models import models
from labs.core.ui import plots, ui
from labs.core.ui.build import Build

COURSE = (f"**Textbook {dt.SECTION.split(' ', 1)[0]}:**\n\n> {dt.QUOTE_LOSS}\n>\n"
          + "\n".join(f"> {q}" for q in dt.QUOTE_TERMS)
          + f"\n>\n> {dt.QUOTE_SOFTMAX[0]}\n>\n> {dt.QUOTE_SOFTMAX[1]}\n>\n> {dt.QUOTE_SOFT}\n\n"
          "Here, on one blank: L_CE = −ln p_student(true word) at T = 1; L_distill = T² · KL(teacher ‖ student) at "
          "temperature T (DistilBERT's training code multiplies the KL by T², Hinton et al. 2015); L_cos = the mean "
          "of 1 − cos between the two models' last hidden states over the sentence's tokens. α = 2, β = 5, γ = 1 "
          "are the weights of DistilBERT's published training command (its `--alpha_mlm 2.0 --alpha_ce 5.0 "
          "--alpha_cos 1.0`: there, “ce” names the soft-target term).")
HEADERS = ["T", "teacher entropy (nats)", "student entropy", "P_teacher(true word)", "P_student(true word)",
           "KL(T)", "L_distill = T²·KL", "L = α·L_CE + β·L_distill + γ·L_cos"]
COLOURS = (plots.BLUE, plots.RED, plots.GREEN, plots.PURPLE, plots.ORANGE, plots.SKY)


def bars(fig, words: list[str], rows: list[dict], key: str, col: int) -> None:
    for row, colour in zip(rows, COLOURS):
        fig.add_trace(go.Bar(x=plots.unique_labels(words), y=row[key], name=f"T = {row['T']:g}", marker_color=colour,
                             showlegend=col == 1, legendgroup=str(row["T"])), row=1, col=col)


def figure(r: dict):
    from plotly.subplots import make_subplots

    if r["measured"]:
        words, rows = [w["token"] for w in r["words"]], r["by_temperature"]
        panels = [(f"Teacher: {r['teacher']}", "teacher"), (f"Student: {r['student']}", "student")]
    else:
        s = r["stand_in"]
        words, rows, panels = [w["token"] for w in s["words"]], s["by_temperature"], [
            (f"Stand-in (not a teacher): {s['model']}, the words before the blank", "probs")]
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=[plots.safe(t) for t, _ in panels],
                        shared_yaxes=True)
    for col, (_, key) in enumerate(panels, 1):
        bars(fig, words, rows, key, col)
    fig.update_annotations(font=dict(size=16, color="#111827"))
    plots.style(fig, "The blank's most likely words, softened: p = softmax(z / T)", 420,
                legend=dict(orientation="h", y=-0.25), margin=dict(l=10, r=10, t=90, b=10))
    fig.update_yaxes(title="probability", row=1, col=1)
    fig.update_xaxes(tickangle=-30)
    return fig


def table(r: dict) -> pd.DataFrame:
    return pd.DataFrame([[f"{x['T']:g}", f"{x['teacher_entropy']:.3f}", f"{x['student_entropy']:.3f}",
                          f"{x['teacher_answer_prob']:.3g}", f"{x['student_answer_prob']:.3g}", f"{x['kl']:.4f}",
                          f"{x['distill']:.4f}", f"{x['loss']:.3f}"] for x in r["by_temperature"]], columns=HEADERS)


def summary(r: dict) -> str:
    if not r["measured"]:
        rows = r["stand_in"]["by_temperature"] if r["stand_in"] else []
        spread = ", ".join(f"T = {x['T']:g}: top word {x['probs'][0]:.3g}, entropy {x['entropy']:.2f} nats"
                           for x in rows)
        return ui.notice(r["note"]) + (f"\n\n**Softening, measured on the stand-in:** {ui.md(spread)}." if rows else "")
    cos = "not defined (hidden sizes differ)" if r["cos"] is None else f"{r['cos']:.4f}"
    w = r["weights"]
    return (f"**{ui.md(r['student'])} learning from {ui.md(r['teacher'])} at this blank** (true word "
            f"“{ui.md(r['answer'])}”): L_CE = **{r['ce']:.3f}**, L_cos = **{cos}**; α = {w['alpha']:g}, "
            f"β = {w['beta']:g}, γ = {w['gamma']:g}. The higher T, the flatter both distributions (their entropy "
            "grows) and the more the student is asked to match the teacher's second and third choices.")


def on_temperature(text, temperatures, teacher, student, alpha, beta, gamma):
    r = dt.distill_temperature(text, temperatures, teacher, student, alpha, beta, gamma)
    return summary(r), figure(r), table(r) if r["measured"] else pd.DataFrame(columns=HEADERS), r


def build() -> SimpleNamespace:
    with gr.Accordion("Distillation with temperature: the teacher's soft targets and the loss", open=True):
        # The textbook writes its symbols in LaTeX, inline ($…$) and displayed ($$…$$): both are rendered.
        gr.Markdown(COURSE, latex_delimiters=[{"left": "$$", "right": "$$", "display": True},
                                              {"left": "$", "right": "$", "display": False}])
        with gr.Row():
            text = gr.Textbox(dt.EXAMPLE, label="A sentence with one [MASK] | its true word", scale=3, max_length=400)
            temps = gr.Textbox("1, 2, 5", label="Temperatures T", scale=1, max_length=60)
        with gr.Row():
            names = models.choice_names(*distillation.FAMILIES)
            teacher = gr.Dropdown(names, value=distillation.TEACHER, label="Teacher", allow_custom_value=True)
            student = gr.Dropdown(names, value=distillation.STUDENT, label="Student", allow_custom_value=True)
            weights = [gr.Number(value, label=name, minimum=0, maximum=100) for value, name in
                       ((dt.ALPHA, "α (L_CE)"), (dt.BETA, "β (L_distill)"), (dt.GAMMA, "γ (L_cos)"))]
        button = gr.Button("Soften and compute the loss", variant="primary")
        found = gr.Markdown()
        plot = gr.Plot(label="The blank's distribution at each temperature")
        frame = ui.table(HEADERS, "The loss's terms at each temperature (the teacher and student pair only)")
        box = ui.result_json()
    return SimpleNamespace(text=text, temps=temps, teacher=teacher, student=student, weights=weights, button=button,
                           outputs=[found, plot, frame, box])


def wire(ctx: Build, p: SimpleNamespace) -> None:
    inputs = [p.text, p.temps, p.teacher, p.student, *p.weights]
    ui.wire([p.button.click, p.text.submit, p.temps.submit], on_temperature, inputs, p.outputs)
    ctx.on_load(on_temperature, inputs, p.outputs)
