"""Fine-tune, how little labelled data pre-training needs: the same architecture trained on 8, 16, 32, …
labelled examples, once from its pre-trained weights and once from random weights, every other setting equal
(the lab's training loop, the same examples, order and head seed). One curve is one shared job (labs.core.work.
jobs): a class asking for the same curve trains it once; other curves queue for the training slot.

Beside it, the lecture's worked example of data efficiency, quoted verbatim."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import AsyncIterator, Iterator

import plotly.graph_objects as go

from labs.core.errors import BadInput, check_int
from labs.core.models import models
from labs.core.ui import course_quotes, plots
from labs.core.work.jobs import JOBS, Queued, Ticket
from labs.finetune import tasks
from labs.finetune.data import number_parts
from labs.finetune.shared_runs import data_key
from labs.finetune.strategies import ENCODER_FAMILIES, Settings, check_settings
from labs.finetune.training import RunResult, Step, train

SIZES = (8, 16, 32, 64, 128, 256)
MAX_SIZES = 8
# Every point trains with one recipe: small sets see few updates, as they would in practice. 1e-4 (twice the
# lab's default): 8 examples at batch 8 make 5 updates; measured on all-MiniLM-L6-v2, seed 0: 8 → 60 %, 32 → 81 %.
EPOCHS, BATCH, RATE = 5, 8, 1e-4
OVERHEAD_STEPS = 4  # loading and the evaluations of one run, in training steps' time
SECONDS_PER_STEP = 0.15  # a first guess (MiniLM, batch 8, 2 cores), replaced by measured runs
LECTURE = "Lecture, Week 6"
SLIDE = "Worked Example: Data Efficiency of Pre-training"
# The slide's lines, in order, and ULMFiT's claim: course_quotes' entries (checked under their headings).
WORKED_EXAMPLE = tuple(q.text for q in course_quotes.QUOTES if q.id.startswith("data_efficiency_")
                       and q.id[len("data_efficiency_"):].isdigit())
ULMFIT_WHERE = ("Lecture, Pre-training Strategies", "ULMFiT")  # the paper's abstract on the slide
ULMFIT_CLAIM = course_quotes.text("data_efficiency_ulmfit")


def check(model, task="sentiment", sizes=None, seed=0) -> tuple[list[Settings], object]:
    """One run's settings per size (smallest first, at most the task's training set), and the task's data."""
    task = tasks.check_task(task)
    data = tasks.task_data(task)
    wanted = list(SIZES) if sizes in (None, "", []) else parse_sizes(sizes) if isinstance(sizes, str) else sizes
    if not isinstance(wanted, (list, tuple)) or not 1 <= len(wanted) <= MAX_SIZES:
        raise BadInput(f"sizes is a list of 1 to {MAX_SIZES} numbers of labelled examples, e.g. {list(SIZES)}.")
    cap = len(data.train)
    picked = sorted({min(check_int(n, "Each size", 8, 10**6), cap) for n in wanted})
    models.check_family(models.get_choice(model), ENCODER_FAMILIES)
    return [check_settings(model, "full", RATE, EPOCHS, BATCH, n, seed, max_train=cap, task=task)
            for n in picked], data


def units(plan: list[Settings]) -> int:
    """The curve's training steps (pre-trained and from scratch), plus each run's fixed costs."""
    return sum(2 * (math.ceil(s.train_examples / s.batch_size) * s.epochs + OVERHEAD_STEPS) for s in plan)


def run_curve(plan: list[Settings], data, stop=None) -> Iterator:
    """For each size, the pre-trained run then the same from scratch: every event (RunResults included)."""
    for s in plan:
        for scratch in (False, True):
            yield from train(s, data, scratch, stop, keep_for_try=False, probe=False)
            if stop is not None and stop.is_set():
                return


def points(results: list[RunResult]) -> list[dict]:
    """One point per size: the validation metric after training with pre-trained and with random weights."""
    by_size: dict[int, dict] = {}
    for r in results:
        point = by_size.setdefault(r.settings.train_examples, {"size": r.settings.train_examples})
        key = "scratch" if r.phase == "from scratch" else "pretrained"
        point[key], point[f"{key}_before"] = r.accuracy_after, r.accuracy_before
        point[f"{key}_seconds"] = round(r.seconds, 2)
    return [by_size[n] for n in sorted(by_size)]


def curve_json(plan: list[Settings], data, results: list[RunResult]) -> dict:
    s = plan[0]
    return {"model": s.model, "task": s.task, "metric": tasks.METRIC[s.task], "seed": s.seed,
            "sizes": [p.train_examples for p in plan], "train_available": len(data.train),
            "validation": len(data.validation),
            "settings": {"epochs": EPOCHS, "batch_size": BATCH, "learning_rate": RATE, "strategy": "full"},
            "points": points(results),
            "course": {"document": LECTURE, "slide": SLIDE, "lines": list(WORKED_EXAMPLE)}}


JOBS.kind("data_efficiency", seconds_per_unit=SECONDS_PER_STEP, gpu=True)


def ticket(plan: list[Settings], data, owner: str | None = None, page: bool = False) -> Ticket:
    """Follow the curve with these settings (identical curves are trained once and shared)."""
    return JOBS.submit("data_efficiency", (tuple(dataclasses.astuple(s) for s in plan), data_key(data)),
                       lambda control: run_curve(plan, data, control), units=units(plan), owner=owner,
                       replace_running=page)


def progress_json(event: Step, done: int, runs: int) -> dict:
    return {"status": "running", "run": done + 1, "runs": runs, "phase": event.phase, "step": event.step,
            "total_steps": event.total_steps}


async def data_efficiency_stream(model: str, task: str = "sentiment", sizes: list | None = None,
                                 seed: int = 0) -> AsyncIterator[dict]:
    """The `data_efficiency` API: the queue's place while it waits, the progress, then the curve's JSON."""
    plan, data = check(model, task, sizes, seed)
    results = []
    async for event in ticket(plan, data):
        if isinstance(event, Queued):
            yield event.to_json()
        elif isinstance(event, RunResult):
            results.append(event)
        elif isinstance(event, Step):
            yield progress_json(event, len(results), 2 * len(plan))
    yield curve_json(plan, data, results)


def data_efficiency(model: str, task: str = "sentiment", sizes: list | None = None, seed: int = 0) -> dict:
    """The curve here and now, without the queue (tests; a script that runs the lab's code directly)."""
    plan, data = check(model, task, sizes, seed)
    return curve_json(plan, data, [e for e in run_curve(plan, data) if isinstance(e, RunResult)])


def parse_sizes(text) -> list[int]:
    """"8, 16, 32" (a page's box) as a list; a list passes through. The checks are check()'s."""
    if isinstance(text, (list, tuple)):
        return list(text)
    parts = number_parts(text)
    if not parts:
        return list(SIZES)
    try:
        return [int(float(p)) for p in parts]
    except ValueError:
        raise BadInput(f"Sizes are whole numbers separated by commas, such as {', '.join(map(str, SIZES))}.") from None


def curve_figure(result: dict):
    """Validation metric against the number of labelled examples (log scale), pre-trained vs from scratch."""
    sizes = [p["size"] for p in result["points"]]
    fig = go.Figure()
    for key, name, colour, dash in (("pretrained", "pre-trained", plots.BLUE, "solid"),
                                    ("scratch", "from scratch (same architecture)", plots.RED, "dash")):
        fig.add_trace(go.Scatter(x=sizes, y=[p.get(key) for p in result["points"]], name=name, mode="lines+markers",
                                 line=dict(color=colour, width=3, dash=dash), marker=dict(size=11)))
    fig.update_xaxes(type="log", tickvals=sizes, ticktext=[str(n) for n in sizes], title="labelled examples")
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%", title=f"validation {tasks.METRIC_WORDS[result['metric']]}")
    title = plots.safe(f"{result['model']}: how many labelled examples it takes")
    return plots.style(fig, title, 420, legend=dict(orientation="h", y=-0.25))
