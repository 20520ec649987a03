"""Next token, the distribution panel: the prompt, the model, the three knobs and the chart of the
20 most likely next tokens (a bar click appends its token: see tab_step.on_bar_click)."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from labs.core.errors import MAX_CHARS
from labs.core.models import models
from labs.core.ui import plots, ui
from labs.core.ui.build import Build
from labs.next_token import compute
from labs.next_token.compute import EXAMPLE


def shown(token: str) -> str:
    """A token as the chart and the record show it: escapes visible (\\n), the empty string as ∅."""
    return repr(token)[1:-1] or "∅"


def distribution_figure(dist: compute.Distribution):
    colors = [plots.BLUE if e.kept else plots.GREY for e in dist.entries]
    hover = [f"id {e.token_id}, logit {e.logit:.2f}, {'kept' if e.kept else 'cut off'}" for e in dist.entries]
    last = dist.prompt_tokens[-1] if dist.prompt_tokens else ""
    fig = plots.bar_chart([shown(e.token) for e in dist.entries], [e.prob for e in dist.entries], colors=colors,
                          hover=hover, title=plots.safe(f"Next token after “…{last}” (grey = cut off by top-k / "
                                                        "top-p; click a bar to append it)"))
    fig.update_traces(customdata=[e.token_id for e in dist.entries])  # read by assets/js/bar_click.js
    return fig


def distribution_summary(dist: compute.Distribution, loaded) -> str:
    note = f"\n\n{ui.notice(dist.note)}" if dist.note else ""
    return f"Entropy: **{dist.entropy:.3f} nats**. {ui.model_badge(loaded)}{note}"


def show(loaded: models.LoadedModel, prompt, t, k, p):
    """The summary, the chart, the JSON and the choices of the step panel's token picker."""
    dist = compute.distribution(loaded, prompt, t, k, p)
    choices = [(f"{shown(e.token)} ({e.prob:.3f})", e.token_id) for e in dist.entries]
    return (distribution_summary(dist, loaded), distribution_figure(dist), dist.to_json(),
            gr.update(choices=choices, value=None))


def on_show(prompt, model_name, t, k, p):
    return show(models.load(model_name, "causal"), prompt, t, k, p)


def build(ctx: Build) -> SimpleNamespace:
    with gr.Row():
        prompt = gr.Textbox(EXAMPLE, label="Prompt", scale=3, max_lines=4, max_length=MAX_CHARS)
        model = ui.model_dropdown("causal", label="Causal LM")
    with gr.Row():
        temperature = gr.Slider(0, 2, value=1.0, step=0.05, label="Temperature (0 = greedy)")
        top_k = gr.Slider(0, 100, value=0, step=1, label="Top-k (0 = off)")
        top_p = gr.Slider(0.05, 1, value=1.0, step=0.05, label="Top-p (1 = off)")
    with gr.Row():
        show_button = gr.Button("Show the next-token distribution", variant="primary")
        ctx.ask_button("next_token", "🙋 Ask the class for the next word", text=prompt, model=model)
    summary = gr.Markdown()
    chart = gr.Plot(label="Next-token distribution (click a bar to append that token)", elem_id="nt-chart")
    clicked = gr.Textbox(elem_id="nt-clicked", elem_classes=["lab-offscreen"], label="clicked token", container=False)
    return SimpleNamespace(prompt=prompt, model=model, temperature=temperature, top_k=top_k, top_p=top_p,
                           knobs=[temperature, top_k, top_p], show=show_button, summary=summary, chart=chart,
                           clicked=clicked, dist_json=ui.result_json())


def shown_outputs(main: SimpleNamespace, pick: gr.Dropdown) -> list:
    """What on_show fills: the summary, the chart, the JSON and the step panel's token picker."""
    return [main.summary, main.chart, main.dist_json, pick]


def wire(ctx: Build, main: SimpleNamespace, pick: gr.Dropdown) -> None:
    inputs, outputs = [main.prompt, main.model, *main.knobs], shown_outputs(main, pick)
    ui.wire([main.show.click, main.prompt.submit], on_show, inputs, outputs)
    ctx.on_load(on_show, inputs, outputs)
    ui.wire([s.release for s in main.knobs], on_show, inputs, outputs, show_progress="hidden")
