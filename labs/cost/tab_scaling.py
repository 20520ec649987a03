"""Cost & scale, the last panels: Chinchilla's compute-optimal N and D, Part B's carbon exercise
answered with its assumptions, and the course's figures beside the calculator's estimates."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from labs.core.ui import ui
from labs.core.ui.build import Build
from labs.cost import course, presets, scaling
from labs.cost.figures import count, scaling_figure, sci

GPT3_COMPUTE = 6 * 175e9 * 300e9
COURSE_HEADERS = ["The figure: the course's words, or LM Lab's", "The calculator's estimate", "Note"]


def on_scaling(compute):
    r = scaling.chinchilla(compute)
    gpt3 = next(m for m in r["models"] if m["model"] == "GPT-3 175B")
    text = (f"**C = {sci(r['compute'])} FLOPs → N = √(C / 120) = {count(r['params'])} parameters, D = 20·N = "
            f"{count(r['tokens'])} tokens** (C = 6·N·D with D = 20·N; Hoffmann et al. 2022).\n\n"
            f"GPT-3 trained {count(gpt3['params'])} parameters on {count(gpt3['tokens'])} tokens "
            f"({gpt3['tokens_per_param']:.1f} tokens per parameter); for its compute the rule gives "
            f"{count(gpt3['optimal_params'])} parameters on {count(gpt3['optimal_tokens'])} tokens: a smaller model "
            "trained on more data. Chinchilla 70B sits on the line (20 tokens per parameter).")
    return text, scaling_figure(r), r


def exercise_text(r: dict) -> str:
    steps = "\n".join(f"{i}. {ui.md(step)}" for i, step in enumerate(r["steps"], 1))
    return (f"**Fine-tune: {r['finetune_tonnes']:,.2f} t CO₂e, ${r['finetune_cost']:,.0f}, a saving of "
            f"{r['saving_percent']:.2f} %.**\n\n{steps}\n\n*Sources:* {ui.md(r['source'])}")


def on_exercise(full_mwh, full_tonnes, full_cost, finetune_mwh) -> str:
    return exercise_text(course.carbon_exercise(full_mwh, full_tonnes, full_cost, finetune_mwh))


def figure_cell(r: dict) -> str:
    """The figure's label, where it is from and the course's words exactly as written (LaTeX's \\$ included), in
    code spans."""
    def span(q: str) -> str:
        return "`" + q.replace("|", "\\|").replace("`", "'").replace("\t", " · ") + "`"

    if len(set(r.get("quote_sources", []))) > 1:  # the documents give it more than once: each with its place
        return f"**{ui.md(r['figure'])}**: " + "; ".join(
            f"{ui.md(where)} {span(q)}" for where, q in zip(r["quote_sources"], r["quotes"]))
    words = " ".join(span(q) for q in r["quotes"])
    return f"**{ui.md(r['figure'])}**: {ui.md(r['source'])}" + (f" {words}" if words else "")


def course_table() -> str:
    """A Markdown table: it wraps, reads in the body font and never scrolls (a projector's needs)."""
    rows = [f"| {figure_cell(r)} | {ui.md(r['estimate'])} | {ui.md(r['note'])} |" for r in course.course_figures()]
    return "\n".join([f"| {' | '.join(COURSE_HEADERS)} |", "|---|---|---|", *rows])


def build() -> SimpleNamespace:
    gr.Markdown("## 6. Scaling laws: the compute-optimal N and D for a budget")
    with gr.Row():
        budget = gr.Number(GPT3_COMPUTE, label="Compute budget C (FLOPs), e.g. 3.15e23 = GPT-3")
        run = gr.Button("Split the budget", scale=0)
    with gr.Row():
        text = gr.Markdown()
        plot = gr.Plot(label="Scaling law")
    with gr.Accordion("The scaling result as JSON", open=False):
        box = gr.JSON()
    gr.Markdown("## 7. Part B's carbon exercise")
    with gr.Row():
        full = [gr.Number(presets.GPT3_MWH, label="GPT-3 training energy (MWh)"),
                gr.Number(presets.GPT3_TONNES, label="GPT-3 emissions (t CO₂e)"),
                gr.Number(presets.GPT3_COST, label="GPT-3 cost ($)"),
                gr.Number(presets.FINETUNE_MWH, label="Fine-tuning energy (MWh)")]
    answer_button = gr.Button("Answer the exercise")
    answer = gr.Markdown(exercise_text(course.carbon_exercise()))
    gr.Markdown("## 8. The course's figures, checked")
    table = gr.Markdown(course_table())
    return SimpleNamespace(budget=budget, run=run, outputs=[text, plot, box], full=full, answer_button=answer_button,
                           answer=answer, table=table)


def wire(ctx: Build, p: SimpleNamespace) -> None:
    ui.wire([p.run.click, p.budget.submit], on_scaling, p.budget, p.outputs)
    ctx.on_load(on_scaling, p.budget, p.outputs)
    ui.wire([p.answer_button.click, *(n.submit for n in p.full)], on_exercise, p.full, p.answer)
