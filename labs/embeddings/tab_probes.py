"""Embeddings, panel "What each layer knows": a linear probe per layer for five properties, its held-out accuracy
beside a majority-class baseline. The properties are position, part of speech, grammatical subject, agent or
patient, and word sense; the panel says whether the textbook's surface → syntax → semantics picture holds on this
model."""

from __future__ import annotations

import gradio as gr
import pandas as pd
import plotly.graph_objects as go

from labs.core.ui import plots, ui
from labs.core.ui.build import Build
from labs.embeddings import probes

HEADING = "## What each layer knows: linear probes"
COURSE = (f"**Textbook {probes.SECTION.split(' ', 1)[0]}:**\n\n" + "\n".join(f"> {q}" for q in probes.QUOTES)
          + "\n\nBelow, a logistic regression (scikit-learn) reads one property off a word's frozen vector at each "
            "layer (layer 0 = the embeddings). Every sentence is held out once (4-fold cross-validation over "
            "sentences), and the dotted line is what always guessing the most common label gets. The data set, "
            "written for LM Lab, is in `assets/probes.tsv`; a model with fewer layers than BERT-base's 12 gets the "
            "textbook's thirds scaled to its depth. The five probes:\n\n"
          + "\n".join(f"- **{q.name}** ({q.kind}): {q.question} {q.why_band}" for q in probes.PROBES.values()))
STYLE = {"position": ("#4b5563", "dot"), "pos": (plots.BLUE, "solid"),
         "subject": (plots.GREEN, "dash"), "agent": (plots.RED, "solid"), "sense": (plots.PURPLE, "dashdot")}
BAND_FILL = {"lower": "rgba(29,78,216,0.06)", "middle": "rgba(0,158,115,0.08)", "upper": "rgba(194,65,12,0.07)"}
HEADERS = ["Probe", "Textbook's layers", "Baseline", "Layer 0", "Best layer", "Last layer", "Expected layer"]
CHOICES = [("all five", "all")] + [(p.name, p.id) for p in probes.PROBES.values()]


def figure(r: dict):
    fig, layers = go.Figure(), list(range(r["num_layers"] + 1))
    for band, span in r["bands"].items():
        if span:
            fig.add_vrect(x0=span[0] - 0.5, x1=span[-1] + 0.5, fillcolor=BAND_FILL[band], line_width=0,
                          annotation_text=band, annotation_position="bottom left",
                          annotation_font=dict(size=14, color="#111827"))
    for p in r["probes"]:
        colour, dash = STYLE[p["id"]]
        fig.add_trace(go.Scatter(x=layers, y=p["accuracy"], name=plots.safe(p["name"]), mode="lines+markers",
                                 line=dict(color=colour, width=4, dash=dash), marker=dict(size=9),
                                 hovertemplate=f"{plots.safe(p['name'])}, layer %{{x}}: %{{y:.1%}}<extra></extra>"))
        fig.add_trace(go.Scatter(x=[layers[0], layers[-1]], y=[p["baseline"]] * 2, mode="lines", showlegend=False,
                                 line=dict(color=colour, width=1.5, dash="dot"), hoverinfo="skip"))
    plots.style(fig, "Held-out accuracy per layer", 480, legend=dict(orientation="h", y=-0.28))
    fig.update_xaxes(title="layer (0 = embeddings)", dtick=1)
    fig.update_yaxes(title="held-out accuracy", range=[0, 1.02], tickformat=".0%")
    return fig


def table(r: dict) -> pd.DataFrame:
    rows = []
    for p in r["probes"]:
        best = p["best_layer"]
        span = r["bands"][p["band"]]
        rows.append([p["name"], f"{p['band']} ({span[0]}–{span[-1]} here)", f"{p['baseline']:.0%}",
                     f"{p['accuracy'][0]:.0%}", f"{best} ({p['accuracy'][best]:.0%})", f"{p['accuracy'][-1]:.0%}",
                     f"{p['expected_layer']:.1f}"])
    return pd.DataFrame(rows, columns=HEADERS)


def verdict(r: dict) -> str:
    sizes = ", ".join(f"{p['name'].lower()} {p['examples']} examples in {p['sentences']} sentences"
                      for p in r["probes"])
    return (f"**{'✓' if r['picture_holds'] else '✗'} {ui.md(r['reading'])}** The expected layer is where a "
            "probe's accuracy gains happen (the layers' gains over the layer below, averaged by layer; Tenney et "
            f"al. 2019). {ui.md(r['model'])}, {r['num_layers']} layers; {ui.md(sizes)}.")


def on_probes(probe, model):
    r = probes.probe_layers(model, probe)
    return verdict(r), figure(r), table(r), r


def build(ctx: Build) -> dict:
    gr.Markdown(HEADING)
    gr.Markdown(COURSE)
    with gr.Row():
        probe = gr.Dropdown(CHOICES, value="all", label="Probe", scale=2)
        model = ui.model_dropdown(*probes.FAMILIES, label="Encoder (its frozen hidden states)")
        button = gr.Button("Train the probes", variant="primary", scale=1)
    found = gr.Markdown()
    plot = gr.Plot(label="Held-out accuracy per layer")
    frame = ui.table(HEADERS, "Each probe: its baseline, where it peaks, where it gains", wrap=True)
    result = ui.result_json()
    ctx.link(__name__, probe=probe, probe_model=model)
    outputs = [found, plot, frame, result]
    ui.wire([button.click], on_probes, [probe, model], outputs)
    ctx.on_load(on_probes, [probe, model], outputs)
    return {"probe": probe, "probe_model": model}
