"""Fine-tune, one gradient step by hand (handout B3, textbook 20.7): a tiny classifier, one example, one
step of gradient descent with every number, beside the handout's update rule (+ instead of −).

The classifier is logistic regression: one linear layer (`torch.nn.Linear(n, 1)`, float64) on a few
numeric features of a review, read through σ. preprocess (`check_*`: the numbers) → forward (z = w·x + b,
p = σ(z), the binary cross-entropy L) → backward (∇L by torch autograd, which for this model is the hand
formula (σ(w·x + b) − y)·x, and σ(z) − y for b) → step (θ − α·∇L) → postprocess (the loss at the new θ,
and at the handout's θ + α·∇L). The cross-entropy is convex in θ, so the handout's sign always raises
the loss (unless ∇L = 0). On one example the right sign lowers it for every α > 0: z moves towards the label
by α·(1 + ‖x‖²)·(y − σ(z)), and the loss is monotone in z (with many examples, a large α can overshoot)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from labs.core.errors import BadInput, check_number
from labs.core.ui import course_quotes

# The course's words: course_quotes' entries (tests/test_course_quotes.py checks each under its heading).
HANDOUT_WHERE = course_quotes.get("step_rule").where
HANDOUT_RULE, HANDOUT_ALPHA = course_quotes.text("step_rule"), course_quotes.text("step_alpha")
TEXTBOOK_WHERE = course_quotes.get("step_textbook").where
TEXTBOOK_QUOTE = course_quotes.text("step_textbook")

# The two features the tab counts in a review (x₁, x₂): small lists, shown to the student.
POSITIVE = ("good", "great", "lovely", "excellent", "friendly", "wonderful", "delicious", "tasty", "love", "loved",
            "perfect", "nice", "amazing", "best", "fresh", "helpful")
NEGATIVE = ("bad", "awful", "terrible", "rude", "cold", "slow", "boring", "worst", "hate", "hated", "poor",
            "dirty", "broken", "bland", "noisy", "late")
EXAMPLE = "The soup was cold and the waiter was rude."
# The first page: an untrained classifier that counts every sentiment word as positive, on a negative review.
DEFAULTS = {"x1": 0.0, "x2": 2.0, "y": 0, "w1": 0.5, "w2": 0.5, "b": 0.0, "alpha": 0.5}
LIMIT = 1000.0  # features, weights and bias: |value| ≤ LIMIT
MAX_ALPHA = 100.0
MAX_FEATURES = 4


def count_features(review: str) -> tuple[int, int, list[str], list[str]]:
    """x₁ = the review's words from POSITIVE, x₂ = from NEGATIVE (each occurrence counts), and the words."""
    words = re.findall(r"[a-z]+", str(review).lower())
    positive, negative = [w for w in words if w in POSITIVE], [w for w in words if w in NEGATIVE]
    return len(positive), len(negative), positive, negative


def check_numbers(values, name: str, count: int | None = None) -> list[float]:
    """A list of 1–MAX_FEATURES finite numbers within ±LIMIT (count of them when given)."""
    if not isinstance(values, (list, tuple)) or not values or len(values) > MAX_FEATURES:
        raise BadInput(f"The {name} must be a list of 1 to {MAX_FEATURES} numbers, for example [0, 2].")
    if count is not None and len(values) != count:
        raise BadInput(f"There are {count} features, so the {name} need {count} numbers, not {len(values)}.")
    return [check_number(v, f"Each of the {name}", -LIMIT, LIMIT) for v in values]


def check_label(label) -> int:
    if isinstance(label, bool) or label not in (0, 1, 0.0, 1.0, "0", "1"):
        raise BadInput(f"The label y must be 1 (positive) or 0 (negative), not {str(label)[:20]}.")
    return int(float(label))


def sigmoid(z: float) -> float:
    return 1 / (1 + math.exp(-z)) if z >= 0 else math.exp(z) / (1 + math.exp(z))


@dataclass
class Point:
    """The classifier at one θ: z = w·x + b, p = σ(z) = P(positive), and the loss."""
    z: float
    p: float
    loss: float

    def to_json(self) -> dict:
        return {"z": self.z, "p_positive": self.p, "loss": self.loss}


@dataclass
class GradientStep:
    features: list[float]
    label: int
    weights: list[float]
    bias: float
    learning_rate: float
    grad_weights: list[float]
    grad_bias: float
    before: Point
    after: Point  # θ − α·∇L
    handout: Point  # θ + α·∇L

    @property
    def names(self) -> list[str]:
        return [f"w{i + 1}" for i in range(len(self.weights))] + ["b"]

    @property
    def theta(self) -> list[float]:
        return self.weights + [self.bias]

    @property
    def grad(self) -> list[float]:
        return self.grad_weights + [self.grad_bias]

    @property
    def inputs(self) -> list[float]:
        """What each parameter multiplies: its feature (1 for the bias)."""
        return self.features + [1.0]

    @property
    def descent(self) -> list[float]:
        return [t - self.learning_rate * g for t, g in zip(self.theta, self.grad)]

    @property
    def ascent(self) -> list[float]:
        return [t + self.learning_rate * g for t, g in zip(self.theta, self.grad)]

    def to_json(self) -> dict:
        return {
            "features": self.features, "label": self.label, "learning_rate": self.learning_rate,
            "parameters": [{"name": n, "theta": t, "input": x, "grad": g, "step": self.learning_rate * g,
                            "new": d, "handout_new": a}
                           for n, t, x, g, d, a in zip(self.names, self.theta, self.inputs, self.grad, self.descent,
                                                       self.ascent)],
            "before": self.before.to_json(), "after": self.after.to_json(), "handout": self.handout.to_json(),
            "rule": "θ_new = θ − α·∇θ L (gradient descent: torch.optim.SGD)",
            "handout_rule": HANDOUT_RULE, "handout_where": f"Handout, {HANDOUT_WHERE}",
            "loss_formula": "L = −[y·ln σ(z) + (1 − y)·ln(1 − σ(z))], z = w·x + b",
            "gradient_formula": "∂L/∂w_i = (σ(z) − y)·x_i, ∂L/∂b = σ(z) − y",
        }


def classifier(features: list[float], weights: list[float], bias: float):
    """The tiny classifier: torch.nn.Linear(n, 1) in float64 with these weights, and x as a [1, n] batch."""
    import torch

    layer = torch.nn.Linear(len(features), 1, dtype=torch.float64)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([weights], dtype=torch.float64))  # [1, n]
        layer.bias.copy_(torch.tensor([bias], dtype=torch.float64))  # [1]
    return layer, torch.tensor([features], dtype=torch.float64)  # x: [1, n]


def loss_of(layer, x, label: int):
    """The binary cross-entropy of the layer's logit against the label, with its logit z ([1])."""
    import torch

    z = layer(x)[:, 0]  # [1]
    return torch.nn.functional.binary_cross_entropy_with_logits(z, torch.tensor([float(label)], dtype=z.dtype)), z


def point_at(features: list[float], theta: list[float], label: int) -> Point:
    import torch

    layer, x = classifier(features, theta[:-1], theta[-1])
    with torch.no_grad():
        loss, z = loss_of(layer, x, label)
    return Point(float(z[0]), sigmoid(float(z[0])), float(loss))


def gradient_step(features: list[float], label: int, weights: list[float], bias: float,
                  learning_rate: float) -> GradientStep:
    """One step of gradient descent on one example: ∇L from autograd, θ − α·∇L, the loss before and after,
    and the handout's θ + α·∇L beside it."""
    features = check_numbers(features, "features")
    weights = check_numbers(weights, "weights", len(features))
    bias = check_number(bias, "The bias b", -LIMIT, LIMIT)
    label = check_label(label)
    alpha = check_number(learning_rate, "The learning rate α", 0, MAX_ALPHA,
                         hint=" (a step size: the handout's sign is shown beside the right one)")
    layer, x = classifier(features, weights, bias)
    loss, z = loss_of(layer, x, label)
    loss.backward()  # autograd fills layer.weight.grad [1, n] and layer.bias.grad [1]
    grad_w, grad_b = layer.weight.grad[0].tolist(), float(layer.bias.grad[0])
    z, loss = float(z.detach()[0]), float(loss.detach())
    before = Point(z, sigmoid(z), loss)
    step = GradientStep(features, label, weights, bias, alpha, grad_w, grad_b, before, before, before)
    step.after = point_at(features, step.descent, label)
    step.handout = point_at(features, step.ascent, label)
    return step


def gradient_step_json(features: list[float], label: int, weights: list[float], bias: float = 0.0,
                       learning_rate: float = 0.5) -> dict:
    """The `gradient_step` API: one example's features and label (1 positive, 0 negative), the weights and bias,
    α. Returns every number of the step."""
    return gradient_step(features, label, weights, bias, learning_rate).to_json()
