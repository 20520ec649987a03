"""Next token, one token at a time: take the most likely token, sample one, pick or click one (each
appended to the prompt and recorded), and 100 draws beside the model's probabilities."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from labs.core.errors import check_int
from labs.core.models import models
from labs.core.ui import plots, ui
from labs.core.work import lm
from labs.next_token import compute
from labs.next_token.tab_distribution import show, shown, shown_outputs

RECORD_HEADERS = ["step", "token", "probability", "how"]


def append(loaded: models.LoadedModel, prompt, history, token_id: int, how: str, t, k, p):
    """The prompt with one more token, the record of chosen tokens, and the new distribution."""
    entry = compute.entry_for(loaded, prompt, token_id, t, k, p)
    history = history + [[len(history) + 1, shown(entry.token), round(entry.prob, 4), how]]
    new_prompt = prompt + entry.token
    return (new_prompt, history, pd.DataFrame(history, columns=RECORD_HEADERS), *show(loaded, new_prompt, t, k, p))


def on_take(prompt, model_name, history, t, k, p):
    loaded = models.load(model_name, "causal")
    return append(loaded, prompt, history, compute.greedy_token(loaded, prompt), "most likely", t, k, p)


def on_sample(prompt, model_name, history, t, k, p, seed):
    seed = check_int(seed, "Seed", 0, 2**32 - 1) + len(history)
    loaded = models.load(model_name, "causal")
    token_id = compute.sample_tokens(loaded, prompt, t, k, p, 1, seed)[0]
    return append(loaded, prompt, history, token_id, f"sampled (seed {seed})", t, k, p)


def on_pick(prompt, model_name, history, token_id, t, k, p):
    if token_id is None:
        return (gr.skip(),) * 7
    return append(models.load(model_name, "causal"), prompt, history, int(token_id), "picked", t, k, p)


def on_bar_click(prompt, model_name, history, clicked, t, k, p):
    """`clicked` is "<token id>:<time>", set by assets/js/bar_click.js."""
    token_id = clicked.split(":", 1)[0] if clicked else ""
    if not token_id.isdigit():
        return (gr.skip(),) * 7
    return append(models.load(model_name, "causal"), prompt, history, int(token_id), "clicked", t, k, p)


def samples_figure(labels: list[str], shares: list[float], probs: list[float]):
    fig = go.Figure([go.Bar(name="share of 100 draws", x=plots.unique_labels(labels), y=shares),
                     go.Bar(name="model probability", x=plots.unique_labels(labels), y=probs)])
    return plots.style(fig, "100 samples vs the model's probabilities", 420, barmode="group")


def on_draw(prompt, model_name, t, k, p, seed):
    """100 draws at these settings beside the model's probabilities: the 10 likeliest tokens and
    up to 5 more that were drawn."""
    loaded = models.load(model_name, "causal")
    draws = compute.sample_tokens(loaded, prompt, t, k, p, 100, seed)
    _, logits, _ = compute.prompt_logits(loaded, prompt)
    probs, _ = compute.shape(logits, *compute.check_knobs(t, k, p))
    ids = [i for i, _ in lm.top_k(logits, 10)]  # the ten likeliest (probability follows the logit)
    ids += [i for i in dict.fromkeys(draws) if i not in ids][:5]
    counts = dict(zip(*np.unique(draws, return_counts=True)))
    labels = [shown(loaded.tokenizer.decode([i])) for i in ids]
    return samples_figure(labels, [counts.get(i, 0) / 100 for i in ids], [float(probs[i]) for i in ids])


def build() -> SimpleNamespace:
    with gr.Accordion("One token at a time", open=True):
        with gr.Row():
            take = gr.Button("Take the most likely")
            seed = gr.Number(0, label="Seed", precision=0)
            sample = gr.Button("Sample one")
            pick = gr.Dropdown(label="…or append this token", choices=[], value=None)
        record = ui.table(RECORD_HEADERS, "Tokens chosen so far")
    with gr.Accordion("Many samples: 100 draws at these settings", open=False):
        draw = gr.Button("Draw 100 next tokens")
        histogram = gr.Plot()
    return SimpleNamespace(take=take, seed=seed, sample=sample, pick=pick, record=record, history=gr.State([]),
                           draw=draw, histogram=histogram)


def wire(main: SimpleNamespace, step: SimpleNamespace) -> None:
    prompt, model, knobs = main.prompt, main.model, main.knobs
    outputs = [prompt, step.history, step.record, *shown_outputs(main, step.pick)]
    ui.wire(step.take.click, on_take, [prompt, model, step.history, *knobs], outputs)
    ui.wire(step.sample.click, on_sample, [prompt, model, step.history, *knobs, step.seed], outputs)
    ui.wire(step.pick.input, on_pick, [prompt, model, step.history, step.pick, *knobs], outputs)
    # .change, not .input: the value is set by assets/js/bar_click.js, never typed.
    ui.wire(main.clicked.change, on_bar_click, [prompt, model, step.history, main.clicked, *knobs], outputs)
    ui.wire(step.draw.click, on_draw, [prompt, model, *knobs, step.seed], step.histogram)
