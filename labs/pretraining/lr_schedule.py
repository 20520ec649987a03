"""Pre-training, the recipe: BERT's and GPT-3's learning-rate schedules (Lecture, Week 6, Appendix C; Lecture,
Pre-training Strategies, "BERT Training Details"), computed by transformers' own schedulers on a real torch AdamW.

A tiny parameter (4 numbers, loss = their squares' sum) gets the course's AdamW (betas, weight decay, peak
learning rate), and transformers' `get_linear_schedule_with_warmup` (BERT) or `get_cosine_schedule_with_warmup`
(GPT-3) drives it. The optimizer really steps the first STEPPED steps, each learning rate read from the
scheduler's `get_last_lr()`. A curve of a million steps is not stepped one by one (seconds of Python per click):
its points are the scheduler's own `lr_lambdas[0](step)` times the peak, which is what `get_last_lr()` reports at
that step (LambdaLR multiplies the base rate by it); a test checks the two agree step for step."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from labs.core.errors import BadInput, check_choice, check_int, check_number
from labs.core.ui import course_quotes

SCHEDULES = ("bert_linear", "gpt3_cosine")
NAMES = {"bert_linear": "BERT: linear warm-up, linear decay", "gpt3_cosine": "GPT-3: linear warm-up, cosine decay"}
SCHEDULERS = {"bert_linear": "get_linear_schedule_with_warmup", "gpt3_cosine": "get_cosine_schedule_with_warmup"}
# The course's settings (Appendix C). BERT's 1,000,000 steps are its "Max steps"; GPT-3's 93,750 are the course's
# 300B tokens at 3.2M tokens a batch. GPT-3's 117 warm-up steps are not the course's: Brown et al. (2020,
# Appendix B) warm up over 375M tokens, 117 batches of 3.2M tokens.
SETTINGS = {
    "bert_linear": {"peak_lr": 1e-4, "betas": (0.9, 0.999), "weight_decay": 0.01, "warmup_steps": 10_000,
                    "total_steps": 1_000_000},
    "gpt3_cosine": {"peak_lr": 6e-5, "betas": (0.9, 0.95), "weight_decay": 0.1, "warmup_steps": 117,
                    "total_steps": 93_750},
}
STEPPED = 2_000  # steps the optimizer really takes
POINTS = 1_000  # points on the curve
MAX_STEPS = 10_000_000
QUOTES = {k: course_quotes.text(k) for k in ("recipe_bert_optimizer", "recipe_bert_steps", "recipe_gpt3_optimizer",
                                            "recipe_gpt3_schedule", "recipe_gpt3_tokens", "recipe_bert_details")}


@dataclass
class Schedule:
    schedule: str
    scheduler: str  # the transformers function
    peak_lr: float
    warmup_steps: int
    total_steps: int
    optimizer: dict  # the optimizer's settings as torch reports them (its param group, after the scheduler)
    optimizer_repr: str  # print(optimizer)
    steps: list[int]  # the curve: steps and the learning rate at each
    lr: list[float]
    stepped_steps: int  # how many steps the optimizer really took
    stepped_lr: list[float]  # get_last_lr() before each of those steps
    parameter: list[float]  # the tiny parameter after them
    notes: list[str]

    def lr_at(self, step: int) -> float:
        return self.lr[self.steps.index(step)]

    def to_json(self) -> dict:
        return asdict(self)


def check_settings(schedule, peak_lr, warmup_steps, total_steps) -> tuple[str, float, int, int]:
    schedule = check_choice(schedule, SCHEDULES, "The schedule")
    peak = check_number(peak_lr, "The peak learning rate", 0, 1, low_open=True)
    total = check_int(total_steps, "The total steps", 1, MAX_STEPS)
    warmup = check_int(warmup_steps, "The warm-up steps", 0, MAX_STEPS)
    if warmup > total:
        raise BadInput(f"The warm-up ({warmup:,} steps) must not be longer than the whole run ({total:,} steps).")
    return schedule, peak, warmup, total


def optimizer_and_scheduler(schedule: str, peak: float, warmup: int, total: int):
    """A real AdamW over a tiny parameter, with the course's betas and weight decay, and the transformers
    scheduler of this schedule."""
    import torch
    import transformers

    settings = SETTINGS[schedule]
    parameter = torch.nn.Parameter(torch.ones(4))
    optimizer = torch.optim.AdamW([parameter], lr=peak, betas=settings["betas"],
                                  weight_decay=settings["weight_decay"])
    make = getattr(transformers, SCHEDULERS[schedule])
    return parameter, optimizer, make(optimizer, num_warmup_steps=warmup, num_training_steps=total)


def step_really(parameter, optimizer, scheduler, steps: int) -> list[float]:
    """Train the tiny parameter `steps` steps; the learning rate of each, as the scheduler reports it."""
    rates = []
    for _ in range(steps):
        rates.append(float(scheduler.get_last_lr()[0]))
        optimizer.zero_grad()
        (parameter ** 2).sum().backward()
        optimizer.step()
        scheduler.step()
    return rates


def curve_steps(warmup: int, total: int) -> list[int]:
    """About POINTS evenly spaced steps from 0 to total, with the warm-up's midpoint and end."""
    steps = set(np.linspace(0, total, min(POINTS, total) + 1).round().astype(int).tolist())
    steps |= {warmup // 2, warmup, total}
    return sorted(steps)


def settings_of(optimizer) -> dict:
    """The optimizer's one param group, as torch holds it (the parameters themselves left out)."""
    group = optimizer.param_groups[0]
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in group.items()
            if k != "params" and (v is None or isinstance(v, (bool, int, float, str, tuple)))}


def lr_schedule(schedule="bert_linear", peak_lr=None, warmup_steps=None, total_steps=None) -> Schedule:
    defaults = SETTINGS[check_choice(schedule, SCHEDULES, "The schedule")]
    schedule, peak, warmup, total = check_settings(
        schedule, defaults["peak_lr"] if peak_lr is None else peak_lr,
        defaults["warmup_steps"] if warmup_steps is None else warmup_steps,
        defaults["total_steps"] if total_steps is None else total_steps)
    parameter, optimizer, scheduler = optimizer_and_scheduler(schedule, peak, warmup, total)
    settings, shown = settings_of(optimizer), repr(optimizer)  # before stepping: lr is step 0's
    factor = scheduler.lr_lambdas[0]  # what get_last_lr() multiplies the peak by, at any step
    steps = curve_steps(warmup, total)
    lr = [peak * factor(s) for s in steps]
    stepped = step_really(parameter, optimizer, scheduler, min(STEPPED, total))
    notes = [f"The optimizer really took the first {len(stepped):,} steps; the curve's {len(steps):,} points are the "
             f"scheduler's own factor at each step × {peak:g}, what get_last_lr() reports there."]
    if schedule == "gpt3_cosine":
        notes.append("transformers' cosine decays to 0; GPT-3 (Brown et al. 2020, Appendix B) decays to 10 % of the "
                     "peak over 260B tokens and stays there. Its warm-up, 375M tokens (117 steps of 3.2M tokens), "
                     "is the paper's, not the course's.")
    return Schedule(schedule, SCHEDULERS[schedule], peak, warmup, total, settings, shown, steps,
                    [float(x) for x in lr], len(stepped), stepped, [float(x) for x in parameter.detach()], notes)


def lr_schedule_json(schedule: str = "bert_linear", peak_lr: float | None = None, warmup_steps: int | None = None,
                     total_steps: int | None = None) -> dict:
    """The endpoint: None (or leaving an argument out) takes the course's value for that schedule."""
    return lr_schedule(schedule, peak_lr, warmup_steps, total_steps).to_json()


def figure(s: Schedule):
    """The learning rate against the step, the warm-up's end marked."""
    import plotly.graph_objects as go

    from labs.core.ui import plots

    fig = go.Figure(go.Scatter(x=s.steps, y=s.lr, mode="lines", name=NAMES[s.schedule],
                               line=dict(color=plots.BLUE, width=3)))
    if s.warmup_steps:
        fig.add_vline(x=s.warmup_steps, line=dict(color=plots.RED, dash="dash"),
                      annotation_text=f"warm-up ends: step {s.warmup_steps:,}", annotation_position="bottom right")
    plots.style(fig, plots.safe(f"{NAMES[s.schedule]} (peak {s.peak_lr:g})"), height=380,
                xaxis_title="training step", yaxis_title="learning rate", showlegend=False)
    fig.update_yaxes(exponentformat="e", rangemode="tozero")
    return fig
