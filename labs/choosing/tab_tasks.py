"""Choosing a model, panel: which model for which task (B4). A task card; the student picks an
architecture and a head; the pick is checked against the course's table and, where this server has the
matching kind of model, it runs on the student's text."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from labs.choosing import tasks
from labs.core.ui import ui
from labs.core.ui.build import Build


def on_task(task_key):
    task = tasks.TASKS[task_key]
    return f"### Task card\n**{task.card}**", task.example


def verdict(r: dict) -> str:
    arch = "✅ right" if r["architecture_right"] else f"❌ the course's pick is **{r['course_pick']['architecture']}**"
    head = "✅ right" if r["head_right"] else f"❌ the course's pick is **{r['course_pick']['head']}**"
    lines = [f"- Architecture **{r['architecture']}**: {arch}", f"- Head **{r['head']}**: {head}",
             f"\n**Why.** {r['why']}"]
    if r["output"] is not None:
        lines.append(f"\n**{ui.md(r['model'])} wrote:** {ui.md(r['output'])}  \n({ui.md(r['note'])})")
    elif r["note"]:
        lines.append(f"\n{ui.notice(r['note'])}")
    return "\n".join(lines)


def on_check(task_key, architecture, head, text):
    loaded = tasks.runner_for(tasks.TASKS[task_key])  # the model resolved once, or None
    r = tasks.check_pick(task_key, architecture, head, text, loaded).to_json()
    return verdict(r)


def build() -> SimpleNamespace:
    gr.Markdown("## 5. Which model for which task (B4)")
    with gr.Row():
        task = gr.Radio([(t.card.split(":")[0], t.key) for t in tasks.TASKS.values()], value="classify",
                        label="Task")
        architecture = gr.Radio(list(tasks.ARCHITECTURES), value=None, label="Your pick: architecture")
        head = gr.Radio(list(tasks.HEADS), value=None, label="Your pick: head")
    card = gr.Markdown()
    text = gr.Textbox(label="Your text (the matching model runs on it where this server has one)", max_length=2000)
    check = gr.Button("Check my pick", variant="primary")
    answer = gr.Markdown()
    return SimpleNamespace(task=task, architecture=architecture, head=head, card=card, text=text, check=check,
                           answer=answer)


def wire(ctx: Build, p: SimpleNamespace) -> None:
    ctx.on_load(on_task, p.task, [p.card, p.text])
    ui.wire(p.task.change, on_task, p.task, [p.card, p.text])
    ui.wire(p.check.click, on_check, [p.task, p.architecture, p.head, p.text], p.answer)
