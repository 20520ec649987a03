"""Fine-tune, gradient accumulation (textbook 20.11.4): k micro-batches give the same gradient, and after one AdamW
step the same weights, as one batch of all their examples. One batch of B labelled examples against k micro-batches
of B/k whose losses are divided by k and whose gradients add up in `.grad` (loss.backward() k times, then one
optimizer step), while each forward pass keeps only a micro-batch's activations for the backward pass.

The model is the lab's own: the encoder with the task's new head (training.load_and_encode), on B rows of the
task's built-in training set (training.encoded_sets). Dropout is off (model.eval()): with it on, every forward pass
draws its own masks, and the two gradients would differ by that noise, not by accumulation. The memory is measured,
not estimated: torch.autograd.graph.saved_tensors_hooks sees every tensor a forward pass saves for its backward
pass, and the bytes of their distinct storages (the weights left out) are what the activations hold."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass

from labs.core.errors import BadInput, check_int
from labs.core.models import models
from labs.core.ui import course_quotes
from labs.finetune import tasks, training
from labs.finetune.strategies import ENCODER_FAMILIES, Settings

# The course's words: course_quotes' entries (tests/test_course_quotes.py checks each under its heading).
WHERE = course_quotes.get("accumulation_intro").cite
COURSE_LINES = tuple(course_quotes.text(f"accumulation_{part}") for part in ("intro", "batch", "steps"))
# One loss per example, read from the first token: for these the accumulated gradient is the batch's (float error
# aside). NER's loss is a mean over word pieces, and micro-batches hold different numbers of them; QA's start and
# end softmax runs over every position, padded ones included, so a row's loss depends on its batch's padding
# (measured on MiniLM, B = 32, k = 4: 24 % apart).
TASKS = ("sentiment", "pair")
NOT_EXACT = {"ner": "NER's loss is a mean over word pieces, and micro-batches hold different numbers of them, so "
                    "dividing each micro-batch's loss by k weights them unequally",
             "qa": "QA's start and end softmax runs over every position, padded ones included, so a row's loss "
                   "depends on how much padding its micro-batch adds"}
# B ≤ 32: a request (a fresh model, two forward and backward passes of B rows) stays within a few seconds on 2 cores.
LIMITS = {"batch_size": (2, 32), "micro_batches": (1, 8), "seed": (0, 2**31 - 1)}
DEFAULTS = {"task": "sentiment", "batch_size": 32, "micro_batches": 8, "seed": 0}  # the textbook's 4 × 8 = 32
LEARNING_RATE = 5e-5  # AdamW's one step (the lab's default rate); weight decay 0.01, torch's default


@dataclass(frozen=True)
class Request:
    model: str
    task: str
    batch_size: int
    micro_batches: int
    seed: int

    @property
    def micro_batch_size(self) -> int:
        return self.batch_size // self.micro_batches


def check_request(model, task="sentiment", batch_size=32, micro_batches=8, seed=0) -> Request:
    """The checked request; BadInput says what to change."""
    task = tasks.check_task(task)
    if task not in TASKS:
        raise BadInput(f"Gradient accumulation is shown here on the sentence tasks ({', '.join(TASKS)}): "
                       f"{NOT_EXACT[task]}. Pick the sentiment or the sentence-pair task.")
    b = check_int(batch_size, "The batch size B", *LIMITS["batch_size"])
    k = check_int(micro_batches, "The number of micro-batches k", *LIMITS["micro_batches"])
    if b % k:
        divisors = [d for d in range(1, min(b, LIMITS["micro_batches"][1]) + 1) if b % d == 0]
        raise BadInput(f"k = {k} does not divide B = {b}: every micro-batch must hold B/k examples. "
                       f"For B = {b}, k can be {', '.join(map(str, divisors))}.")
    seed = check_int(seed, "The seed", *LIMITS["seed"])
    choice = models.get_choice(model)
    models.check_family(choice, ENCODER_FAMILIES)
    return Request(choice.name, task, b, k, seed)


@contextmanager
def saved_activations(model):
    """Within: every tensor autograd saves for the backward pass, by storage ({address: bytes}), the model's
    weights left out (they are kept anyway). Distinct storages: a tensor saved by two operations counts once."""
    import torch

    weights = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in weights:
            saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        yield saved


def forward_backward(model, batch: dict, divide_by: int) -> dict:
    """loss / divide_by, its backward pass (adding into .grad); the loss, the saved bytes and the time."""
    started = time.perf_counter()
    with saved_activations(model) as saved:
        loss = model(**batch).loss
    (loss / divide_by).backward()
    mask = batch["attention_mask"]
    return {"rows": int(mask.shape[0]), "padded_length": int(mask.shape[1]), "pad_tokens": int((mask == 0).sum()),
            "loss": float(loss.detach()), "saved_bytes": sum(saved.values()), "seconds": time.perf_counter() - started}


def flat_gradient(params):
    """Every parameter's .grad in one vector (a weight the task's loss does not reach, such as QA's unused pooler,
    has none: zeros)."""
    import torch

    return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).flatten() for p in params])


def flat_weights(params):
    import torch

    return torch.cat([p.detach().flatten() for p in params])


def one_step(model, passes, params, start: dict) -> tuple:
    """From the weights `start`: the passes (forward, backward), then one AdamW step. Returns the pass records,
    the gradient and the new weights (flat)."""
    import torch

    model.load_state_dict(start)
    model.zero_grad(set_to_none=True)
    records = [forward_backward(model, batch, divide_by) for batch, divide_by in passes]
    gradient = flat_gradient(params)
    optimizer = torch.optim.AdamW(params, lr=LEARNING_RATE)
    optimizer.step()
    weights = flat_weights(params)
    model.zero_grad(set_to_none=True)
    del optimizer
    return records, gradient, weights


def compare(a, b) -> dict:
    """How far two flat vectors are apart: the largest |difference|, relative to the largest |value|, and the cosine."""
    import torch

    scale = float(a.abs().max())
    biggest = float((a - b).abs().max())
    return {"max_abs_difference": biggest, "max_abs_value": scale, "relative": biggest / scale if scale else 0.0,
            "cosine": float(torch.nn.functional.cosine_similarity(a.double(), b.double(), dim=0))}


def prepare(r: Request):
    """The lab's model (the task's new head from the seed) in eval mode, and the B rows encoded once."""
    settings = Settings(r.model, train_examples=r.batch_size, seed=r.seed, task=r.task)
    data = tasks.task_data(r.task)
    model, tokenizer, task = training.load_and_encode(settings, data, scratch=False)
    model.eval()  # dropout off: the same network in every pass
    device = str(next(model.parameters()).device)
    rows, _ = training.encoded_sets(task, tokenizer, settings, data, device)
    return model, rows


def passes(rows, r: Request) -> tuple[list, list]:
    """The passes of each way: [(the B rows as one batch, 1)] and [(micro-batch i, k)], each padded to its own
    longest row (the collator's); the number is what its loss is divided by."""
    m = r.micro_batch_size
    return ([(rows.batch(range(r.batch_size)), 1)],
            [(rows.batch(range(i * m, (i + 1) * m)), r.micro_batches) for i in range(r.micro_batches)])


def accumulate(r: Request) -> dict:
    """One batch of B vs k micro-batches of B/k with the loss / k: the two gradients, the weights after one AdamW
    step from each, each pass's saved activations and time."""
    model, rows = prepare(r)
    params = [p for p in model.parameters() if p.requires_grad]
    start = {name: value.clone() for name, value in model.state_dict().items()}
    before = flat_weights(params)
    whole, parts = passes(rows, r)
    full_records, full_gradient, full_weights = one_step(model, whole, params, start)
    micro_records, micro_gradient, micro_weights = one_step(model, parts, params, start)
    full, micro_max = full_records[0], max(p["saved_bytes"] for p in micro_records)
    step = compare(full_weights - before, micro_weights - before)
    del model, start
    return {
        "model": r.model, "task": r.task, "batch_size": r.batch_size, "micro_batches": r.micro_batches,
        "micro_batch_size": r.micro_batch_size, "seed": r.seed, "learning_rate": LEARNING_RATE, "parameters": int(before.numel()),
        "full_batch": full, "micro": micro_records,
        "loss": {"full_batch": full["loss"], "accumulated": sum(p["loss"] for p in micro_records) / r.micro_batches},
        "gradient": compare(full_gradient, micro_gradient),
        "adamw": {"max_abs_step": step["max_abs_value"], "max_abs_difference": float((full_weights - micro_weights)
                                                                                     .abs().max())},
        "memory": {"full_batch_bytes": full["saved_bytes"], "micro_batch_bytes": micro_max,
                   "ratio": micro_max / full["saved_bytes"]},
        "seconds": {"full_batch": full["seconds"], "accumulated": sum(p["seconds"] for p in micro_records)},
        "course": {"where": WHERE, "lines": list(COURSE_LINES)},
        "padding": "Each micro-batch is padded only to its own longest row. A padded position has attention mask 0: "
                   "no real token attends to it (its softmax weight is exactly 0) and the head reads the first "
                   "token, so a row's loss does not depend on how much padding sits beside it.",
        "dropout": "off (model.eval()): with dropout on, each forward pass draws its own masks, and the two "
                   "gradients would differ by that noise, not by accumulation.",
    }


def gradient_accumulation(model: str, task: str = "sentiment", batch_size: int = 32, micro_batches: int = 8,
                          seed: int = 0) -> dict:
    """The `gradient_accumulation` API: an encoder, a sentence task (sentiment, pair), B and k
    (k divides B), the seed (which rows, the new head's weights)."""
    return accumulate(check_request(model, task, batch_size, micro_batches, seed))
