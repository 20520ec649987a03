"""Fine-tune, following a run: the handler behind the Fine-tune button follows a shared job (labs.core.work.jobs)
until its results; Stop leaves the run. While the job waits it shows the place in the queue; while it trains, the
live curves (one figure per point of the run, shared by every student who follows it); then the results."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import html
import inspect
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import cachetools
import gradio as gr
import pandas as pd

from labs.core.ui import ui
from labs.core.work.jobs import JobGone, Queued
from labs.finetune import report, shared_runs, strategies, tab_long_run, tasks, training
from labs.finetune.data import Dataset, builtin_data

SAMPLE_HEADERS = ["sentence", "true label", "before", "after"]
RUNS_HEADERS = ["run", "strategy", "learning rate", "epochs", "trainable", "accuracy before", "accuracy after",
                "seconds", "retrieval (forgetting)"]
LEFT = ("You left this run. It goes on for the other students who follow it; the curves above are where it "
        "was. Press Fine-tune to follow it again.")


@dataclass(frozen=True)
class Form:
    """The settings section's values as the page holds them, unchecked: the strategy as a kind and its N (layers
    frozen, LoRA's rank, virtual tokens). The section builds a Form of its components (`inputs()`: an event's
    inputs, in field order); `gathered` hands a handler a Form of their values. `settings` checks them into the
    lab's one settings object, strategies.Settings, which the runs and the API endpoints take too."""
    model: Any
    kind: Any
    n: Any
    lora_targets: Any
    learning_rate: Any
    epochs: Any
    batch_size: Any
    train_examples: Any
    seed: Any
    warmup_ratio: Any
    weight_decay: Any

    def inputs(self) -> list:
        return [getattr(self, f.name) for f in dataclasses.fields(self)]

    def settings(self, data: Dataset, task: str = "sentiment", cap: bool = True) -> strategies.Settings:
        """The checked settings for a run on `data`. cap: at most what the data has (an event sent before a
        smaller set arrived still carries the slider's default)."""
        n_train = self.train_examples
        n_train = min(n_train, len(data.train)) if cap and isinstance(n_train, (int, float)) else n_train
        return strategies.check_settings(self.model, strategies.strategy_name(self.kind, self.n), self.learning_rate,
                                         self.epochs, self.batch_size, n_train, self.seed, self.warmup_ratio,
                                         self.weight_decay, self.lora_targets, max_train=len(data.train), task=task)


def gathered(fn):
    """fn(form, *rest) as Gradio calls it: with the Form's fields one by one, then the rest (a gr.Request too)."""
    count = len(dataclasses.fields(Form))
    if inspect.isasyncgenfunction(fn):  # a streaming handler stays one, for Gradio and ui.friendly
        @functools.wraps(fn)
        async def wrapper(*values, **kwargs):
            async for out in fn(Form(*values[:count]), *values[count:], **kwargs):
                yield out
    else:
        @functools.wraps(fn)
        def wrapper(*values, **kwargs):
            return fn(Form(*values[:count]), *values[count:], **kwargs)

    signature = inspect.signature(fn)
    fields = [inspect.Parameter(f.name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for f in dataclasses.fields(Form)]
    wrapper.__signature__ = signature.replace(parameters=fields + list(signature.parameters.values())[1:])
    return wrapper


def settings_from(form: Form, chosen: Dataset | None, task: str = "sentiment") -> tuple[strategies.Settings, Dataset]:
    """The checked settings and the data they run on (None = the built-in set; other tasks: their set)."""
    chosen = (chosen or builtin_data()) if task == "sentiment" else tasks.task_data(task)
    return form.settings(chosen, task), chosen


def sample_frame(result: training.RunResult) -> pd.DataFrame:
    return pd.DataFrame([[x["text"], x["label"], f"{x['before']['label']} ({x['before']['prob']:.0%})",
                          f"{x['after']['label']} ({x['after']['prob']:.0%})"] for x in result.samples],
                        columns=SAMPLE_HEADERS)


def runs_table(runs: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([[r["label"].split(":")[0], r["strategy"], r["lr"], r["epochs"], f"{r['trainable']:,}",
                          f"{r['before']:.1%}", f"{r['after']:.1%}", f"{r['seconds']:.1f}", r.get("forgetting", "–")]
                         for r in runs],
                        columns=RUNS_HEADERS)


async def on_run(form: Form, chosen, with_scratch, runs, task="sentiment", request: gr.Request = None):
    """A live run: the curves redrawn as it trains, then the results and the run history. The run is shared
    with every student who asked for the same one (labs.core.work.jobs); while it waits, the place in the queue.
    Stop (or a closed page) leaves it: it stops after the current step if nobody else follows it. Yields the
    outputs by name (tab.results_section)."""
    s, chosen = settings_from(form, chosen, task)
    ticket = shared_runs.run_ticket(s, chosen, bool(with_scratch), owner=request.session_hash,
                                    page=True)
    live = report.LiveRun(2 if with_scratch else 1)
    live.task_metric = tasks.METRIC[s.task]
    try:
        async for event in ticket:
            if isinstance(event, Queued):
                yield {"progress": ui.progress_html(None, queued_words(event, ticket))}
            elif live.add(event) and not ticket.behind:
                yield {"progress": ui.progress_html(*live.progress(shared_words(ticket))),
                       "curves": live_figure(ticket, live)}
    except JobGone as gone:  # Stop while others follow the run, or a newer request replaced this one
        if ticket.replaced_by == "finetune":  # this page's newer run has the outputs now
            yield {}
        else:
            yield {"progress": ui.progress_html(None, html.escape(str(gone)) if ticket.replaced_by else LEFT)}
        return
    # The run's own views are the same for every follower: built once (in a thread: the page's other
    # events go on meanwhile); the history is this student's.
    progress, figure, summary, samples, result = await asyncio.get_running_loop().run_in_executor(
        _views_pool, run_views, ticket, live)
    runs = report.with_history(runs, live)
    yield {"progress": progress, "curves": figure, "summary": summary, "samples": samples,
           "run_id": live.finished[0].run_id, "runs": runs,
           "history": report.curves_figure(runs, "Your last runs", report.runs_metric(runs)),
           "history_table": runs_table(runs), "result": result}


# Its own threads, not asyncio's default pool (6 threads on 2 cores), which Part B's workbook also fills with
# endpoint calls that run many forward passes (labs/part_b/evidence.py): a run's last views never queue behind them.
_views_pool = ThreadPoolExecutor(2, thread_name_prefix="finetune views")
_views = cachetools.LRUCache(16)  # job -> its finished views (progress line, figure, summary, samples, JSON)
_views_lock = threading.Lock()


def run_views(ticket, live: report.LiveRun) -> tuple:
    with _views_lock:  # built by the first follower; the others wait for it and share it
        views = _views.get(ticket.job)
        if views is None:
            main = live.finished[0]
            done = ui.progress_html(1, f"Done. {ticket.job.served}") if ticket.job.served else ui.DONE
            views = _views[ticket.job] = (stopped() if main.stopped else done, live.final_figure(),
                                          live.summary(), sample_frame(main), training.experiment_json(live.finished))
        return views


def queued_words(place: Queued, ticket) -> str:
    """The waiting line: the place in the queue and the estimate (escaped HTML)."""
    replaced = " Your earlier waiting run was replaced by this one." if ticket.replaced else ""
    return html.escape(f"Waiting for the training slot: {place.words()}. Stop leaves the queue.{replaced}")


def shared_words(ticket) -> str:
    """Who else follows this run (a class pressing the same button trains once), and where it runs when that is
    worth saying (ZeroGPU: on the GPU, or on the CPU when the GPU time is used up)."""
    others = len(ticket.job.followers) - 1
    if ticket.from_store:
        return "the same run was trained a moment ago; here is its result"
    shared = f"shared with {others} other student{'s' if others != 1 else ''}" if others > 0 else ""
    return " · ".join(words for words in (shared, ticket.job.served) if words)


_figures = cachetools.LRUCache(16)  # (job, events seen) -> the live figure: followers at one point share it
_figures_lock = threading.Lock()  # on_run runs on Gradio's event loop; the lock keeps it whole from any thread


def live_figure(ticket, live: report.LiveRun):
    key = (ticket.job, ticket.cursor)
    with _figures_lock:
        figure = _figures.get(key)
    if figure is None:
        figure = live.live_figure()
        with _figures_lock:
            figure = _figures.setdefault(key, figure)  # a follower that drew it meanwhile: one figure for all
    return figure


def stopped() -> str:
    return ui.progress_html(1, "Stopped.")


def on_stop(request: gr.Request) -> str:
    """Stop: a run this student alone follows stops after the current step; a shared one goes on for the
    others (this student leaves it, keeping the curves so far); a waiting one leaves the queue."""
    return tab_long_run.stop_answer(request.session_hash, LEFT)
