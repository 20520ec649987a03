"""Fine-tune, four ways to fine-tune side by side (the course's strategies): feature extraction (a linear
head on the frozen encoder), partial fine-tuning (embeddings and the bottom half frozen), full fine-tuning
and layer-wise learning-rate decay, run one after another on the same task, data, seed and settings."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from labs.core.models import models
from labs.finetune import tasks
from labs.finetune.strategies import ENCODER_FAMILIES, LLRD_DECAY, Settings, check_settings, num_layers
from labs.finetune.training import RunResult, Step, train

# A linear head on frozen features has 2 × 384 weights to learn, and at the encoder's 5e-5 it barely moves
# in a few epochs: it gets at least this rate (the table shows the rate each strategy used).
FEATURES_RATE = 1e-3
HEADERS = ["strategy", "learning rate", "trainable parameters", "seconds", "validation metric",
           "retrieval after (forgetting)", "drift"]


def plan(s: Settings) -> list[Settings]:
    """The four runs: the student's settings with each strategy."""
    layers = num_layers(models.load(s.model, *ENCODER_FAMILIES).model)
    features_rate = max(s.learning_rate, FEATURES_RATE) if s.learning_rate > 0 else 0.0  # 0 stays the control
    return [dataclasses.replace(s, strategy="features", learning_rate=features_rate),
            dataclasses.replace(s, strategy=f"freeze_bottom_{max(1, layers // 2)}"),
            dataclasses.replace(s, strategy="full"),
            dataclasses.replace(s, strategy=f"llrd_{LLRD_DECAY}")]


def run_all(s: Settings, data, stop=None) -> Iterator:
    """Every event of the four runs, in order (RunResults included)."""
    for settings in plan(s):
        yield from train(settings, data, False, stop, keep_for_try=False)
        if stop is not None and stop.is_set():
            return


def row(r: RunResult) -> dict:
    f = r.forgetting or {}
    return {"strategy": r.settings.strategy, "learning_rate": r.settings.learning_rate,
            "trainable_params": r.trainable_params, "total_params": r.total_params, "seconds": round(r.seconds, 2),
            "metric": tasks.METRIC[r.task], "before": r.accuracy_before, "after": r.accuracy_after,
            "retrieval_after": f.get("retrieval_after"), "drift": f.get("drift"), "layer_rates": r.layer_rates,
            "history": r.history, "eval": r.eval}


def table_rows(rows: list[dict]) -> list[list]:
    share = [100 * r["trainable_params"] / r["total_params"] for r in rows]
    return [[r["strategy"], f"{r['learning_rate']:g}", f"{r['trainable_params']:,} ({percent:.3g} %)",
             f"{r['seconds']:.1f}", f"{r['after']:.1%} ({r['metric'].replace('_', ' ')})",
             "–" if r["retrieval_after"] is None else f"{r['retrieval_after']:.0%}",
             "–" if r["drift"] is None else f"{r['drift']:.3f}"] for r, percent in zip(rows, share)]


def progress_json(event: Step, run: int) -> dict:
    """A step of the comparison's `run`-th run as the `compare_strategies` API streams it."""
    return {"status": "running", "run": run, "step": event.step, "total_steps": event.total_steps}


def compare_strategies(model: str, task: str = "sentiment", learning_rate: float = 5e-5, epochs: int = 3,
                       batch_size: int = 16, train_examples: int = 200, seed: int = 0) -> Iterator[dict]:
    """The `/compare_strategies` API: streams {"status": "running", "run", "step", "total_steps"}, then
    {"runs": [one row per strategy]} (trainable parameters, seconds, the validation metric, forgetting)."""
    data = tasks.task_data(task)
    s = check_settings(model, "full", learning_rate, epochs, batch_size, train_examples, seed,
                       max_train=len(data.train), task=task)
    rows, events = [], run_all(s, data)
    try:
        for event in events:
            if isinstance(event, RunResult):
                rows.append(row(event))
            elif isinstance(event, Step):
                yield progress_json(event, len(rows) + 1)
    finally:
        events.close()
    yield {"task": s.task, "model": s.model, "runs": rows}
