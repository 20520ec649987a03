"""Pre-training, panel 4: why 15 %? BERT's recovery of masked tokens from 5 % to 80 %, single tokens vs
spans, beside what the pre-training studies found."""

from __future__ import annotations

import gradio as gr
import pandas as pd
import plotly.graph_objects as go

from labs.core.errors import MAX_CHARS
from labs.core.models import models
from labs.core.ui import plots, ui
from labs.core.ui.build import Build
from labs.pretraining import mask_rate

NEEDS_BERT = ("The mask-rate curve needs a masked LM (bert-base-uncased), which is not available here. While online, "
              "run `./lab download` once.")
HEADERS = ["mask rate %", "masking", "top-1 accuracy", "MLM loss", "masked tokens"]


def curve_figure(curves: list[dict]):
    fig = go.Figure()
    for c, colour in zip(curves, (plots.BLUE, plots.RED)):
        name = "contiguous spans (SpanBERT)" if c["span"] else "single tokens"
        fig.add_trace(go.Scatter(x=c["rates"], y=[p["accuracy"] for p in c["points"]], name=name, mode="lines+markers",
                                 line=dict(color=colour, width=4), marker=dict(size=10)))
    fig.add_vline(x=15, line=dict(color=plots.GREEN, dash="dash", width=3), annotation_text="BERT: 15 %")
    plots.style(fig, plots.safe(f"How much {curves[0]['model']} recovers (top-1 accuracy)"), 420)
    fig.update_xaxes(title="mask rate (%)")
    fig.update_yaxes(title="top-1 accuracy", rangemode="tozero")
    return fig


def curve_rows(curves: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([[p["rate"], "spans" if c["span"] else "single", round(p["accuracy"], 3), round(p["loss"], 3),
                          p["masked_tokens"]] for c in curves for p in c["points"]], columns=HEADERS)


def curve_markdown(curves: list[dict]) -> str:
    c = curves[0]
    published = "\n".join(f"- {line}" for line in mask_rate.PUBLISHED)
    return (f"{len(c['sentences'])} sentences × {len(c['rates'])} rates × {c['seeds']} seeds = {c['passes']} masked "
            f"copies per curve, each rate on the same sentences. {mask_rate.HONEST}\n\n**What the pre-training "
            f"studies found:**\n{published}")


def on_curve(text, model_name, spans_too, seeds):
    if not model_name and not models.choice_names("masked"):
        raise models.ModelUnavailable(NEEDS_BERT)
    loaded = models.load(model_name, "masked")  # once per click
    curves = [mask_rate.curve(loaded, text, mask_rate.DEFAULT_RATES, False, seeds).to_json()]
    if spans_too:
        curves.append(mask_rate.curve(loaded, text, mask_rate.DEFAULT_RATES, True, seeds).to_json())
    return curve_figure(curves), curve_rows(curves), curve_markdown(curves)


def build(ctx: Build) -> dict:
    gr.Markdown("## 4. Why 15 %?")
    if not models.choice_names("masked"):
        gr.Markdown(ui.notice(NEEDS_BERT))
    with gr.Row():
        text = gr.Textbox("", label="Your own sentences (optional; added to the 20 built-in ones)", lines=2, scale=3,
                          max_length=MAX_CHARS)
        model = ui.model_dropdown("masked", label="Masked LM")
    with gr.Row():
        spans_too = gr.Checkbox(True, label="Also contiguous spans (SpanBERT), same budget")
        seeds = gr.Slider(1, mask_rate.MAX_SEEDS, value=2, step=1, label="Seeds")
        button = gr.Button("Draw the curve (5 % to 80 %)", variant="primary")
    figure = gr.Plot(label="Recovery against mask rate")
    table = ui.table(HEADERS, "Each rate")
    notes = gr.Markdown(curve_markdown_placeholder())
    ui.wire(button.click, on_curve, [text, model, spans_too, seeds], [figure, table, notes])
    return {"mask_text": text, "mask_model": model}


def curve_markdown_placeholder() -> str:
    published = "\n".join(f"- {line}" for line in mask_rate.PUBLISHED)
    return f"{mask_rate.HONEST}\n\n**What the pre-training studies found:**\n{published}"
