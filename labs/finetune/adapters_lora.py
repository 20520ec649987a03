"""Fine-tune, adapters and LoRA at inference: the same sentiment task learnt with bottleneck adapters
(labs.finetune.bottleneck) and with LoRA (peft), then what each costs when the model is used.

- Parameters: the adapters' count (and the hand formula 2·L·(2·d·m + d + m)), LoRA's from peft
  (get_nb_trainable_parameters, the head included, and the A/B matrices alone).
- LoRA merged into the weights after training (peft's merge_and_unload: W + B·A·α/r): the validation logits before
  and after the merge, and the predictions they give.
- Time per prediction (one sentence, the median of several passes on this server): adapters add layers to every
  pass; LoRA unmerged adds its two small products; merged, it is the plain model again.
- Storage per task: the bytes written for the task (the adapters and the head; peft's adapter file) beside the
  whole model's file.
One comparison is one shared job (labs.core.work.jobs)."""

from __future__ import annotations

import dataclasses
import math
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

from labs.core.errors import check_int
from labs.core.models import models
from labs.core.ui import course_quotes
from labs.core.work.jobs import JOBS, Queued, Ticket
from labs.finetune import bottleneck
from labs.finetune.data import builtin_data
from labs.finetune.strategies import (
    ENCODER_FAMILIES,
    Settings,
    check_settings,
    num_layers,
)
from labs.finetune.training import RunResult, Step, train

ADAPTER_SIZE, LORA_RANK, EPOCHS = 64, 8, 3
ADAPTER_RATE = LORA_RATE = 5e-4  # new weights that start at zero learn slowly at 5e-5 (as the strategy comparison)
TRAIN_EXAMPLES, BATCH = 200, 16
TIMING_REPEATS = 15
SECONDS_PER_STEP = 0.25
# The textbook's words: course_quotes' entries, as (document and number, section title, text).
COURSE = tuple((f"Textbook {q.where.split(' ', 1)[0]}", q.where.split(" ", 1)[1], q.text)
               for q in map(course_quotes.get, ("adapters_0", "adapters_1", "adapters_2")))


@dataclasses.dataclass(frozen=True)
class Plan:
    model: str
    adapter_size: int = ADAPTER_SIZE
    lora_rank: int = LORA_RANK
    epochs: int = EPOCHS
    seed: int = 0

    def runs(self) -> list[Settings]:
        return [Settings(self.model, f"adapter_{self.adapter_size}", ADAPTER_RATE, self.epochs, BATCH, TRAIN_EXAMPLES,
                         self.seed),
                Settings(self.model, f"lora_r{self.lora_rank}", LORA_RATE, self.epochs, BATCH, TRAIN_EXAMPLES,
                         self.seed)]


def check_plan(model, adapter_size=ADAPTER_SIZE, lora_rank=LORA_RANK, epochs=EPOCHS, seed=0) -> Plan:
    s = check_settings(model, "full", ADAPTER_RATE, epochs, BATCH, TRAIN_EXAMPLES, seed)
    return Plan(s.model, check_int(adapter_size, "The adapter size", 1, 256),
                check_int(lora_rank, "The LoRA rank", 1, 64), s.epochs, s.seed)


def ms_per_prediction(model, batch: dict) -> float:
    """One sentence's forward pass, in ms: the median of TIMING_REPEATS after one warm-up."""
    import torch

    model.eval()
    times = []
    with torch.no_grad():
        for i in range(TIMING_REPEATS + 1):
            started = time.perf_counter()
            model(**batch)
            times.append(1000 * (time.perf_counter() - started))
    return statistics.median(times[1:])


def logits(model, val_set):
    """The validation sentences' logits (one batch, no gradients), on the CPU."""
    import torch

    model.eval()
    with torch.no_grad():
        return model(**val_set.batch(range(len(val_set)))).logits.float().cpu()


def saved_bytes(save) -> dict[str, int]:
    """save(folder) into a fresh folder: {file name: bytes} of what it wrote."""
    with tempfile.TemporaryDirectory(prefix="lmlab-save-") as folder:
        save(folder)
        return {p.name: p.stat().st_size for p in Path(folder).iterdir() if p.is_file()}


def one_sentence(val_set) -> dict:
    return {k: v for k, v in val_set.batch([0]).items() if k != "labels"}


def measure_adapter(out: dict):
    def measure(model, tokenizer, val_set):
        from safetensors.torch import save_file

        found = bottleneck.counts(model)
        layers, hidden = num_layers(model), model.config.hidden_size
        size = next(m for n, m in model.named_modules() if n.endswith(".adapter")).down.out_features
        trained = {n: p.detach().contiguous() for n, p in model.named_parameters() if p.requires_grad}
        out.update(adapter_params=found["adapter"], head_params=found["head"], total_params=found["total"],
                   expected_adapter_params=bottleneck.expected_params(layers, hidden, size),
                   layers=layers, hidden=hidden, size=size,
                   ms_per_prediction=ms_per_prediction(model, one_sentence(val_set)),
                   task_bytes=sum(saved_bytes(lambda d: save_file(trained, f"{d}/adapters.safetensors")).values()))
    return measure


def measure_lora(out: dict):
    def measure(model, tokenizer, val_set):
        import torch

        sentence = one_sentence(val_set)
        out["trainable_params"], out["total_params"] = model.get_nb_trainable_parameters()
        out["lora_params"] = sum(p.numel() for n, p in model.named_parameters() if "lora_" in n)
        out["adapter_file_bytes"] = saved_bytes(model.save_pretrained).get("adapter_model.safetensors", 0)
        out["lora_matrix_bytes"] = sum(p.numel() * p.element_size() for n, p in model.named_parameters() if "lora_" in n)
        before, out["ms_unmerged"] = logits(model, val_set), ms_per_prediction(model, sentence)
        merged = model.merge_and_unload()  # W ← W + (α/r)·B·A in every adapted layer; the LoRA modules are gone
        after, out["ms_merged"] = logits(merged, val_set), ms_per_prediction(merged, sentence)
        labels = torch.tensor(val_set.labels)
        out.update(max_logit_difference=float((before - after).abs().max()),
                   same_predictions=int((before.argmax(-1) == after.argmax(-1)).sum()), validation=len(labels),
                   accuracy_unmerged=float((before.argmax(-1) == labels).float().mean()),
                   accuracy_merged=float((after.argmax(-1) == labels).float().mean()),
                   merged_params=sum(p.numel() for p in merged.parameters()),
                   lora_modules_left=sum(1 for n, _ in merged.named_modules() if "lora_" in n),
                   full_model_bytes=saved_bytes(merged.save_pretrained).get("model.safetensors", 0))
    return measure


def run(plan: Plan, stop=None) -> Iterator:
    """The adapter run, then the LoRA run (same data, seed, epochs), each measured after training: their events,
    then the comparison's JSON (a dict) last."""
    data = builtin_data()
    adapter, lora, results = {}, {}, []
    for s, measure in zip(plan.runs(), (measure_adapter(adapter), measure_lora(lora))):
        for event in train(s, data, False, stop, keep_for_try=False, probe=False, hand_over=measure):
            if isinstance(event, RunResult):
                results.append(event)
            yield event
        if stop is not None and stop.is_set():
            return
    yield comparison_json(plan, results, adapter, lora)


def comparison_json(plan: Plan, results: list[RunResult], adapter: dict, lora: dict) -> dict:
    first, second = results
    base = bottleneck.bert_base_counts(ADAPTER_SIZE)
    return {"model": plan.model, "task": "sentiment", "epochs": plan.epochs, "seed": plan.seed,
            "train_examples": TRAIN_EXAMPLES, "batch_size": BATCH, "timing_repeats": TIMING_REPEATS,
            "adapter": {"strategy": first.settings.strategy, "learning_rate": ADAPTER_RATE,
                        "accuracy_before": first.accuracy_before, "accuracy": first.accuracy_after,
                        "trainable_params": first.trainable_params, "library": None,
                        "percent": 100 * adapter["adapter_params"] / (adapter["total_params"] - adapter["adapter_params"]),
                        **adapter},
            "lora": {"strategy": second.settings.strategy, "learning_rate": LORA_RATE,
                     "accuracy_before": second.accuracy_before, "accuracy": second.accuracy_after, "library": "peft",
                     **lora},
            "bert_base": base,
            "course": [{"document": where, "section": title, "quote": quote} for where, title, quote in COURSE]}


JOBS.kind("adapters_lora", seconds_per_unit=SECONDS_PER_STEP, gpu=True)


def ticket(plan: Plan, owner: str | None = None, page: bool = False) -> Ticket:
    units = 2 * (math.ceil(TRAIN_EXAMPLES / BATCH) * plan.epochs + 20)
    return JOBS.submit("adapters_lora", dataclasses.astuple(plan), lambda control: run(plan, control), units=units,
                       owner=owner, replace_running=page)


async def adapters_lora_stream(model: str, adapter_size: int = ADAPTER_SIZE, lora_rank: int = LORA_RANK,
                               epochs: int = EPOCHS, seed: int = 0) -> AsyncIterator[dict]:
    """The `adapters_lora` API: the queue's place, the progress, then the comparison's JSON."""
    plan = check_plan(model, adapter_size, lora_rank, epochs, seed)
    models.check_family(models.get_choice(plan.model), ENCODER_FAMILIES)
    runs = 0
    async for event in ticket(plan):
        if isinstance(event, Queued):
            yield event.to_json()
        elif isinstance(event, RunResult):
            runs += 1
        elif isinstance(event, Step):
            yield {"status": "running", "run": runs + 1, "runs": 2, "step": event.step, "total_steps": event.total_steps}
        elif isinstance(event, dict):
            yield event
