"""Fine-tune, one gradient step by hand (handout B3): the new θ against torch.optim.SGD's own step, ∇L against
the hand formula (σ(w·x + b) − y)·x, the losses against a hand cross-entropy, the handout's + sign raising the
loss, the course's words quoted verbatim, bad input refused with a sentence, the API and the panel in a browser."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
import torch
from conftest import open_tab, screenshot
from gradio_client.exceptions import AppError

from labs.core.errors import BadInput
from labs.core.ui import ui
from labs.finetune import gradient_step as gs
from labs.finetune import tab_step

COURSE = Path(__file__).resolve().parents[2] / "shared" / "course"  # beside the clone, as in CI
HANDOUT, TEXTBOOK = "001_a53bc6faf6cc4263.txt", "003_4e137ff2e23b0b86.txt"


def cases(n: int = 40, seed: int = 0):
    """Random examples: 1–4 features, a label, weights, a bias and α (some large)."""
    rng = random.Random(seed)
    for _ in range(n):
        k = rng.randint(1, 4)
        yield ([round(rng.uniform(-3, 3), 3) for _ in range(k)], rng.randint(0, 1),
               [round(rng.uniform(-2, 2), 3) for _ in range(k)], round(rng.uniform(-1, 1), 3),
               rng.choice([2e-5, 0.01, 0.1, 0.5, 1.0, 3.0]))


def sgd_oracle(features, label, weights, bias, alpha):
    """torch.optim.SGD(lr=α).step() on an nn.Linear with the same parameters and the same loss."""
    layer = torch.nn.Linear(len(features), 1, dtype=torch.float64)
    with torch.no_grad():
        layer.weight[:] = torch.tensor([weights], dtype=torch.float64)
        layer.bias[:] = bias
    optimizer = torch.optim.SGD(layer.parameters(), lr=alpha)
    optimizer.zero_grad()
    logit = layer(torch.tensor([features], dtype=torch.float64))[0, 0]
    loss = -(label * torch.log(torch.sigmoid(logit)) + (1 - label) * torch.log(1 - torch.sigmoid(logit)))
    loss.backward()
    optimizer.step()
    return layer.weight.detach()[0].tolist() + [float(layer.bias.detach()[0])]


def hand_loss(features, label, theta) -> float:
    z = sum(w * x for w, x in zip(theta[:-1], features)) + theta[-1]
    p = 1 / (1 + math.exp(-z))
    return -(label * math.log(p) + (1 - label) * math.log(1 - p))


@pytest.mark.parametrize("case", list(cases()))
def test_the_new_theta_equals_torch_optim_sgd(case):
    r = gs.gradient_step(*case)
    assert r.descent == pytest.approx(sgd_oracle(*case), abs=1e-7)
    assert len(r.descent) == len(case[0]) + 1


@pytest.mark.parametrize("case", list(cases(seed=1)))
def test_the_gradient_equals_the_hand_formula(case):
    features, label, weights, bias, _ = case
    r = gs.gradient_step(*case)
    z = sum(w * x for w, x in zip(weights, features)) + bias
    error = 1 / (1 + math.exp(-z)) - label  # σ(w·x + b) − y
    assert r.grad_weights == pytest.approx([error * x for x in features], abs=1e-12)
    assert r.grad_bias == pytest.approx(error, abs=1e-12)
    assert r.before.z == pytest.approx(z, abs=1e-12)


@pytest.mark.parametrize("case", list(cases(seed=2)))
def test_the_losses_equal_a_hand_cross_entropy_and_the_handouts_sign_raises_it(case):
    features, label, weights, bias, alpha = case
    r = gs.gradient_step(*case)
    theta = weights + [bias]
    grad = r.grad
    assert r.before.loss == pytest.approx(hand_loss(features, label, theta), rel=1e-9)
    assert r.after.loss == pytest.approx(hand_loss(features, label, [t - alpha * g for t, g in zip(theta, grad)]),
                                         rel=1e-9)
    assert r.handout.loss == pytest.approx(hand_loss(features, label, [t + alpha * g for t, g in zip(theta, grad)]),
                                           rel=1e-9)
    # The loss is convex in θ: a step along +∇L always raises it; −∇L lowers it while α < 8 / (1 + ‖x‖²).
    assert r.handout.loss > r.before.loss
    if alpha < 8 / (1 + sum(x * x for x in features)):
        assert r.after.loss < r.before.loss


def test_the_first_page_example_and_what_the_student_reads():
    x1, x2, positive, negative = gs.count_features(gs.EXAMPLE)
    d = gs.DEFAULTS
    assert (x1, x2) == (d["x1"], d["x2"]) and negative == ["cold", "rude"] and positive == []
    line, steps, points, r = tab_step.on_step(d["x1"], d["x2"], d["y"], d["w1"], d["w2"], d["b"], d["alpha"])
    assert r["after"]["loss"] < r["before"]["loss"] < r["handout"]["loss"]
    assert "the handout's error" in line and "lowers the loss" in line
    assert list(steps.columns) == tab_step.STEP_HEADERS and len(steps) == 3
    w2 = steps.iloc[1]
    assert float(w2["θ − α·∇L (descent)"]) == pytest.approx(sgd_oracle([0.0, 2.0], 0, [0.5, 0.5], 0.0, 0.5)[1],
                                                           abs=1e-6)
    assert float(steps.iloc[0]["∇L = (σ(z) − y)·input"]) == 0  # x₁ = 0: w₁ gets no gradient
    assert list(points["loss L"]) == [tab_step.fmt(r[k]["loss"]) for k in ("before", "after", "handout")]


@pytest.mark.parametrize("alpha", [0.01, 1, 5, 50, 100])
def test_on_one_example_every_alpha_lowers_the_loss_and_zero_changes_nothing(alpha):
    # z moves towards the label (by α·‖(x, 1)‖²·(y − σ(z))) and the loss is monotone in z: no overshoot.
    r = gs.gradient_step_json([0, 2], 0, [0.5, 0.5], 0, alpha)
    assert r["after"]["z"] == pytest.approx(1 - alpha * 5 * (1 / (1 + math.exp(-1))), rel=1e-12)
    assert r["after"]["loss"] < r["before"]["loss"] < r["handout"]["loss"]
    assert "lowers the loss" in tab_step.summary(r)
    still = gs.gradient_step_json([0, 2], 0, [0.5, 0.5], 0, 0)
    assert still["after"] == still["before"] == still["handout"] and "nothing moves" in tab_step.summary(still)


def test_a_review_gives_its_counts_and_is_shown_as_text():
    assert gs.count_features("Great food, GREAT staff, but the soup was cold.")[:2] == (2, 1)
    x1, x2, shown = tab_step.on_review("**lovely** <b>rude</b>")
    assert (x1, x2) == (1, 1) and shown == ui.md("Found: lovely; rude.") and "<b>" not in shown


@pytest.mark.parametrize("args, words", [
    (([], 0, [], 0, 0.5), "list of 1 to 4"),
    (([1, 2], 0, [0.5], 0, 0.5), "need 2 numbers"),
    ((["a", 2], 0, [0.5, 0.5], 0, 0.5), "features"),
    (([1, 2], 2, [0.5, 0.5], 0, 0.5), "label y"),
    (([1, 2], True, [0.5, 0.5], 0, 0.5), "label y"),
    (([1, 2], 1, [0.5, 0.5], 0, -0.1), "learning rate"),
    (([1, 2], 1, [0.5, 0.5], float("nan"), 0.5), "bias"),
    (([1, 2], 1, [0.5, 1e9], 0, 0.5), "weights"),
    (("12", 1, [0.5, 0.5], 0, 0.5), "list"),
])
def test_bad_input_is_refused_with_a_sentence(args, words):
    with pytest.raises(BadInput, match=words):
        gs.gradient_step_json(*args)


@pytest.mark.skipif(not COURSE.exists(), reason="the course's documents are in ../shared/course")
def test_the_course_is_quoted_verbatim():
    handout, textbook = (COURSE / HANDOUT).read_text(), (COURSE / TEXTBOOK).read_text()
    for quote in (gs.HANDOUT_RULE, gs.HANDOUT_ALPHA, gs.HANDOUT_WHERE, "Fine-tuning updates:"):
        assert quote in handout and quote in tab_step.INTRO, quote
    for quote in (gs.TEXTBOOK_QUOTE, gs.TEXTBOOK_WHERE):
        assert quote in textbook and quote in tab_step.INTRO, quote
    assert "+ \\alpha" in gs.HANDOUT_RULE  # the handout's sign, shown as it is written


def test_gradient_step_api(client):
    r = client.predict([0, 2], 0, [0.5, 0.5], 0, 0.5, api_name="/gradient_step")
    assert r == gs.gradient_step_json([0, 2], 0, [0.5, 0.5], 0, 0.5)
    assert [p["new"] for p in r["parameters"]] == pytest.approx(sgd_oracle([0, 2], 0, [0.5, 0.5], 0, 0.5), abs=1e-7)
    with pytest.raises(AppError, match="label y"):
        client.predict([0, 2], 3, [0.5, 0.5], 0, 0.5, api_name="/gradient_step")


def test_the_panel_in_the_browser_and_its_link(page, app_server):
    open_tab(page, "Fine-tune")
    summary = page.locator("#ft-step-summary")
    summary.get_by_text("with the handout's θ + α·∇L").wait_for(timeout=60000)
    assert "1.31326 → 0.362611" in summary.inner_text()
    page.locator("#ft-step").scroll_into_view_if_needed()
    screenshot(page, "finetune-gradient-step")
    page.goto(app_server["url"] + "?tab=finetune&alpha=0.25&y=1", wait_until="load")
    page.locator("#ft-step-summary").get_by_text("with α = 0.25").wait_for(timeout=60000)
    text = page.locator("#ft-step-summary").inner_text()
    expected = gs.gradient_step_json([0, 2], 1, [0.5, 0.5], 0, 0.25)
    assert f"{tab_step.fmt(expected['after']['loss'])} with θ − α·∇L" in text and "y = 1 (positive)" in text
    assert page.outside_requests == []
