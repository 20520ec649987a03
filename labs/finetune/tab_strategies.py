"""Fine-tune, the panel "How to fine-tune: the strategies side by side": one button, a run per strategy (four
classic ones and three parameter-efficient ones with peft) on the same task, data and seed, a table (trainable
parameters, seconds, validation metric, forgetting), their curves and the rate of each layer under layer-wise
learning-rate decay."""

from __future__ import annotations

import html

import gradio as gr
import pandas as pd

from labs.core.ui import course_quotes, plots, ui
from labs.core.work.jobs import JobGone, Queued
from labs.finetune import compare, report, shared_runs, strategies, tasks
from labs.finetune.training import RunResult

STARTING = "Starting the runs…"
TITLE = "How to fine-tune: the strategies side by side (LoRA, prompt and prefix tuning included)"
BUTTON = "Run every strategy"
RATES_NOTE = (f"**Each strategy's learning rate** (the table's second column): the encoder's strategies use yours; "
              f"feature extraction at least {compare.FEATURES_RATE:g}, LoRA (r = {compare.LORA_RANK}) at least "
              f"{compare.LORA_RATE:g}, prompt and prefix tuning ({strategies.VIRTUAL_TOKENS} virtual tokens) at least "
              f"{compare.PROMPT_RATE:g}, as peft's guide to prompt-based methods trains them: these few new weights "
              "start from scratch (LoRA's B at zero, the prompts random) and learn slowly at the encoder's 5e-5. Trainable parameters of the peft rows are "
              "peft's own count (`get_nb_trainable_parameters`, the task head included). Prompt and prefix tuning "
              "change no weight of the encoder: their forgetting columns measure the encoder without the virtual "
              "tokens. Prompt tuning runs on the sentence tasks only (its virtual tokens would move NER's and QA's "
              "labelled positions). The course (" + course_quotes.get("prompt_tuning").cite + "): “"
              + course_quotes.text("prompt_tuning") + "”.")


def section() -> tuple:
    with gr.Accordion(TITLE, open=False):
        gr.Markdown("Feature extraction, partial fine-tuning (the bottom half frozen), full fine-tuning, "
                    "layer-wise learning-rate decay (layer l learns at lr · ξ^(L − l), "
                    f"ξ = {strategies.LLRD_DECAY}), then LoRA, prompt tuning and prefix tuning (peft) on the chosen "
                    "task's built-in data, with the model, learning rate, epochs, batch size, examples and seed set "
                    "above.")
        button = gr.Button(BUTTON, variant="primary")
        progress = gr.HTML()
        table = ui.table(compare.HEADERS, "The strategies")
        gr.Markdown(RATES_NOTE, elem_classes=["lab-secondary"])
        curves = gr.Plot(label="The runs")
        rates = gr.Plot(label="Layer-wise decay: the learning rate of each layer")
    return button, [progress, table, curves, rates]


def rates_figure(layer_rates: list[dict], layers: int):
    names = ["embeddings" if r["depth"] == 0 else ("top layer + head" if r["depth"] == layers
                                                   else f"layer {r['depth']}") for r in layer_rates]
    return plots.bar_chart(names, [r["lr"] for r in layer_rates], x_title="peak learning rate",
                           title="Layer-wise learning-rate decay: each layer's rate")


async def on_compare(model_name, lr, epochs, batch_size, n_train, seed, warmup, decay, task,
                     request: gr.Request = None):
    """The runs, shared with identical comparisons (labs.core.work.jobs), with the queue's place while they
    wait and a progress line while they train; then the table and the charts."""
    data = tasks.task_data(task)
    s = strategies.check_settings(model_name, "full", lr, epochs, batch_size, n_train, seed, warmup, decay,
                                  max_train=len(data.train), task=task)
    runs = len(compare.plan(s))
    finished, ticket = [], shared_runs.compare_ticket(s, data, owner=request.session_hash, page=True)
    try:
        async for event in ticket:
            if isinstance(event, Queued):
                yield (ui.progress_html(None, html.escape(f"Waiting for the training slot: {event.words()}.")),
                       *(gr.update(),) * 3)
            elif isinstance(event, RunResult):
                finished.append(event)
            elif getattr(event, "step", 0) % 5 == 1 and not ticket.behind:
                yield (ui.progress_html(event.step / event.total_steps, html.escape(
                    f"Run {len(finished) + 1} of {runs} · step {event.step} of {event.total_steps}")), *(gr.update(),) * 3)
    except JobGone as gone:  # Stop, or a newer request of this student
        if ticket.replaced_by == "compare":  # this page's newer comparison has the outputs now
            yield (gr.skip(),) * 4
        else:
            yield (ui.progress_html(None, html.escape(str(gone))), *(gr.update(),) * 3)
        return
    rows = [compare.row(r) for r in finished]
    records = [report.curve_record(r) | {"label": r.settings.strategy} for r in finished]
    llrd = next(r for r in finished if r.settings.strategy.startswith("llrd_"))
    yield (ui.DONE, pd.DataFrame(compare.table_rows(rows), columns=compare.HEADERS),
           report.curves_figure(records, "Every strategy, same data and seed", tasks.METRIC[s.task]),
           rates_figure(llrd.layer_rates, max(r["depth"] for r in llrd.layer_rates)))


def wire(button, outputs, values: list, task) -> None:
    """values: the settings section's components (model, kind, n, targets, lr, epochs, batch, n_train, seed,
    warmup, decay). The comparison is a shared job: it queues with Fine-tune's runs for the training slot."""
    model, _, _, _, *rest = values
    ui.wire(button.click, lambda: ui.progress_html(None, STARTING), None, outputs[0], queue=False,
            trigger_mode="multiple").then(
        ui.friendly(on_compare), [model, *rest, task], outputs, api_visibility="private",
        concurrency_id="finetune-follow", concurrency_limit=None, show_progress="minimal",
        show_progress_on=[outputs[2]], trigger_mode="multiple")
