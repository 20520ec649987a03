"""Fine-tune, the training run: a plain PyTorch loop (the updates Trainer makes, without its
bookkeeping) written as a generator of events, so a run can be drawn live and stopped; the kept
models for "classify a sentence"; and the `finetune` API."""

from __future__ import annotations

import collections
import gc
import itertools
import math
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import cachetools

from labs.core.errors import BadInput, check_bool, check_text
from labs.core.models import models
from labs.core.work import batching
from labs.finetune import forgetting, tasks
from labs.finetune.data import Dataset, accuracy_by_domain, builtin_data, take_train
from labs.finetune.strategies import (
    Settings,
    apply_strategy,
    check_settings,
    count_params,
    encoder_of,
    layer_rates,
)

MAX_LENGTH = 64  # tokens per sentence; the built-in reviews are far shorter
SAMPLE_SENTENCES = 6  # validation sentences shown before / after
YIELD_TO_REQUESTS_S = 2.0  # at most this long before each step: a busy class slows a run, never stops it
KEEP_FINISHED = 4  # fine-tuned models kept for the "classify a sentence" box, across all users


@dataclass
class Step:
    phase: str  # "pre-trained" or "from scratch"
    step: int
    total_steps: int
    loss: float
    elapsed: float
    lr: float = 0.0  # the learning rate this step used


@dataclass
class Eval:
    phase: str
    epoch: int  # 0 = before training
    loss: float
    accuracy: float  # the task's main metric (accuracy, entity F1 or exact match)
    elapsed: float
    metrics: dict = field(default_factory=dict)  # every metric of the task


@dataclass
class RunResult:
    phase: str
    settings: Settings
    labels: list[str]
    trainable_params: int
    total_params: int
    history: list[dict] = field(default_factory=list)  # {"step", "loss"}
    eval: list[dict] = field(default_factory=list)  # {"epoch", "loss", "accuracy"}, epochs 1..E
    accuracy_before: float = 0.0
    accuracy_after: float = 0.0
    seconds: float = 0.0
    samples: list[dict] = field(default_factory=list)  # validation sentences before / after
    stopped: bool = False
    run_id: str | None = None  # for classify(); None for from-scratch runs
    task: str = "sentiment"
    metrics_before: dict = field(default_factory=dict)
    metrics_after: dict = field(default_factory=dict)
    schedule: list[float] = field(default_factory=list)  # the optimizer's learning rate at each step
    forgetting: dict | None = None  # forgetting.compare(): retrieval before/after, drift (+ the MLM probe)
    layer_rates: list[dict] = field(default_factory=list)  # {"depth", "lr"}: the peak rate of each depth
    domains: list[dict] = field(default_factory=list)  # {"domain", "n", "accuracy_before", "accuracy_after",
    #                                                     "trained_on"}: validation accuracy per domain, where known
    train_domain: str | None = None  # the one domain the training rows came from (None: all, or not known)


class EncodedSentences:
    """Labelled sentences tokenised once; each batch padded only to its own longest sentence, by transformers'
    DataCollatorWithPadding (what Trainer pads with)."""

    def __init__(self, tokenizer, rows: list[tuple[str, int]], device: str):
        from transformers import DataCollatorWithPadding

        self.ids = tokenizer([t for t, _ in rows], truncation=True, max_length=MAX_LENGTH)["input_ids"]
        self.labels = [y for _, y in rows]
        self.collate = DataCollatorWithPadding(tokenizer)
        self.device = device

    def __len__(self) -> int:
        return len(self.ids)

    def batch(self, index) -> dict:
        """{"input_ids", "attention_mask", "labels"}: tensors on the run's device."""
        batch = self.collate([{"input_ids": self.ids[i], "label": self.labels[i]} for i in index])
        return {name: tensor.to(self.device) for name, tensor in batch.items()}


def make_optimizer(model, s: Settings, total_steps: int):
    """AdamW with weight decay on matrices only, linear warm-up then linear decay (as Trainer does); with
    llrd_ξ, one pair of groups per depth at its own rate (the schedule scales every group alike)."""
    import torch
    from transformers import get_linear_schedule_with_warmup

    groups = []
    for depth, rate, named in layer_rates(model, s.strategy, s.learning_rate):
        params = [p for _, p in named]
        groups += [{"params": [p for p in params if p.ndim >= 2], "weight_decay": s.weight_decay, "lr": rate,
                    "depth": depth},
                   {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0, "lr": rate, "depth": depth}]
    optimizer = torch.optim.AdamW([g for g in groups if g["params"]], lr=s.learning_rate)
    scheduler = get_linear_schedule_with_warmup(optimizer, round(s.warmup_ratio * total_steps), total_steps)
    return optimizer, scheduler


def update(model, batch: dict, optimizer, scheduler) -> float:
    """One training step, the same in every loop of this lab: the loss on the batch, its gradients, the
    optimiser's update and the schedule's next rate; the gradients are freed. Returns the batch's loss."""
    loss = model(**batch).loss
    loss.backward()
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.item()


def epoch_batches(n: int, batch_size: int, seed: int, epoch: int) -> list[list[int]]:
    """The shuffled batches of one epoch: the same for a given seed (reproducible runs)."""
    import torch

    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed * 1000 + epoch)).tolist()
    return [order[i:i + batch_size] for i in range(0, n, batch_size)]


def evaluate(model, data: EncodedSentences, batch_size: int = 64) -> tuple[float, float, list[list[float]]]:
    """(mean loss, accuracy, probabilities per sentence) on a data set, without gradients."""
    import torch

    model.eval()
    total_loss, correct, probs = 0.0, 0, []
    with torch.no_grad():
        for start in range(0, len(data), batch_size):
            batch = data.batch(range(start, min(start + batch_size, len(data))))
            out = model(**batch)
            total_loss += out.loss.item() * len(batch["labels"])
            correct += int((out.logits.argmax(-1) == batch["labels"]).sum())
            probs += torch.softmax(out.logits.float(), -1).tolist()
    return total_loss / len(data), correct / len(data), probs


def measure(model, data) -> tuple[float, float, dict, list]:
    """(loss, main metric, every metric, predictions) on validation data of any task."""
    if isinstance(data, EncodedSentences):
        loss, accuracy, probs = evaluate(model, data)
        return loss, accuracy, {"accuracy": accuracy}, probs
    loss, metrics, predictions = tasks.evaluate_task(model, data)
    return loss, metrics[tasks.METRIC[data.task]], metrics, predictions


def load_and_encode(s: Settings, data, scratch: bool):
    """A fresh model with the task's head, its tokenizer and the task."""
    task = getattr(data, "task", "sentiment")
    if task == "sentiment":
        model, tokenizer = models.load_for_classification(s.model, len(data.labels), scratch=scratch, seed=s.seed)
    else:
        model, tokenizer = models.load_for_task(s.model, tasks.HEADS[task], labels=data.labels or None,
                                                scratch=scratch, seed=s.seed)
    return model, tokenizer, task


def encoded_sets(task: str, tokenizer, s: Settings, data, device: str):
    """The training rows the settings ask for and the validation rows, each tokenised once."""
    if task == "sentiment":
        return (EncodedSentences(tokenizer, take_train(data, s.train_examples, s.seed), device),
                EncodedSentences(tokenizer, data.validation, device))
    rows = take_train(data, s.train_examples, s.seed) if task == "pair" else \
        tasks.take_rows(data.train, s.train_examples, s.seed)
    return (tasks.EncodedTaskRows(task, tokenizer, rows, device),
            tasks.EncodedTaskRows(task, tokenizer, data.validation, device))


def train(s: Settings, data: Dataset, scratch: bool = False, stop: threading.Event | None = None,
          keep_for_try: bool = True, probe: bool = True, hand_over=None):
    """Fine-tune one model and yield Step / Eval events as it goes; the last item is the RunResult.

    A plain PyTorch loop (the same updates Trainer makes, without its bookkeeping). Closing the
    generator (Stop) or `stop` ends the run after the current step, and the model, optimiser state
    and gradients are released when it ends, unless the model is kept for classify(). probe=False skips the
    forgetting probe (a curve of many runs reads only their accuracy). hand_over(model, tokenizer, val_set), if
    given, receives the trained model before the result is yielded (to measure it further)."""
    import torch

    phase = "from scratch" if scratch else "pre-trained"
    started = time.perf_counter()
    model, tokenizer, task = load_and_encode(s, data, scratch)
    optimizer = scheduler = None
    keep = False
    try:
        torch.manual_seed(s.seed)  # LoRA's adapters start from this seed too
        model = apply_strategy(model, s.strategy, s.lora_targets)
        result = RunResult(phase, s, data.labels, *count_params(model), task=task)
        device = str(next(model.parameters()).device)
        train_set, val_set = encoded_sets(task, tokenizer, s, data, device)
        # What pre-training taught (prompt / prefix tuning: the frozen encoder, without the virtual tokens)
        known = None if scratch or not probe else forgetting.snapshot(encoder_of(model), tokenizer, s.model)
        loss, result.accuracy_before, result.metrics_before, probs_before = measure(model, val_set)
        yield Eval(phase, 0, loss, result.accuracy_before, time.perf_counter() - started, result.metrics_before)
        total_steps = math.ceil(len(train_set) / s.batch_size) * s.epochs
        optimizer, scheduler = make_optimizer(model, s, total_steps)
        result.layer_rates = [{"depth": d, "lr": lr} for d, lr in  # initial_lr: "lr" is 0 at the warm-up's start
                              sorted({(g["depth"], g["initial_lr"]) for g in optimizer.param_groups})]
        probs_after = yield from train_epochs(model, (optimizer, scheduler), train_set, val_set, result, total_steps,
                                        started, stop)
        result.samples = samples(task, data, probs_before, probs_after)
        result.domains = by_domain(data, probs_before, probs_after) if task == "sentiment" else []
        result.train_domain = getattr(data, "train_domain", None)
        result.forgetting = None if known is None else forgetting.compare(known, encoder_of(model), tokenizer)
        result.seconds = time.perf_counter() - started
        if hand_over is not None:
            hand_over(model, tokenizer, val_set)
        if keep_for_try and not scratch:  # comparison runs are not kept: they would push out others' models
            result.run_id = keep_model(model, tokenizer, data.labels, task)
            keep = True
        yield result
    finally:
        if not keep:
            del model
        del optimizer, scheduler  # the Adam state is twice the size of the trainable weights
        gc.collect()


def train_epochs(model, optimizer_and_scheduler, train_set, val_set, result: RunResult,
           total_steps: int, started: float, stop: threading.Event | None):
    """The training epochs: a Step event per update, an Eval after each epoch. Returns the
    validation probabilities after training (measured where it got to, if stopped early)."""
    optimizer, scheduler = optimizer_and_scheduler
    s, step, probs_after = result.settings, 0, None
    for epoch in range(1, s.epochs + 1):
        model.train()
        for index in epoch_batches(len(train_set), s.batch_size, s.seed, epoch):
            # Students' clicks (the batched passes) go first: the run waits while any is pending.
            batching.activity.wait_for_quiet(YIELD_TO_REQUESTS_S)
            result.schedule.append(max(g["lr"] for g in optimizer.param_groups))  # the rate this step uses
            loss = update(model, train_set.batch(index), optimizer, scheduler)
            step += 1
            result.history.append({"step": step, "loss": loss})
            yield Step(result.phase, step, total_steps, loss, time.perf_counter() - started,
                       result.schedule[-1])
            if stop is not None and stop.is_set():
                result.stopped = True
                break
        if result.stopped:
            break
        loss, result.accuracy_after, result.metrics_after, probs_after = measure(model, val_set)
        result.eval.append({"epoch": epoch, "loss": loss, "accuracy": result.accuracy_after})
        yield Eval(result.phase, epoch, loss, result.accuracy_after, time.perf_counter() - started,
                   result.metrics_after)
    if not result.eval:  # stopped inside the first epoch: measure where it got to
        _, result.accuracy_after, result.metrics_after, probs_after = measure(model, val_set)
    return probs_after


def by_domain(data: Dataset, before: list, after: list) -> list[dict]:
    """Validation accuracy per domain before and after training (the built-in set names each row's domain)."""
    was, now = accuracy_by_domain(data, before), accuracy_by_domain(data, after)
    return [{"domain": d, "n": n, "accuracy_before": was[d][1], "accuracy_after": accuracy,
             "trained_on": data.train_domain in (None, d)} for d, (n, accuracy) in now.items()]


def samples(task: str, data, before: list, after: list) -> list[dict]:
    """A few validation rows: the truth, and the prediction before and after training."""
    rows = data.validation
    if task == "sentiment":
        return [{"text": rows[i][0], "label": data.labels[rows[i][1]], "before": _prediction(before[i], data.labels),
                 "after": _prediction(after[i], data.labels)} for i in sample_rows(rows)]
    picked = sample_rows(rows) if task == "pair" else range(0, len(rows), max(1, len(rows) // SAMPLE_SENTENCES))
    return [dict(zip(("text", "label"), tasks.describe_row(task, rows[i], data.labels)),
                 before=tasks.prediction_text(task, rows[i], before[i], data.labels),
                 after=tasks.prediction_text(task, rows[i], after[i], data.labels))
            for i in list(picked)[:SAMPLE_SENTENCES]]


def sample_rows(rows: list[tuple[str, int]]) -> list[int]:
    """A few validation sentences, alternating classes, always the same ones."""
    by_class = collections.defaultdict(list)
    for i, (_, y) in enumerate(rows):
        by_class[y].append(i)
    mixed = [i for group in itertools.zip_longest(*by_class.values()) for i in group if i is not None]
    return mixed[:SAMPLE_SENTENCES]


def _prediction(probs: list[float], labels: list[str]) -> dict:
    best = max(range(len(probs)), key=probs.__getitem__)
    return {"label": labels[best], "prob": probs[best]}


_finished = cachetools.LRUCache(KEEP_FINISHED)  # run id -> (model, tokenizer, labels, task), across all users
_finished_lock = threading.Lock()


def keep_model(model, tokenizer, labels: list[str], task: str = "sentiment") -> str:
    """Keep a fine-tuned model for classify(); only the last KEEP_FINISHED runs stay in memory."""
    run_id = uuid.uuid4().hex
    model.eval()
    with _finished_lock:
        _finished[run_id] = (model, tokenizer, labels, task)  # the least recently used run leaves
    return run_id


def classify(run_id: str | None, text: str) -> dict[str, float]:
    """Class probabilities for any sentence from a fine-tuned model of an earlier run."""
    import torch

    text = check_text(text, "An absolutely wonderful evening.", what="sentence to classify")
    with _finished_lock:
        kept = _finished.get(run_id or "")
    if kept is None:
        raise BadInput("Run a fine-tuning first (models from older runs are freed to save memory).")
    model, tokenizer, labels, task = kept
    if task != "sentiment":
        raise BadInput(f"That run trained a {tasks.TASKS[task].split(' (')[0].lower()} model; try it in its own box.")
    enc = tokenizer(text, truncation=True, max_length=MAX_LENGTH, return_tensors="pt")
    with torch.no_grad():
        probs = torch.softmax(model(**enc.to(next(model.parameters()).device)).logits[0].float(), -1).tolist()
    return dict(zip(labels, probs))



def run_experiment(s: Settings, data: Dataset, compare_scratch: bool = False, stop=None):
    """The pre-trained run, then (optionally) the same settings from scratch. Yields every event."""
    for scratch in ([False, True] if compare_scratch else [False]):
        yield from train(s, data, scratch, stop)
        if stop is not None and stop.is_set():
            return


def is_kept(run_id: str | None) -> bool:
    """Whether the model of that run is still in memory (and, if so, it becomes the most recent: a run
    that students keep asking for stays)."""
    with _finished_lock:
        return _finished.get(run_id) is not None  # get() marks it used


def take_kept(run_id: str):
    """(model, tokenizer, labels, task) of a kept run, forgotten here (a Ray worker sends it to the front-end:
    labs.finetune.shared_runs), or None."""
    with _finished_lock:
        return _finished.pop(run_id, None)


def keep_as(run_id: str, kept: tuple) -> None:
    """Keep (model, tokenizer, labels, task) under a run's own id (a run trained on a Ray worker)."""
    kept[0].eval()
    with _finished_lock:
        _finished[run_id] = kept


def kept_model(run_id: str | None):
    """(model, tokenizer, labels, task) of an earlier run, or BadInput."""
    with _finished_lock:
        kept = _finished.get(run_id or "")
    if kept is None:
        raise BadInput("Run a fine-tuning first (models from older runs are freed to save memory).")
    return kept


def experiment_json(results: list[RunResult]) -> dict:
    """The `finetune` API's JSON for a pre-trained run and, if it was asked for, its from-scratch twin."""
    main = results[0]
    scratch = results[1] if len(results) > 1 else None
    metrics = {"name": tasks.METRIC[main.task], "before": main.metrics_before, "after": main.metrics_after,
               "scratch_after": None if scratch is None else scratch.metrics_after}
    return {"task": main.task, "metrics": metrics, "schedule": main.schedule, "forgetting": main.forgetting,
            "layer_rates": main.layer_rates, "train_domain": main.train_domain,
            "domains": main.domains,
            "run_id": main.run_id, "model": main.settings.model, "strategy": main.settings.strategy,
            "trainable_params": main.trainable_params, "total_params": main.total_params,
            "history": main.history, "eval": main.eval, "accuracy_before": main.accuracy_before,
            "accuracy_after": main.accuracy_after, "seconds": round(sum(r.seconds for r in results), 3),
            "scratch": None if scratch is None else {"accuracy_after": scratch.accuracy_after,
                                                     "history": scratch.history, "eval": scratch.eval}}


def api_settings(model, strategy="full", learning_rate=5e-5, epochs=3, batch_size=16, train_examples=200, seed=0,
                 compare_scratch=False, task="sentiment", train_domain="", warmup_ratio=0.1,
                 weight_decay=0.01, lora_targets="query, value") -> tuple[Settings, Dataset, bool]:
    """The `finetune` API's arguments checked: the settings, the data and whether to train from scratch too.
    train_domain (sentiment only): train on that domain's reviews alone, at most as many as it has. Every field of
    Settings is an argument (the tab sets the same ones)."""
    if not train_domain:
        data = tasks.task_data(task)
    elif tasks.check_task(task) != "sentiment":
        raise BadInput("train_domain is for the sentiment task: only its reviews name their domain.")
    else:  # the built-in reviews read once, training on the one domain
        data = builtin_data(train_domain)
        if isinstance(train_examples, (int, float)) and not isinstance(train_examples, bool):
            train_examples = min(train_examples, len(data.train))
    s = check_settings(model, strategy, learning_rate, epochs, batch_size, train_examples, seed, warmup_ratio,
                       weight_decay, lora_targets, max_train=len(data.train), task=task)
    return s, data, check_bool(compare_scratch, "compare_scratch")


def progress_json(event: Step) -> dict:
    """A step as the `finetune` API streams it."""
    return {"status": "running", "phase": event.phase, "step": event.step, "total_steps": event.total_steps,
            "loss": event.loss}


def finetune_progress(model: str, strategy: str = "full", learning_rate: float = 5e-5, epochs: int = 3,
                      batch_size: int = 16, train_examples: int = 200, seed: int = 0,
                      compare_scratch: bool = False, task: str = "sentiment", train_domain: str = "",
                      warmup_ratio: float = 0.1, weight_decay: float = 0.01,
                      lora_targets: str = "query, value") -> Iterator[dict]:
    """A whole run on the built-in data, here and now (the API runs it as a shared job: labs.finetune.
    shared_runs). Yields the progress after every step ({"status": "running", "phase", "step",
    "total_steps", "loss"}), then the result's JSON. Closing this generator ends the run after its step."""
    s, data, scratch = api_settings(model, strategy, learning_rate, epochs, batch_size, train_examples, seed,
                                    compare_scratch, task, train_domain, warmup_ratio, weight_decay, lora_targets)
    results, events = [], run_experiment(s, data, scratch)
    try:
        for event in events:
            if isinstance(event, RunResult):
                results.append(event)
            elif isinstance(event, Step):
                yield progress_json(event)
    finally:
        events.close()
    yield experiment_json(results)


def finetune(model, strategy="full", learning_rate=5e-5, epochs=3, batch_size=16, train_examples=200, seed=0,
             compare_scratch=False, task="sentiment", train_domain="", warmup_ratio=0.1, weight_decay=0.01,
             lora_targets="query, value") -> dict:
    """A whole run on the built-in data, as the API's JSON."""
    *_, result = finetune_progress(model, strategy, learning_rate, epochs, batch_size, train_examples, seed,
                                   compare_scratch, task, train_domain, warmup_ratio, weight_decay, lora_targets)
    return result
