"""Fine-tune, panel: one gradient step by hand (handout B3). A review's two counts, a tiny classifier's θ and α
in; every number of θ − α·∇L out, beside the handout's θ + α·∇L."""

from __future__ import annotations

import gradio as gr
import pandas as pd

from labs.core.ui import ui
from labs.core.ui.build import Build
from labs.finetune import gradient_step as gs

STEP_HEADERS = ["parameter", "θ now", "its input", "∇L = (σ(z) − y)·input", "α·∇L", "θ − α·∇L (descent)",
                "θ + α·∇L (handout's sign)"]
POINT_HEADERS = ["θ", "z = w₁x₁ + w₂x₂ + b", "P(positive) = σ(z)", "loss L", "change in L"]
SYMBOLS = {"w1": "w₁ (× x₁, positive words)", "w2": "w₂ (× x₂, negative words)", "b": "b (bias, × 1)"}
INTRO = f"""A tiny classifier reads a review as two numbers, **x₁** = how many of its words are positive, **x₂** = how many
are negative, and says P(positive) = σ(w₁x₁ + w₂x₂ + b). Its parameters θ = (w₁, w₂, b) take **one step of
gradient descent** on this one review; ∇L comes from torch's autograd. Fine-tuning a transformer repeats exactly
this step for every one of its millions of parameters (textbook, {gs.TEXTBOOK_WHERE}: “{gs.TEXTBOOK_QUOTE}”).

**Handout, {gs.HANDOUT_WHERE}:** “Fine-tuning updates: {gs.HANDOUT_RULE} {gs.HANDOUT_ALPHA}”.
**The sign is wrong:** gradient descent *subtracts* the gradient, **θ_new = θ − α·∇θ L** (what
`torch.optim.SGD` does). Both are computed below: with the handout's + the loss goes up."""
WORDS = (f"x₁ counts these words: {', '.join(gs.POSITIVE)}. x₂ counts these: {', '.join(gs.NEGATIVE)}. "
         "Or type the numbers yourself.")
TRY = ("**Try this.** α = 2e-5, the handout's typical rate: how much does the loss move in one step? "
       "α = 50: on one review the loss still goes down (z only moves towards the label), so why is a large rate "
       "harmful when the next step uses another review? Set y = 1: which way does each weight move now, and why "
       "does w₁ not move while x₁ = 0?")


def fmt(value: float) -> str:
    return f"{value:.6g}"


def change(before: float, after: float) -> str:
    delta = after - before
    return "0 (unchanged)" if delta == 0 else f"{'+' if delta > 0 else '−'}{abs(delta):.4g} ({'up' if delta > 0 else 'down'})"


def step_table(r: dict) -> pd.DataFrame:
    rows = [[SYMBOLS.get(p["name"], p["name"]), fmt(p["theta"]), fmt(p["input"]), fmt(p["grad"]), fmt(p["step"]),
             fmt(p["new"]), fmt(p["handout_new"])] for p in r["parameters"]]
    return pd.DataFrame(rows, columns=STEP_HEADERS)


def point_table(r: dict) -> pd.DataFrame:
    before = r["before"]["loss"]
    rows = [[name, fmt(p["z"]), fmt(p["p_positive"]), fmt(p["loss"]), change(before, p["loss"]) if i else "—"]
            for i, (name, p) in enumerate((("before the step", r["before"]), ("after θ − α·∇L", r["after"]),
                                           ("after θ + α·∇L (handout)", r["handout"])))]
    return pd.DataFrame(rows, columns=POINT_HEADERS)


def summary(r: dict) -> str:
    before, after, wrong = r["before"]["loss"], r["after"]["loss"], r["handout"]["loss"]
    label = "positive" if r["label"] == 1 else "negative"
    if after < before:
        verdict = "the step lowers the loss, as gradient descent should"
    elif after == before:
        verdict = "nothing moves (α = 0, or the gradient is 0)"
    else:
        verdict = "the loss went up even with the right sign"
    return (f"**Loss L = {fmt(before)} → {fmt(after)} with θ − α·∇L** ({verdict}); "
            f"**{fmt(wrong)} with the handout's θ + α·∇L** ({change(before, wrong)}: the handout's error). "
            f"The review is labelled y = {r['label']} ({label}); P(positive) goes {fmt(r['before']['p_positive'])} → "
            f"{fmt(r['after']['p_positive'])} (right sign) or {fmt(r['handout']['p_positive'])} (handout's sign), "
            f"with α = {fmt(r['learning_rate'])}.")


def on_step(x1, x2, y, w1, w2, b, alpha):
    r = gs.gradient_step_json([x1, x2], y, [w1, w2], b, alpha)
    return summary(r), step_table(r), point_table(r), r


def on_review(review):
    x1, x2, positive, negative = gs.count_features(review)
    found = (f"Found: {', '.join(positive) or 'no positive word'}; {', '.join(negative) or 'no negative word'}.")
    return x1, x2, ui.md(found)


def build(ctx: Build) -> dict:
    """The panel; returns the inputs a link may set (tab.py passes them to ctx.link)."""
    d = gs.DEFAULTS
    with gr.Accordion("One gradient step by hand (exercise B3)", open=True, elem_id="ft-step"):
        gr.Markdown(INTRO)
        with gr.Row():
            review = gr.Textbox(gs.EXAMPLE, label="A review (Enter counts x₁ and x₂)", scale=3, max_length=500)
            y = gr.Radio([("1 = positive", 1), ("0 = negative", 0)], value=d["y"], label="Its label y", scale=1)
        found = gr.Markdown(ui.md(WORDS))
        with gr.Row():
            x1, x2 = gr.Number(d["x1"], label="x₁ (positive words)"), gr.Number(d["x2"], label="x₂ (negative words)")
            w1, w2 = gr.Number(d["w1"], label="w₁"), gr.Number(d["w2"], label="w₂")
            b, alpha = gr.Number(d["b"], label="b (bias)"), gr.Number(d["alpha"], label="α (learning rate)", minimum=0)
        result_line = gr.Markdown(elem_id="ft-step-summary")
        steps = ui.table(STEP_HEADERS, "θ, ∇L and the step, parameter by parameter", wrap=True)
        points = ui.table(POINT_HEADERS, "The classifier before and after the step", wrap=True)
        gr.Markdown(TRY)
        result = ui.result_json()
    inputs = [x1, x2, y, w1, w2, b, alpha]
    outputs = [result_line, steps, points, result]
    ui.wire(review.submit, on_review, review, [x1, x2, found])
    ui.wire([c.change for c in inputs], on_step, inputs, outputs, show_progress="hidden")
    ctx.on_load(on_step, inputs, outputs)
    return {"alpha": alpha, "x1": x1, "x2": x2, "y": y, "w1": w1, "w2": w2, "b": b}
