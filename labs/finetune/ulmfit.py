"""Fine-tune, ULMFiT's middle stage: a pre-trained language model first goes on with its own objective (the next
word for a causal LM, the masked word for a masked LM) on in-domain text without labels, and only then learns the
task from a few labelled examples. The same few examples also fine-tune the model without the middle stage, so
the two accuracies on the domain differ by the middle stage alone.

The domain is the built-in reviews: the middle stage reads the training reviews' text (their labels hidden, as
ULMFiT reads the IMDb corpus), the fine-tune uses `labelled` of them with their labels, and both are measured on
the validation reviews (accuracy, and the language model's loss on their text before and after the middle
stage). Both fine-tunes start from the same head weights (the seed) and see the same batches.

The middle stage is domain-adaptive pre-training (Textbook 20.5.3): beside the in-domain loss, the language model's
perplexity on short texts that are not reviews (LM Lab's own, assets/domains.txt: news, conversation, legal,
biomedical, code, social media) is measured before and after it, to show what adapting to one domain does to
the others."""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import plotly.graph_objects as go

from labs.core.errors import BadInput, check_int
from labs.core.models import models
from labs.core.ui import course_quotes, plots
from labs.core.work.jobs import JOBS, Queued, Ticket
from labs.finetune import training
from labs.finetune.data import builtin_data, take_train
from labs.finetune.strategies import Settings

FAMILIES = ("causal", "masked")  # a language model with its own pre-training head
STRATEGIES = "Lecture, Pre-training Strategies"
SLIDE = "ULMFiT"
# The lecture's three stages: course_quotes' entries (two slides are titled "ULMFiT"; checked under them).
STAGES = tuple(zip(("Pretraining", "Domain adaptation", "Fine-tuning"),
                   (course_quotes.text(f"ulmfit_{k}") for k in range(3))))
LIMITS = {"labelled": (8, 264), "lm_epochs": (1, 5), "epochs": (1, 10)}
DEFAULTS = {"labelled": 32, "lm_epochs": 1, "epochs": 5, "seed": 0}
BATCH = 8
LM_RATE, TASK_RATE = 5e-5, 5e-5  # the lecture's small-data rate for both stages (ULMFiT tunes them; we do not)
MLM_PROBABILITY = 0.15
PHASES = ("middle stage", "fine-tune without", "fine-tune with")
SECONDS_PER_STEP = 1.5  # a first guess (SmolLM2, batch 8, 2 cores), replaced by measured runs
OTHER_DOMAINS = Path(__file__).resolve().parents[2] / "assets" / "domains.txt"  # LM Lab's own short texts
DOMAIN_QUOTES = ("domain_similar", "domain_adaptive")  # course_quotes' entries (Textbook 20.5.3)


@functools.cache
def other_domain_texts() -> tuple[tuple[str, str], ...]:
    """((domain, text), …) from assets/domains.txt, none of them a review: "# name" (at most three words, no colon)
    starts a domain, other "#" lines are comments, one text a line."""
    rows, current = [], None
    for line in OTHER_DOMAINS.read_text(encoding="utf-8").splitlines():
        if line.startswith("# ") and ":" not in line and len(line.split()) <= 3:
            current = line[2:].strip()
        elif line.strip() and not line.startswith("#") and current:
            rows.append((current, line.strip()))
    return tuple(rows)


@dataclass(frozen=True)
class Plan:
    model: str
    family: str
    labelled: int = DEFAULTS["labelled"]
    lm_epochs: int = DEFAULTS["lm_epochs"]
    epochs: int = DEFAULTS["epochs"]
    seed: int = DEFAULTS["seed"]

    def settings(self, rate: float, epochs: int) -> Settings:
        """The lab's run settings for one stage (AdamW, warm-up 10 %, linear decay: training.make_optimizer)."""
        return Settings(self.model, "full", rate, epochs, BATCH, self.labelled, self.seed)


@dataclass
class Result:
    plan: Plan
    lm_loss_before: float = 0.0  # the language model's mean loss on the validation reviews' text
    lm_loss_after: float = 0.0
    ood_loss_before: float = 0.0  # the same loss on the texts of other domains (other_domain_texts)
    ood_loss_after: float = 0.0
    lm_history: list[dict] = field(default_factory=list)  # {"step", "loss"}
    runs: dict = field(default_factory=dict)  # "without" / "with": {"accuracy", "history", "eval"}
    unlabelled_texts: int = 0
    validation: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict:
        return {"model": self.plan.model, "family": self.plan.family, "labelled": self.plan.labelled,
                "lm_epochs": self.plan.lm_epochs, "epochs": self.plan.epochs, "seed": self.plan.seed,
                "batch_size": BATCH, "lm_learning_rate": LM_RATE, "learning_rate": TASK_RATE,
                "unlabelled_texts": self.unlabelled_texts, "validation": self.validation,
                "objective": "next word" if self.plan.family == "causal" else f"masked word ({MLM_PROBABILITY:.0%})",
                "lm_loss_before": self.lm_loss_before, "lm_loss_after": self.lm_loss_after,
                "perplexity_before": math.exp(self.lm_loss_before), "perplexity_after": math.exp(self.lm_loss_after),
                "ood_loss_before": self.ood_loss_before, "ood_loss_after": self.ood_loss_after,
                "ood_perplexity_before": math.exp(self.ood_loss_before),
                "ood_perplexity_after": math.exp(self.ood_loss_after),
                "ood_texts": len(other_domain_texts()),
                "ood_domains": list(dict.fromkeys(d for d, _ in other_domain_texts())),
                "lm_history": self.lm_history, "without": self.runs.get("without"), "with": self.runs.get("with"),
                "gain": (self.runs["with"]["accuracy"] - self.runs["without"]["accuracy"]
                         if {"with", "without"} <= self.runs.keys() else None),
                "seconds": round(self.seconds, 2),
                "stages": [{"stage": name, "quote": quote, "document": STRATEGIES, "slide": SLIDE}
                           for name, quote in STAGES],
                "domain_shift": [{"document": course_quotes.get(q).document, "where": course_quotes.get(q).where,
                                  "text": course_quotes.text(q)} for q in DOMAIN_QUOTES]}


def check_plan(model, labelled=DEFAULTS["labelled"], lm_epochs=DEFAULTS["lm_epochs"], epochs=DEFAULTS["epochs"],
               seed=DEFAULTS["seed"]) -> Plan:
    values = {}
    for name, value in (("labelled", labelled), ("lm_epochs", lm_epochs), ("epochs", epochs)):
        low, high = LIMITS[name]
        values[name] = check_int(value, f"The {name.replace('_', ' ')}", low, high)
    choice = models.get_choice(model)
    models.check_family(choice, FAMILIES)  # an encoder without its pre-training head has no objective to go on with
    return Plan(choice.name, choice.family, seed=check_int(seed, "The seed", 0, 2**32 - 1), **values)


def collator(tokenizer, family: str, seed: int):
    """transformers' own language-modelling batches: labels = the input ids (the model shifts them) with padding
    at -100 for a causal LM; 15 % of the tokens chosen (80/10/10) for a masked LM, from `seed`."""
    from transformers import DataCollatorForLanguageModeling

    return DataCollatorForLanguageModeling(tokenizer, mlm=family == "masked", mlm_probability=MLM_PROBABILITY,
                                           seed=seed if family == "masked" else None)


def lm_batch(tokenizer, texts: list[str], collate, device: str) -> dict:
    ids = tokenizer(list(texts), truncation=True, max_length=training.MAX_LENGTH)["input_ids"]
    batch = collate([{"input_ids": row} for row in ids])
    return {k: v.to(device) for k, v in batch.items()}


def lm_loss(model, tokenizer, texts: list[str], family: str, seed: int) -> float:
    """The objective's mean loss per predicted token on texts, without gradients (a masked LM: the same draw of
    masks for every call with the same seed)."""
    import torch

    model.eval()
    collate, device, total, count = collator(tokenizer, family, seed), str(next(model.parameters()).device), 0.0, 0
    with torch.no_grad():
        for start in range(0, len(texts), 32):
            batch = lm_batch(tokenizer, texts[start:start + 32], collate, device)
            n = int((batch["labels"][:, 1:] != -100).sum() if family == "causal" else (batch["labels"] != -100).sum())
            total += model(**batch).loss.item() * n
            count += n
    return total / max(count, 1)


def middle_stage(model, tokenizer, texts: list[str], plan: Plan, history: list, stop=None) -> Iterator:
    """The language-modelling objective on the in-domain text: a Step per update (phase "middle stage")."""
    import torch

    s = plan.settings(LM_RATE, plan.lm_epochs)
    collate, device = collator(tokenizer, plan.family, plan.seed), str(next(model.parameters()).device)
    total = math.ceil(len(texts) / BATCH) * plan.lm_epochs
    optimizer, scheduler = training.make_optimizer(model, s, total)
    torch.manual_seed(plan.seed)
    model.train()
    started, step = time.perf_counter(), 0
    for epoch in range(1, plan.lm_epochs + 1):
        for index in training.epoch_batches(len(texts), BATCH, plan.seed, epoch):
            loss = training.update(model, lm_batch(tokenizer, [texts[i] for i in index], collate, device), optimizer,
                                   scheduler)
            step += 1
            history.append({"step": step, "loss": loss})
            yield training.Step(PHASES[0], step, total, loss, time.perf_counter() - started)
            if stop is not None and stop.is_set():
                return
    model.eval()


def classifier_from(lm_model, tokenizer, num_labels: int, seed: int):
    """A sequence classifier whose transformer is lm_model's (its pre-training head dropped) and whose new head
    (and, for BERT, pooler) starts from `seed`: the same start for the run with and without the middle stage.
    A causal LM classifies from its last real token (transformers finds it through the pad id)."""
    import torch
    from transformers import AutoModelForSequenceClassification

    config = copy.deepcopy(lm_model.config)
    config.num_labels, config.pad_token_id = num_labels, tokenizer.pad_token_id
    torch.manual_seed(seed)
    classifier = AutoModelForSequenceClassification.from_config(config)
    missing = classifier.base_model.load_state_dict(lm_model.base_model.state_dict(), strict=False).missing_keys
    if any("pooler" not in key for key in missing):
        raise BadInput(f"'{type(lm_model).__name__}' and its classifier do not share a transformer.")
    return classifier.to(next(lm_model.parameters()).device)


def fine_tune(classifier, tokenizer, plan: Plan, data, phase: str, stop=None) -> Iterator:
    """The lab's training loop (AdamW, warm-up, the same shuffled batches for a seed) on `labelled` reviews;
    a Step per update; returns {"accuracy", "history", "eval"} on the validation reviews."""
    s = plan.settings(TASK_RATE, plan.epochs)
    device = str(next(classifier.parameters()).device)
    train_set = training.EncodedSentences(tokenizer, take_train(data, plan.labelled, plan.seed), device)
    val_set = training.EncodedSentences(tokenizer, data.validation, device)
    total = math.ceil(len(train_set) / BATCH) * plan.epochs
    optimizer, scheduler = training.make_optimizer(classifier, s, total)
    history, evals, started, step = [], [], time.perf_counter(), 0
    for epoch in range(1, plan.epochs + 1):
        classifier.train()
        for index in training.epoch_batches(len(train_set), BATCH, plan.seed, epoch):
            loss = training.update(classifier, train_set.batch(index), optimizer, scheduler)
            step += 1
            history.append({"step": step, "loss": loss})
            yield training.Step(phase, step, total, loss, time.perf_counter() - started)
            if stop is not None and stop.is_set():
                break
        loss, accuracy, _ = training.evaluate(classifier, val_set)
        evals.append({"epoch": epoch, "loss": loss, "accuracy": accuracy})
        if stop is not None and stop.is_set():
            break
    return {"accuracy": evals[-1]["accuracy"], "history": history, "eval": evals}


def run(plan: Plan, stop=None) -> Iterator:
    """The middle stage on the reviews' text, then the two fine-tunes (without it, with it): Steps, then the
    Result. The loaded model stays as it is: every stage trains a copy."""
    started = time.perf_counter()
    loaded = models.load(plan.model, *FAMILIES, head="mlm" if plan.family == "masked" else "")
    models.require_trained_head(loaded)  # the objective needs the checkpoint's own head
    data = builtin_data()
    texts, held_out = [t for t, _ in data.train], [t for t, _ in data.validation]
    result = Result(plan, unlabelled_texts=len(texts), validation=len(held_out))
    adapted = copy.deepcopy(loaded.model)
    try:
        other = [t for _, t in other_domain_texts()]
        result.lm_loss_before = lm_loss(adapted, loaded.tokenizer, held_out, plan.family, plan.seed)
        result.ood_loss_before = lm_loss(adapted, loaded.tokenizer, other, plan.family, plan.seed)
        yield from middle_stage(adapted, loaded.tokenizer, texts, plan, result.lm_history, stop)
        result.lm_loss_after = lm_loss(adapted, loaded.tokenizer, held_out, plan.family, plan.seed)
        result.ood_loss_after = lm_loss(adapted, loaded.tokenizer, other, plan.family, plan.seed)
        for name, source in (("without", loaded.model), ("with", adapted)):
            if stop is not None and stop.is_set():
                return
            classifier = classifier_from(source, loaded.tokenizer, len(data.labels), plan.seed)
            result.runs[name] = yield from fine_tune(classifier, loaded.tokenizer, plan, data,
                                                     PHASES[1 if name == "without" else 2], stop)
            del classifier
    finally:
        del adapted
    result.seconds = time.perf_counter() - started
    yield result


JOBS.kind("ulmfit", seconds_per_unit=SECONDS_PER_STEP, gpu=True)


def units(plan: Plan) -> int:
    """Training steps of the three stages (the estimate's unit), plus the evaluations."""
    texts = len(builtin_data().train)
    return math.ceil(texts / BATCH) * plan.lm_epochs + 2 * math.ceil(plan.labelled / BATCH) * plan.epochs + 20


def ticket(plan: Plan, owner: str | None = None, page: bool = False) -> Ticket:
    """Follow the three stages with this plan (identical plans run once and are shared)."""
    return JOBS.submit("ulmfit", dataclasses.astuple(plan), lambda control: run(plan, control), units=units(plan),
                       owner=owner, replace_running=page)


async def ulmfit_stream(model: str, labelled: int = DEFAULTS["labelled"], lm_epochs: int = DEFAULTS["lm_epochs"],
                        epochs: int = DEFAULTS["epochs"], seed: int = DEFAULTS["seed"]) -> AsyncIterator[dict]:
    """The `ulmfit` API: the queue's place, {"status": "running", "phase", "step", "total_steps", "loss"}, then the
    result's JSON."""
    plan = check_plan(model, labelled, lm_epochs, epochs, seed)
    async for event in ticket(plan):
        if isinstance(event, Queued):
            yield event.to_json()
        elif isinstance(event, Result):
            yield event.to_json()
        elif isinstance(event, training.Step):
            yield {"status": "running", "phase": event.phase, "step": event.step, "total_steps": event.total_steps,
                   "loss": event.loss}


def loss_figure(result: dict):
    """The middle stage's language-model loss per step (left) and both fine-tunes' validation accuracy per epoch."""
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=("middle stage: language-model loss per step",
                                                        "fine-tune: validation accuracy per epoch"))
    history = result["lm_history"]
    fig.add_trace(go.Scatter(x=[h["step"] for h in history], y=[h["loss"] for h in history], mode="lines",
                             name="middle stage", line=dict(color=plots.PURPLE, width=3)), row=1, col=1)
    for key, name, colour, dash in (("without", "without the middle stage", plots.RED, "dash"),
                                    ("with", "with the middle stage", plots.BLUE, "solid")):
        evals = result[key]["eval"]
        fig.add_trace(go.Scatter(x=[e["epoch"] for e in evals], y=[e["accuracy"] for e in evals], name=name,
                                 mode="lines+markers", line=dict(color=colour, width=3, dash=dash), marker=dict(size=10)),
                      row=1, col=2)
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%", row=1, col=2)
    fig.update_xaxes(title="step", row=1, col=1)
    fig.update_xaxes(title="epoch", dtick=1, row=1, col=2)
    return plots.style(fig, plots.safe(f"{result['model']}: ULMFiT's stages"), 420,
                       legend=dict(orientation="h", y=-0.25))
