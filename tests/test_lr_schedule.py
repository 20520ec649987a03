"""Pre-training, the recipe (labs/pretraining/lr_schedule.py): the curve against the scheduler's own get_last_lr()
sequence on an independent AdamW, and against the schedules' formulas worked by hand."""

from __future__ import annotations

import math

import pytest
import torch
import transformers
from conftest import screenshot

from labs.core.errors import BadInput
from labs.core.ui import course_quotes
from labs.pretraining import lr_schedule as ls
from labs.pretraining import tab_recipe


def oracle_rates(make, peak, warmup, total, betas):
    """get_last_lr() before each step of a fresh AdamW driven by the transformers scheduler."""
    p = torch.nn.Parameter(torch.zeros(2))
    opt = torch.optim.AdamW([p], lr=peak, betas=betas)
    scheduler = make(opt, num_warmup_steps=warmup, num_training_steps=total)
    rates = []
    for _ in range(total + 1):
        rates.append(scheduler.get_last_lr()[0])
        opt.step()
        scheduler.step()
    return rates


@pytest.mark.parametrize("schedule, make", [("bert_linear", transformers.get_linear_schedule_with_warmup),
                                            ("gpt3_cosine", transformers.get_cosine_schedule_with_warmup)])
def test_the_curve_is_the_schedulers_own_sequence(schedule, make):
    s = ls.lr_schedule(schedule, 3e-4, 40, 300)
    oracle = oracle_rates(make, 3e-4, 40, 300, ls.SETTINGS[schedule]["betas"])
    assert s.steps == list(range(301)) and s.lr == pytest.approx(oracle, rel=1e-12, abs=1e-15)
    assert s.stepped_steps == 300 and s.stepped_lr == pytest.approx(oracle[:300], rel=1e-12, abs=1e-15)


def test_berts_schedule_by_hand():
    s = ls.lr_schedule("bert_linear")  # the course's: 1e-4, 10,000 warm-up steps, 1,000,000 in all
    assert (s.peak_lr, s.warmup_steps, s.total_steps) == (1e-4, 10_000, 1_000_000)
    assert s.lr_at(0) == 0 and s.lr_at(5_000) == pytest.approx(0.5e-4) and s.lr_at(10_000) == pytest.approx(1e-4)
    assert max(s.lr) == pytest.approx(1e-4) and s.lr_at(1_000_000) == 0
    step = s.steps[len(s.steps) // 2]
    assert s.lr_at(step) == pytest.approx(1e-4 * (1_000_000 - step) / 990_000)
    assert s.stepped_lr[1] == pytest.approx(1e-4 / 10_000) and s.stepped_steps == ls.STEPPED
    assert s.parameter[0] < 1  # the tiny parameter really moved towards 0


def test_gpt3s_cosine_by_hand():
    s = ls.lr_schedule("gpt3_cosine", 6e-5, 100, 10_100)
    assert s.lr_at(50) == pytest.approx(3e-5) and s.lr_at(100) == pytest.approx(6e-5)
    assert s.lr_at(5_100) == pytest.approx(3e-5)  # half-way through the decay: cos(π/2) = 0
    step = next(x for x in s.steps if x >= 2_600)  # a quarter of the way through the decay, or just after
    assert s.lr_at(step) == pytest.approx(6e-5 * 0.5 * (1 + math.cos(math.pi * (step - 100) / 10_000)))
    assert s.lr_at(10_100) == pytest.approx(0, abs=1e-18)


def test_the_optimizer_has_the_courses_settings_as_torch_reports_them():
    bert, gpt3 = ls.lr_schedule("bert_linear", None, 10, 20), ls.lr_schedule("gpt3_cosine", None, 10, 20)
    assert bert.optimizer["betas"] == [0.9, 0.999] and bert.optimizer["weight_decay"] == 0.01
    assert gpt3.optimizer["betas"] == [0.9, 0.95] and gpt3.optimizer["weight_decay"] == 0.1
    assert bert.optimizer["initial_lr"] == 1e-4 and gpt3.optimizer["initial_lr"] == 6e-5
    assert bert.optimizer["lr"] == 0 and "AdamW" in bert.optimizer_repr and "betas: (0.9, 0.95)" in gpt3.optimizer_repr
    assert "0.9, 0.999" in course_quotes.text("recipe_bert_optimizer")
    assert "0.9, 0.95" in course_quotes.text("recipe_gpt3_optimizer")
    assert "10,000" in course_quotes.text("recipe_bert_optimizer")


def test_the_figure_and_the_tab():
    s = ls.lr_schedule("gpt3_cosine", None, 10, 50)
    fig = ls.figure(s)
    assert list(fig.data[0].x) == s.steps and list(fig.data[0].y) == s.lr
    plot, details, result = tab_recipe.on_schedule("bert_linear", 1e-4, 10, 100)
    assert result["lr"][10] == pytest.approx(1e-4) and "| peak (warm-up ends) | 10 |" in details
    assert tab_recipe.course_values("gpt3_cosine") == (6e-5, 117, 93_750)


@pytest.mark.parametrize("args, words", [
    (("adam",), "schedule"), (("bert_linear", 0), "peak learning rate"), (("bert_linear", 1e-4, 10, 0), "total"),
    (("bert_linear", 1e-4, 200, 100), "not be longer"), (("bert_linear", 1e-4, 2.5, 100), "warm-up"),
    (("gpt3_cosine", "fast"), "peak"), (("bert_linear", 1e-4, 10, 10**8), "total"),
])
def test_bad_input_is_a_friendly_error(args, words):
    with pytest.raises(BadInput, match=words):
        ls.lr_schedule_json(*args)


def test_curation_and_recipe_in_the_browser(page):
    """Both panels draw their first result; picking GPT-3 puts the course's values in and redraws."""
    page.goto(page.lab_url + "?tab=pretraining")  # a link opens the tab (and its group)
    page.get_by_text("documents kept").first.wait_for(timeout=180000)
    page.get_by_role("cell", name="near-duplicate").first.wait_for(timeout=60000)
    page.get_by_text("peak (warm-up ends)").first.wait_for(timeout=60000)
    page.get_by_label(ls.NAMES["gpt3_cosine"]).check()
    page.get_by_role("cell", name="93,750").first.wait_for(timeout=60000)
    page.get_by_text("8. The pre-training recipe").first.scroll_into_view_if_needed()
    screenshot(page, "pretraining_recipe")
    assert page.outside_requests == []
