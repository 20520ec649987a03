"""Fine-tune, how far fine-tuning moves the weights: after each run of the lab's training loop, the relative distance
‖θ − θ₀‖ / ‖θ₀‖ of every part of the model (the embeddings, each encoder layer, the head) from the weights it
started from, for a few learning rates and numbers of labelled examples (Textbook 20.5.2: fine-tuning stays near
the pre-trained weights).

θ₀ is the model as train() loads it (the pre-trained encoder and the head the seed draws, loaded once per curve);
θ is a copy of it after the lab's training loop (the same updates as training.train, without its evaluation after
every epoch). Every run is full fine-tuning with the lab's defaults (AdamW, warm-up, weight decay, 3 epochs, batch 16) on the built-in reviews; only the rate and the
number of examples change. The runs form one shared job (labs.core.work.jobs): a class asking for the same
settings trains once, and the finished curve is kept."""

from __future__ import annotations

import math
import re
from collections.abc import AsyncIterator, Iterator

import plotly.graph_objects as go

from labs.core.errors import BadInput, check_int, check_number
from labs.core.models import models
from labs.core.ui import course_quotes, plots
from labs.core.work.jobs import JOBS, Queued, Ticket
from labs.finetune import training
from labs.finetune.data import builtin_data, number_parts
from labs.finetune.shared_runs import data_key
from labs.finetune.strategies import DEFAULTS, ENCODER_FAMILIES, Settings, check_settings

RATES = (2e-5, 5e-5, 1e-3)
SIZES = (16, 64)
MAX_RATES, MAX_SIZES = 4, 3
EPOCHS, BATCH = DEFAULTS["epochs"], DEFAULTS["batch_size"]
OVERHEAD_STEPS = 3  # copying θ₀ and the evaluation of one run, in training steps' time
SECONDS_PER_STEP = 0.25  # a first guess (MiniLM, batch 16, 2 cores), replaced by measured runs
HEAD = "head"
# The course's words (course_quotes' entries, checked under "20.5.2 The PAC-Bayes Perspective on Transfer Learning")
QUOTE_IDS = ("theta_close", "theta_small_rates", "theta_small_data")


def part_of(name: str) -> str:
    """The part of the model a parameter belongs to: "embeddings", "layer i" (1-based) or "head" (pooler, classifier
    and anything else above the encoder)."""
    if ".embeddings." in name or name.startswith("embeddings."):
        return "embeddings"
    match = re.search(r"\.layer\.(\d+)\.", name)
    return f"layer {int(match.group(1)) + 1}" if match else HEAD


def parts_order(names) -> list[str]:
    """The parts, bottom to top: embeddings, layer 1 … L, head."""
    parts = {part_of(n) for n in names}
    layers = sorted((p for p in parts if p.startswith("layer ")), key=lambda p: int(p.split()[1]))
    return [p for p in ("embeddings", *layers, HEAD) if p in parts]


def snapshot(model) -> dict:
    """The model's parameters, copied (float32, on the CPU): θ₀ or θ."""
    return {name: p.detach().float().cpu().clone() for name, p in model.named_parameters()}


def distances(theta0: dict, theta: dict) -> list[dict]:
    """[{"part", "distance", "norm", "params"}] bottom to top: distance = ‖θ − θ₀‖ / ‖θ₀‖ over all of a part's
    parameters together (the Euclidean norm of the part as one long vector)."""
    if theta0.keys() != theta.keys():
        raise BadInput("The two sets of weights are not of the same model.")
    moved, norm, count = {}, {}, {}
    for name, start in theta0.items():
        part = part_of(name)
        moved[part] = moved.get(part, 0.0) + float(((theta[name] - start).double() ** 2).sum())
        norm[part] = norm.get(part, 0.0) + float((start.double() ** 2).sum())
        count[part] = count.get(part, 0) + start.numel()
    return [{"part": p, "distance": math.sqrt(moved[p]) / math.sqrt(norm[p]) if norm[p] else 0.0,
             "norm": math.sqrt(norm[p]), "params": count[p]} for p in parts_order(theta0)]


def parse_numbers(text, what: str) -> list:
    """"2e-5, 1e-3" (a page's box) as a list of numbers; a list passes through."""
    if isinstance(text, (list, tuple)):
        return list(text)
    if not isinstance(text, str):  # the API takes a list; a page's box, text
        raise BadInput(f"The {what} are a list of numbers, e.g. [16, 64].")
    parts = number_parts(text)
    try:
        return [float(p) for p in parts]
    except ValueError:
        raise BadInput(f"The {what} are numbers separated by commas.") from None


def check(model, learning_rates=None, sizes=None, seed=0) -> tuple[list[Settings], object]:
    """One run's settings per (rate, size), every rate at every size; and the built-in reviews."""
    data = builtin_data()
    rates = list(RATES) if learning_rates in (None, "", []) else parse_numbers(learning_rates, "learning rates")
    wanted = list(SIZES) if sizes in (None, "", []) else parse_numbers(sizes, "sizes")
    if not 1 <= len(rates) <= MAX_RATES:
        raise BadInput(f"Give 1 to {MAX_RATES} learning rates, e.g. {', '.join(f'{r:g}' for r in RATES)}.")
    if not 1 <= len(wanted) <= MAX_SIZES:
        raise BadInput(f"Give 1 to {MAX_SIZES} numbers of labelled examples, e.g. {', '.join(map(str, SIZES))}.")
    rates = sorted({check_number(r, "Each learning rate", 0, 0.1) for r in rates})
    cap = len(data.train)
    picked = sorted({min(check_int(n, "Each size", 8, 10**6), cap) for n in wanted})
    models.check_family(models.get_choice(model), ENCODER_FAMILIES)
    return [check_settings(model, "full", rate, EPOCHS, BATCH, n, seed, max_train=cap)
            for n in picked for rate in rates], data


def fine_tune(start, tokenizer, s: Settings, data, theta0: dict, stop=None) -> Iterator:
    """One run of the lab's training loop (training.make_optimizer, epoch_batches, update: what training.train does,
    in the same order from the same seed) on a copy of `start`; a Step per update. Without train()'s evaluation
    after every epoch and its reloading of the checkpoint: the validation accuracy is measured once, at the end.
    Returns {"learning_rate", "examples", "steps", "accuracy", "parts"}."""
    import copy
    import time

    import torch

    from labs.core.work import batching

    model, started = copy.deepcopy(start), time.perf_counter()
    try:
        torch.manual_seed(s.seed)  # as train() does before its first update (dropout draws from here)
        device = str(next(model.parameters()).device)
        train_set, val_set = training.encoded_sets("sentiment", tokenizer, s, data, device)
        total = math.ceil(len(train_set) / s.batch_size) * s.epochs
        optimizer, scheduler = training.make_optimizer(model, s, total)
        step = 0
        for epoch in range(1, s.epochs + 1):
            model.train()
            for index in training.epoch_batches(len(train_set), s.batch_size, s.seed, epoch):
                batching.activity.wait_for_quiet(training.YIELD_TO_REQUESTS_S)  # students' clicks go first
                loss = training.update(model, train_set.batch(index), optimizer, scheduler)
                step += 1
                yield training.Step("pre-trained", step, total, loss, time.perf_counter() - started,
                                    scheduler.get_last_lr()[0])
                if stop is not None and stop.is_set():
                    break
            if stop is not None and stop.is_set():
                break
        _, accuracy, _ = training.evaluate(model, val_set)
        return {"learning_rate": s.learning_rate, "examples": s.train_examples, "steps": step, "accuracy": accuracy,
                "parts": distances(theta0, snapshot(model))}
    finally:
        del model


def run_all(plan: list[Settings], data, stop=None) -> Iterator:
    """Each run in turn: its Steps, then its distances (a dict, as fine_tune returns it). Every run starts from the
    same θ₀, loaded once (the pre-trained encoder and the head the seed draws, as train() loads them)."""
    start, tokenizer, _ = training.load_and_encode(plan[0], data, scratch=False)
    theta0 = snapshot(start)
    try:
        for s in plan:
            yield (yield from fine_tune(start, tokenizer, s, data, theta0, stop))
            if stop is not None and stop.is_set():
                return
    finally:
        del start


def units(plan: list[Settings]) -> int:
    return sum(math.ceil(s.train_examples / s.batch_size) * s.epochs + OVERHEAD_STEPS for s in plan)


# Not yet a GPU job on ZeroGPU (gpu=True): tests/test_zerogpu.py lists every GPU kind and checks each in a forked worker.
JOBS.kind("theta_distance", seconds_per_unit=SECONDS_PER_STEP, gpu=True)


def ticket(plan: list[Settings], data, owner: str | None = None, page: bool = False) -> Ticket:
    """Follow the runs with these settings (identical requests train once and share the result)."""
    key = (tuple((s.model, s.learning_rate, s.train_examples, s.seed) for s in plan), data_key(data))
    return JOBS.submit("theta_distance", key, lambda control: run_all(plan, data, control), units=units(plan),
                       owner=owner, replace_running=page)


def result_json(plan: list[Settings], rows: list[dict]) -> dict:
    s = plan[0]
    return {"model": s.model, "seed": s.seed, "learning_rates": sorted({p.learning_rate for p in plan}),
            "sizes": sorted({p.train_examples for p in plan}),
            "settings": {"strategy": "full", "epochs": EPOCHS, "batch_size": BATCH, "warmup_ratio": s.warmup_ratio,
                         "weight_decay": s.weight_decay},
            "runs": rows, "course": [{"document": course_quotes.get(q).document, "where": course_quotes.get(q).where,
                                      "text": course_quotes.text(q)} for q in QUOTE_IDS]}


def progress_json(event: training.Step, done: int, runs: int) -> dict:
    return {"status": "running", "run": done + 1, "runs": runs, "step": event.step, "total_steps": event.total_steps}


async def theta_distance_stream(model: str, learning_rates: list | None = None, sizes: list | None = None,
                                seed: int = 0) -> AsyncIterator[dict]:
    """The `theta_distance` API: the queue's place while it waits, the progress, then the distances' JSON."""
    plan, data = check(model, learning_rates, sizes, seed)
    rows = []
    async for event in ticket(plan, data):
        if isinstance(event, Queued):
            yield event.to_json()
        elif isinstance(event, dict):
            rows.append(event)
        elif isinstance(event, training.Step):
            yield progress_json(event, len(rows), len(plan))
    yield result_json(plan, rows)


def theta_distance(model: str, learning_rates: list | None = None, sizes: list | None = None, seed: int = 0) -> dict:
    """The runs here and now, without the queue (tests; a script that runs the lab's code directly)."""
    plan, data = check(model, learning_rates, sizes, seed)
    return result_json(plan, [e for e in run_all(plan, data) if isinstance(e, dict)])


def setting_name(run: dict) -> str:
    return f"lr {run['learning_rate']:g}, {run['examples']} examples"


def figure(result: dict):
    """Relative distance from θ₀ per part (bottom to top, log scale), one line per run: colour = learning rate,
    dash = number of examples."""
    colours = dict(zip(result["learning_rates"], (plots.BLUE, plots.ORANGE, plots.RED, plots.PURPLE)))
    dashes = dict(zip(result["sizes"], ("dot", "dash", "solid")[-len(result["sizes"]):]))
    fig = go.Figure()
    for run in result["runs"]:
        parts = [p for p in run["parts"] if p["distance"] > 0]  # a log axis cannot show 0 (a rate of 0)
        fig.add_trace(go.Scatter(x=[p["part"] for p in parts], y=[p["distance"] for p in parts], name=setting_name(run),
                                 mode="lines+markers", marker=dict(size=9),
                                 line=dict(color=colours[run["learning_rate"]], width=3,
                                           dash=dashes[run["examples"]])))
    if result["runs"]:
        fig.update_xaxes(categoryorder="array", categoryarray=[p["part"] for p in result["runs"][0]["parts"]],
                         title="part of the model (bottom → top)")
    fig.update_yaxes(type="log", title="‖θ − θ₀‖ / ‖θ₀‖", exponentformat="power")
    return plots.style(fig, plots.safe(f"{result['model']}: how far each part moved from θ₀"), 440,
                       legend=dict(orientation="h", y=-0.3))
