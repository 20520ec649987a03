"""Pre-training, panel 8: the recipe. BERT's and GPT-3's learning-rate schedules from transformers' own
schedulers, driving a real torch AdamW with the course's settings."""

from __future__ import annotations

import gradio as gr

from labs.core.ui import ui
from labs.core.ui.build import Build
from labs.pretraining import lr_schedule as ls

Q = ls.QUOTES
APPENDIX = "**Lecture, Week 6, Appendix C: Pre-training Hyperparameters**"
BERT = (f"{APPENDIX} (BERT):\n\n> {Q['recipe_bert_optimizer']}\n>\n> {Q['recipe_bert_steps']}\n\n**Lecture, "
        f"Pre-training Strategies, BERT Training Details:**\n\n> {Q['recipe_bert_details']}").replace("\n- ", "\n> - ")
GPT3 = (f"{APPENDIX} (GPT-3):\n\n> {Q['recipe_gpt3_optimizer']}\n>\n> {Q['recipe_gpt3_schedule']}\n>\n> "
        f"{Q['recipe_gpt3_tokens']}").replace("\n- ", "\n> - ")
COURSE = ("Below, transformers' own schedulers "
          "(`get_linear_schedule_with_warmup`, `get_cosine_schedule_with_warmup`) drive a real `torch.optim.AdamW` "
          "with those betas and weight decay. GPT-3's total, 93,750 steps, is the course's 300B tokens ÷ 3.2M "
          "tokens a batch.")


def points(s: dict) -> str:
    at = dict(zip(s["steps"], s["lr"]))
    half, warm, end = s["warmup_steps"] // 2, s["warmup_steps"], s["total_steps"]
    rows = [("warm-up midpoint", half), ("peak (warm-up ends)", warm), ("end", end)]
    table = "\n".join(f"| {name} | {step:,} | {at[step]:.3e} |" for name, step in rows)
    notes = "\n".join(f"- {ui.md(n)}" for n in s["notes"])
    return (f"| point | step | learning rate |\n|---|---|---|\n{table}\n\n{notes}\n\n**The optimizer as torch "
            f"prints it** (before step 0: `lr` is the scheduler's first value, `initial_lr` the peak):\n\n"
            f"```\n{s['optimizer_repr']}\n```")


def on_schedule(schedule, peak_lr, warmup_steps, total_steps):
    s = ls.lr_schedule(schedule, peak_lr, warmup_steps, total_steps)
    return ls.figure(s), points(s.to_json()), s.to_json()


def course_values(schedule):
    """The course's peak, warm-up and total for the schedule just picked."""
    settings = ls.SETTINGS[ls.check_settings(schedule, 1e-4, 0, 1)[0]]
    return settings["peak_lr"], settings["warmup_steps"], settings["total_steps"]


def build(ctx: Build) -> dict:
    gr.Markdown("## 8. The pre-training recipe: warm-up and decay")
    with gr.Row():
        gr.Markdown(BERT)
        gr.Markdown(GPT3)
    gr.Markdown(COURSE)
    bert = ls.SETTINGS["bert_linear"]
    with gr.Row():
        schedule = gr.Radio([(ls.NAMES[k], k) for k in ls.SCHEDULES], value="bert_linear", label="Schedule", scale=2)
        peak = gr.Number(bert["peak_lr"], label="Peak learning rate", minimum=0)
        warmup = gr.Number(bert["warmup_steps"], label="Warm-up steps", precision=0, minimum=0)
        total = gr.Number(bert["total_steps"], label="Total steps", precision=0, minimum=1,
                          maximum=ls.MAX_STEPS)
    button = gr.Button("Draw the schedule", variant="primary")
    plot = gr.Plot(label="Learning rate at each step")
    details = gr.Markdown()
    result = ui.result_json()
    inputs, outputs = [schedule, peak, warmup, total], [plot, details, result]
    ui.wire(schedule.input, course_values, schedule, [peak, warmup, total]).then(
        ui.friendly(on_schedule), inputs, outputs, api_visibility="private")
    ui.wire([button.click, warmup.submit, total.submit, peak.submit], on_schedule, inputs, outputs)
    ctx.on_load(on_schedule, inputs, outputs)
    return {"lr_schedule": schedule, "peak_lr": peak, "warmup_steps": warmup, "total_steps": total}
