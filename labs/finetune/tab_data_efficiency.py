"""Fine-tune, panel "How little labelled data pre-training needs": accuracy against the number of labelled examples,
pre-trained vs from scratch, on one button. It is a shared job (a class pressing it with the same settings trains
once), shown beside the lecture's worked example of data efficiency, quoted."""

from __future__ import annotations

import gradio as gr
import pandas as pd

from labs.core.ui import ui
from labs.core.ui.build import Build
from labs.finetune import data_efficiency as de
from labs.finetune import tab_long_run, tasks
from labs.finetune.training import RunResult, Step

TITLE = "How little labelled data pre-training needs"
BUTTON = "Draw the data-efficiency curve"
HEADERS = ["labelled examples", "pre-trained", "from scratch", "gap (points)"]
SENTENCE_TASKS = [(tasks.TASKS[t].split(" (")[0], t) for t in tasks.TASKS]


def course_markdown() -> str:
    lines = "<br>".join(ui.md(line) for line in de.WORKED_EXAMPLE)
    return (f"**The course ({de.LECTURE}, slide “{ui.md(de.SLIDE)}”):**<blockquote>{lines}</blockquote>"
            f"And the ULMFiT paper's abstract ({de.ULMFIT_WHERE[0]}, slide “{de.ULMFIT_WHERE[1]}”): "
            f"“{ui.md(de.ULMFIT_CLAIM)}”")


def rows(result: dict) -> pd.DataFrame:
    return pd.DataFrame([[p["size"], f"{p['pretrained']:.1%}", f"{p['scratch']:.1%}",
                          f"{100 * (p['pretrained'] - p['scratch']):+.1f}"] for p in result["points"]], columns=HEADERS)


def summary(result: dict) -> str:
    first, last = result["points"][0], result["points"][-1]
    s = result["settings"]
    return (f"**{ui.md(result['model'])}, {ui.md(tasks.METRIC_WORDS[result['metric']])} on the {result['validation']} "
            f"validation examples:** with {first['size']} labelled examples the pre-trained model reaches "
            f"**{first['pretrained']:.1%}**, the same architecture from random weights **{first['scratch']:.1%}**; with "
            f"{last['size']}, {last['pretrained']:.1%} vs {last['scratch']:.1%}. Every run: full fine-tuning, "
            f"{s['epochs']} epochs, batch {s['batch_size']}, learning rate {s['learning_rate']:g}, seed {result['seed']} "
            f"(the same examples for both). Here pre-training is a small encoder's; the lecture's example is GPT-2 "
            "against an LSTM, not measured here.")


async def on_curve(model, task, sizes, seed, request: gr.Request = None):
    plan, data = de.check(model, task, de.parse_sizes(sizes), seed)
    follow = ui.Follow(de.ticket(plan, data, owner=getattr(request, "session_hash", None), page=True),
                       lambda step, events: step_words(plan, step, events))
    async for line in follow:
        yield {"progress": line}
    if follow.gone:
        yield {"progress": follow.gone_html()}
        return
    result = de.curve_json(plan, data, [e for e in follow.events if isinstance(e, RunResult)])
    yield {"progress": ui.DONE, "chart": de.curve_figure(result), "table": rows(result), "words": summary(result),
           "result": result}


def step_words(plan: list, step: Step, events: list) -> tuple[float, str]:
    """The progress line: the size being trained, pre-trained or from scratch, and its step."""
    done = sum(isinstance(e, RunResult) for e in events)
    return (done / (2 * len(plan)),
            f"{plan[done // 2].train_examples} examples, {step.phase}: step {step.step} of {step.total_steps}")


def build(ctx: Build, model) -> dict:
    """The panel (the model is the lab's encoder dropdown); returns the inputs a link may set."""
    with gr.Accordion(TITLE, open=False, elem_id="ft-data-efficiency"):
        gr.Markdown("The same architecture learns the task from 8, 16, 32, … labelled examples, once from its "
                    "**pre-trained** weights and once from **random** weights (everything else equal). "
                    "The gap at the left of the chart is what pre-training is worth when labels are scarce.")
        gr.Markdown(course_markdown(), elem_classes=["lab-secondary"])
        with gr.Row():
            task = gr.Dropdown(SENTENCE_TASKS, value="sentiment", label="Task (its built-in data)")
            sizes = gr.Textbox(", ".join(map(str, de.SIZES)), label="Labelled examples (capped at the training set)",
                               max_length=80)
            seed = gr.Number(0, label="Seed", precision=0, minimum=0)
        controls = tab_long_run.buttons(BUTTON)
        progress, chart = gr.HTML(), gr.Plot(label="Accuracy against labelled examples")
        table, words, result = ui.table(HEADERS, "The curve's points"), gr.Markdown(), ui.result_json()
    outputs = dict(progress=progress, chart=chart, table=table, words=words, result=result)
    tab_long_run.wire(controls, on_curve, [model, task, sizes, seed], outputs, [chart])
    return {"de_task": task, "de_sizes": sizes, "de_seed": seed}
