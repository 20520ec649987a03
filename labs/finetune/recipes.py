"""Fine-tune, why not every task fine-tunes the same way: the course's recipes beside this lab's default for each
task, why they differ, and both settings run. The recipes are quoted from the lecture's Appendix D and its
hyper-parameter slide; both settings run on the same data and seed (a shared job: a class asking for the same pair
trains it once)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator

from labs.core.ui import course_quotes
from labs.core.work.jobs import JOBS, Ticket
from labs.finetune import tasks
from labs.finetune.strategies import DEFAULTS, Settings, check_settings
from labs.finetune.training import RunResult, train

LECTURE = "Lecture, Week 6"
APPENDIX = "Appendix D: Fine-tuning Recipes by Task"
MECHANICS = "Fine-tuning: The Mechanics"
START = course_quotes.text("recipe_start")  # the appendix's last line
GENERAL_RATE, GENERAL_EPOCHS = course_quotes.text("recipe_rate"), course_quotes.text("recipe_epochs")  # mechanics


@dataclasses.dataclass(frozen=True)
class Recipe:
    task: str
    quote: str  # the course's words: course_quotes' entries (an appendix row keeps its tabs)
    where: str  # the slide it is on
    course: tuple[float, int]  # the course's setting run here: its rate, the top of its epoch range
    why: str  # one line: why this lab's default differs


RECIPES = {
    "sentiment": Recipe("sentiment", course_quotes.text("recipe_sentiment"), APPENDIX, (2e-5, 4),
                        "5e-5 is the top of the course's own range (“" + GENERAL_RATE + "”): {steps} steps an "
                        "epoch are few updates, and the new head starts random."),
    "pair": Recipe("pair", f"{GENERAL_RATE} · {GENERAL_EPOCHS}", MECHANICS, (5e-5, 4),
                   "The appendix has no row for sentence pairs; {steps} steps an epoch on all-MiniLM-L6-v2 (6 layers, "
                   "384 wide): a higher rate and more epochs (chosen with python -m tests.benchmarks finetune_tasks)."),
    "ner": Recipe("ner", course_quotes.text("recipe_ner"), APPENDIX, (5e-5, 3),
                  "A new, random head labels every word with one of 7 tags from {steps} steps an epoch: a higher rate "
                  "and more epochs."),
    "qa": Recipe("qa", course_quotes.text("recipe_qa"), APPENDIX, (5e-5, 4),
                 "Two new, random heads (start and end) choose among up to 160 token positions from {steps} steps an "
                 "epoch: a higher rate and more epochs."),
}
HEADERS = ["task", "the course's recipe (quoted)", "this lab's default", "why"]
RUN_HEADERS = ["setting", "learning rate", "epochs", "validation metric", "seconds"]


def quotes() -> list[tuple[str, str]]:
    """(quote, slide title) for each quote shown, to check against the lecture's text. The pair row's quote is
    two quotes from one slide, joined by " · "."""
    parts = [(q, r.where) for r in RECIPES.values() for q in r.quote.split(" · ")]
    return parts + [(START, APPENDIX)]


def steps_per_epoch(task: str) -> int:
    """Training steps in one epoch at the lab's defaults (the built-in data, batch size 16)."""
    n = min(DEFAULTS["train_examples"], len(tasks.task_data(task).train))
    return math.ceil(n / DEFAULTS["batch_size"])


def rate(lr: float) -> str:
    """A learning rate as the course writes it: 5e-5, 1e-4."""
    return f"{lr:.0e}".replace("e-0", "e-")


def table_rows() -> list[list[str]]:
    return [[tasks.TASKS[task].split(" (")[0], f"“{r.quote}” ({r.where.split(':')[0]})",
             f"{rate(tasks.TASK_DEFAULTS[task][0])}, {tasks.TASK_DEFAULTS[task][1]} epochs",
             r.why.format(steps=steps_per_epoch(task))] for task, r in RECIPES.items()]


def settings_pair(model: str, task: str, seed: int = 0) -> tuple[Settings, Settings]:
    """(the course's setting, this lab's default) for a task; everything else the lab's defaults."""
    data = tasks.task_data(tasks.check_task(task))
    course_lr, course_epochs = RECIPES[task].course
    lab_lr, lab_epochs = tasks.TASK_DEFAULTS[task]
    n = min(DEFAULTS["train_examples"], len(data.train))
    return tuple(check_settings(model, "full", lr, epochs, DEFAULTS["batch_size"], n, seed, max_train=len(data.train),
                                task=task) for lr, epochs in ((course_lr, course_epochs), (lab_lr, lab_epochs)))


def run_both(pair: tuple[Settings, Settings], stop=None) -> Iterator:
    """Every event of the two runs, the course's setting first (not kept for "try your model")."""
    data = tasks.task_data(pair[0].task)
    for s in pair:
        yield from train(s, data, False, stop, keep_for_try=False)
        if stop is not None and stop.is_set():
            return


JOBS.kind("recipes", seconds_per_unit=0.25, gpu=True)


def ticket(pair: tuple[Settings, Settings], owner: str | None = None) -> Ticket:
    """Follow the two runs (identical requests share them)."""
    units = sum(math.ceil(s.train_examples / s.batch_size) * s.epochs + 12 for s in pair)
    return JOBS.submit("recipes", tuple(dataclasses.astuple(s) for s in pair),
                       lambda control: run_both(pair, control), units=units, owner=owner, replace_running=True)


def run_rows(results: list[RunResult]) -> list[list[str]]:
    names = ("the course's recipe", "this lab's default")
    return [[name, rate(r.settings.learning_rate), str(r.settings.epochs),
             f"{r.accuracy_before:.1%} → {r.accuracy_after:.1%} ({tasks.METRIC_WORDS[tasks.METRIC[r.task]]})",
             f"{r.seconds:.1f}"] for name, r in zip(names, results)]
