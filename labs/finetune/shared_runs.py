"""Fine-tune, runs as shared jobs (labs.core.work.jobs): a class pressing the same button trains once, and different
runs queue fairly for the training slots. A fine-tune run and the strategy comparison are keyed by everything that
determines their result (the settings, the data's content, from scratch or not).

The `finetune` and `compare_strategies` API endpoints are here: they stream {"status": "queued", "ahead",
"eta_s"} while the job waits, then what they streamed before (the running events and the result)."""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import AsyncIterator

from labs.core.models import models
from labs.core.work.jobs import JOBS, Queued, Ticket
from labs.finetune import compare, tasks, training
from labs.finetune.data import Dataset
from labs.finetune.strategies import Settings, apply_strategy
from labs.finetune.training import RunResult, Step

OVERHEAD_STEPS = 12  # loading, evaluating and the forgetting probe of one run, in training steps' time
# A first guess of a step's time (MiniLM, batch 16, 2 cores: one default run ≈ 13 s for 39 steps and the
# overhead); replaced by the run times measured on this server as soon as a run finishes.
SECONDS_PER_STEP = 0.25


def _still_whole(events: list) -> bool:
    """A kept run is served again only while the model it trained is still in memory ("try your model")."""
    return all(training.is_kept(e.run_id) for e in events if isinstance(e, RunResult) and e.run_id)


def ship_kept(event):
    """With Ray (labs.core.work.ray_jobs), on the worker that trained it: a run's result leaves with its trained
    weights (a state dict: a model that has run holds transformers' hooks, which do not pickle), its tokenizer
    and labels; the worker forgets the model."""
    if isinstance(event, RunResult) and event.run_id:
        kept = training.take_kept(event.run_id)
        if kept is not None:
            model, tokenizer, labels, task = kept
            return event, ({k: v.detach().cpu() for k, v in model.state_dict().items()}, tokenizer, labels, task)
    return event


def receive_kept(event):
    """In the front-end: the run's model is built again (the checkpoint with the task's head and the run's
    strategy, then its trained weights) and kept under the run's id, so "try your model" works here."""
    if not (isinstance(event, tuple) and len(event) == 2 and isinstance(event[0], RunResult)):
        return event
    result, (state, tokenizer, labels, task) = event
    s = result.settings
    if task == "sentiment":
        model, _ = models.load_for_classification(s.model, len(labels), scratch=False, seed=s.seed)
    else:
        model, _ = models.load_for_task(s.model, tasks.HEADS[task], labels=labels or None, scratch=False, seed=s.seed)
    model = apply_strategy(model, s.strategy, s.lora_targets)
    model.load_state_dict(state)
    training.keep_as(result.run_id, (model.to(models.pick_device()), tokenizer, labels, task))
    return result


# With Ray or ZeroGPU, a run trains in another process and its last event brings the trained model back ("try
# your model"); on ZeroGPU the runs (and every training panel's jobs) are GPU calls (labs.core.work.zerogpu).
JOBS.kind("finetune", seconds_per_unit=SECONDS_PER_STEP, still_valid=_still_whole, to_wire=ship_kept,
          from_wire=receive_kept, gpu=True)
JOBS.kind("compare", seconds_per_unit=SECONDS_PER_STEP, gpu=True)


def data_key(data) -> str:
    """The data's content as a short fingerprint: an uploaded CSV is the same job as the same CSV."""
    fields = dataclasses.astuple(data) if dataclasses.is_dataclass(data) else repr(data)
    return hashlib.sha256(repr(fields).encode()).hexdigest()[:24]


def steps(s: Settings, data) -> int:
    """The training steps of one run (the estimate's unit), plus its fixed costs."""
    n = min(s.train_examples, len(data.train))
    return math.ceil(n / s.batch_size) * s.epochs + OVERHEAD_STEPS


def run_ticket(s: Settings, data: Dataset, scratch: bool, owner: str | None = None, page: bool = False) -> Ticket:
    """Follow the run with these settings on this data (and its from-scratch twin if asked). page: a tab
    follows one run at a time, so its earlier run is left (it goes on if others follow it)."""
    return JOBS.submit("finetune", (dataclasses.astuple(s), data_key(data), scratch),
                       lambda control: training.run_experiment(s, data, scratch, control),
                       units=steps(s, data) * (2 if scratch else 1), owner=owner, replace_running=page)


def compare_ticket(s: Settings, data, owner: str | None = None, page: bool = False) -> Ticket:
    """Follow the strategies' comparison with these settings on this data."""
    return JOBS.submit("compare", (dataclasses.astuple(s), data_key(data)),
                       lambda control: compare.run_all(s, data, control), units=len(compare.plan(s)) * steps(s, data),
                       owner=owner,
                       replace_running=page)


async def finetune_stream(model: str, strategy: str = "full", learning_rate: float = 5e-5, epochs: int = 3,
                          batch_size: int = 16, train_examples: int = 200, seed: int = 0,
                          compare_scratch: bool = False, task: str = "sentiment", train_domain: str = "",
                          warmup_ratio: float = 0.1, weight_decay: float = 0.01,
                          lora_targets: str = "query, value") -> AsyncIterator[dict]:
    """The `finetune` API: a whole run on the built-in data, shared with identical runs. Streams the
    queue's place while it waits, the progress after every step, then the result's JSON. A client that
    goes away leaves the run (which stops after its current step if nobody else follows it)."""
    s, data, scratch = training.api_settings(model, strategy, learning_rate, epochs, batch_size, train_examples,
                                             seed, compare_scratch, task, train_domain, warmup_ratio, weight_decay,
                                             lora_targets)
    results = []
    async for event in run_ticket(s, data, scratch):
        if isinstance(event, Queued):
            yield event.to_json()
        elif isinstance(event, RunResult):
            results.append(event)
        elif isinstance(event, Step):
            yield training.progress_json(event)
    yield training.experiment_json(results)


async def compare_stream(model: str, task: str = "sentiment", learning_rate: float = 5e-5, epochs: int = 3,
                         batch_size: int = 16, train_examples: int = 200, seed: int = 0, warmup_ratio: float = 0.1,
                         weight_decay: float = 0.01) -> AsyncIterator[dict]:
    """The `compare_strategies` API: the queue's place while it waits, then {"status": "running", "run",
    "step", "total_steps"}, then {"runs": [one row per strategy]}; shared with identical comparisons."""
    s, data = compare.api_settings(model, task, learning_rate, epochs, batch_size, train_examples, seed, warmup_ratio,
                                   weight_decay)
    rows = []
    async for event in compare_ticket(s, data):
        if isinstance(event, Queued):
            yield event.to_json()
        elif isinstance(event, RunResult):
            rows.append(compare.row(event))
        elif isinstance(event, Step):
            yield compare.progress_json(event, len(rows) + 1)
    yield {"task": s.task, "model": s.model, "runs": rows}
