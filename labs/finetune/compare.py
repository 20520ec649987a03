"""Fine-tune, the ways to fine-tune side by side (the course's strategies), run one after another on the same task,
data, seed and settings. The four classic ones are feature extraction (a linear head on the frozen encoder), partial
fine-tuning (embeddings and the bottom half frozen), full fine-tuning and layer-wise learning-rate decay; the three
parameter-efficient ones come from peft (LoRA, prompt tuning, prefix tuning)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from labs.core.models import models
from labs.finetune import tasks
from labs.finetune.strategies import (
    ENCODER_FAMILIES,
    LLRD_DECAY,
    PROMPT_TUNING_TASKS,
    VIRTUAL_TOKENS,
    Settings,
    check_settings,
    num_layers,
)
from labs.finetune.training import RunResult, Step, train

# A linear head on frozen features has 2 × 384 weights to learn, and at the encoder's 5e-5 it barely moves
# in a few epochs: it gets at least this rate (the table shows the rate each strategy used).
FEATURES_RATE = 1e-3
# The parameter-efficient runs train new weights too (LoRA's B starts at zero, the prompts random), which learn
# slowly at 5e-5 (MiniLM, 200 reviews, 3 epochs: LoRA r8 75 % at 5e-5, 83 % at 5e-4; prompt and prefix tuning
# near chance below 3e-2): LoRA gets at least LORA_RATE, prompt and prefix tuning PROMPT_RATE (peft's guide to
# prompt-based methods trains them at lr = 3e-2).
LORA_RANK, LORA_RATE, PROMPT_RATE = 8, 5e-4, 3e-2
HEADERS = ["strategy", "learning rate", "trainable parameters", "seconds", "validation metric",
           "retrieval after (forgetting)", "drift"]


def at_least(s: Settings, rate: float) -> float:
    return max(s.learning_rate, rate) if s.learning_rate > 0 else 0.0  # 0 stays the control


def plan(s: Settings) -> list[Settings]:
    """The runs: the student's settings with each strategy (prompt tuning on sentence-level tasks only: its
    virtual tokens would move the positions that NER and QA label)."""
    layers = num_layers(models.load(s.model, *ENCODER_FAMILIES).model)
    prompt = [f"prompt_{VIRTUAL_TOKENS}"] if s.task in PROMPT_TUNING_TASKS else []
    return [dataclasses.replace(s, strategy="features", learning_rate=at_least(s, FEATURES_RATE)),
            dataclasses.replace(s, strategy=f"freeze_bottom_{max(1, layers // 2)}"),
            dataclasses.replace(s, strategy="full"),
            dataclasses.replace(s, strategy=f"llrd_{LLRD_DECAY}"),
            dataclasses.replace(s, strategy=f"lora_r{LORA_RANK}", learning_rate=at_least(s, LORA_RATE)),
            *(dataclasses.replace(s, strategy=name, learning_rate=at_least(s, PROMPT_RATE))
              for name in (*prompt, f"prefix_{VIRTUAL_TOKENS}"))]


def run_all(s: Settings, data, stop=None) -> Iterator:
    """Every event of the runs, in order (RunResults included)."""
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


def api_settings(model, task="sentiment", learning_rate=5e-5, epochs=3, batch_size=16, train_examples=200, seed=0,
                 warmup_ratio=0.1, weight_decay=0.01) -> tuple[Settings, object]:
    """The `compare_strategies` API's arguments checked, and the task's built-in data: the fields of Settings but
    the strategy and LoRA's targets, which are each run's own (plan)."""
    data = tasks.task_data(task)
    return check_settings(model, "full", learning_rate, epochs, batch_size, train_examples, seed, warmup_ratio,
                          weight_decay, max_train=len(data.train), task=task), data


def compare_strategies(model: str, task: str = "sentiment", learning_rate: float = 5e-5, epochs: int = 3,
                       batch_size: int = 16, train_examples: int = 200, seed: int = 0, warmup_ratio: float = 0.1,
                       weight_decay: float = 0.01) -> Iterator[dict]:
    """The `/compare_strategies` API: streams {"status": "running", "run", "step", "total_steps"}, then
    {"runs": [one row per strategy]} (trainable parameters, seconds, the validation metric, forgetting)."""
    s, data = api_settings(model, task, learning_rate, epochs, batch_size, train_examples, seed, warmup_ratio,
                           weight_decay)
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
