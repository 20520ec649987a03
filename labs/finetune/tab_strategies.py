"""Fine-tune, panel "How to fine-tune: the strategies side by side": one button, a run per strategy on the same
task, data and seed, a table and their curves. The strategies are four classic ones and three parameter-efficient
ones with peft; the table gives trainable parameters, seconds, validation metric and forgetting, and a chart the
rate of each layer under layer-wise learning-rate decay."""

from __future__ import annotations

import gradio as gr
import pandas as pd

from labs.core.ui import course_quotes, plots, ui
from labs.finetune import compare, report, shared_runs, strategies, tab_run, tasks
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
    return button, dict(progress=progress, table=table, curves=curves, rates=rates)


def rates_figure(layer_rates: list[dict], layers: int):
    names = ["embeddings" if r["depth"] == 0 else ("top layer + head" if r["depth"] == layers
                                                   else f"layer {r['depth']}") for r in layer_rates]
    return plots.bar_chart(names, [r["lr"] for r in layer_rates], x_title="peak learning rate",
                           title="Layer-wise learning-rate decay: each layer's rate")


def compare_settings(form, task: str) -> tuple[strategies.Settings, object]:
    """The comparison's settings from the section's values, checked as the `compare_strategies` API checks its
    arguments (the strategy and LoRA's targets are each run's own: compare.plan); the task's built-in data."""
    return compare.api_settings(form.model, task, form.learning_rate, form.epochs, form.batch_size,
                                form.train_examples, form.seed, form.warmup_ratio, form.weight_decay)


async def on_compare(form, task, request: gr.Request = None):
    """The runs, shared with identical comparisons (labs.core.work.jobs), with the queue's place while they
    wait and a progress line while they train; then the table and the charts. form: the settings section's
    values (tab_run.Form); every run uses them but for the strategy (compare.plan)."""
    s, data = compare_settings(form, task)
    runs = len(compare.plan(s))
    ticket = shared_runs.compare_ticket(s, data, owner=request.session_hash, page=True)
    follow = ui.Follow(ticket, lambda step, events: (step.step / step.total_steps, (
        f"Run {sum(isinstance(e, RunResult) for e in events) + 1} of {runs} · step {step.step} of "
        f"{step.total_steps}")))
    async for line in follow:
        yield {"progress": line}
    if follow.gone:  # Stop, or a newer request of this student
        # this page's newer comparison has the outputs now
        yield {} if ticket.replaced_by == "compare" else {"progress": follow.gone_html()}
        return
    finished = [e for e in follow.events if isinstance(e, RunResult)]
    rows = [compare.row(r) for r in finished]
    records = [report.curve_record(r) | {"label": r.settings.strategy} for r in finished]
    llrd = next(r for r in finished if r.settings.strategy.startswith("llrd_"))
    yield {"progress": ui.DONE, "table": pd.DataFrame(compare.table_rows(rows), columns=compare.HEADERS),
           "curves": report.curves_figure(records, "Every strategy, same data and seed", tasks.METRIC[s.task]),
           "rates": rates_figure(llrd.layer_rates, max(r["depth"] for r in llrd.layer_rates))}


def wire(button, outputs: dict, form, task) -> None:
    """form: the settings section's components (tab_run.Form). The comparison is a shared job: it queues with
    Fine-tune's runs for the training slot."""
    ui.wire(button.click, lambda: ui.progress_html(None, STARTING), None, outputs["progress"], queue=False,
            trigger_mode="multiple").then(
        ui.friendly(tab_run.gathered(ui.by_name(on_compare, outputs))), [*form.inputs(), task], list(outputs.values()),
        api_visibility="private", concurrency_id="finetune-follow", concurrency_limit=None, show_progress="minimal",
        show_progress_on=[outputs["curves"]], trigger_mode="multiple")
