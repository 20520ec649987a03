"""Choosing a model, panel: published architectures counted (labs/choosing/architectures.py), GPT-1 to GPT-3, BERT,
ALBERT and T5's sizes. Each is built at its published sizes on the meta device and read back: its parameters beside
the course's figure, the compute of one forward pass, and one layer in the order it runs."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr
import pandas as pd

from labs.choosing import architectures as arch
from labs.core.ui import plots, ui
from labs.core.ui.build import Build

HEADERS = ["Architecture", "Layers × hidden", "Context, vocabulary", "Parameters counted", "The course says", "Embeddings",
           "GFLOPs per token", "LayerNorm", "Weights with a bias", "Layer weights / layers run", "Positions"]
INTRO = ("Each model below is built from its published config with transformers' own class on PyTorch's **meta "
         "device**: every weight has its shape and no memory, so GPT-3's 175 billion parameters are counted in a "
         "second and nothing is downloaded. One forward pass of the chosen length runs through it (torch counts its "
         "floating-point operations), and forward hooks record one layer's modules in the order they run.")
TRY = ("**Try this.** In *BERT and ALBERT*, ALBERT-base has about a tenth of BERT-base's parameters: guess its "
       "GFLOPs per token before you look. In *T5's sizes*, which way round are LayerNorm and the attention, and how "
       "many of the weight matrices have a bias? Compare with GPT-1 and GPT-2.")


def millions(n: float) -> str:
    return f"{n / 1e9:,.2f} B" if n >= 1e9 else f"{n / 1e6:,.1f} M"


def rows(r: dict) -> pd.DataFrame:
    data = []
    for row in r["rows"]:
        course = (f"{row['course_params']} (counted: ×{row['course_ratio']:.3f})" if row["course_params"]
                  else "— (not in the course)")
        context = f"{row['context']:,}" if row["context"] else "relative (no limit in the code)"
        data.append([row["name"], f"{row['layers']} × {row['hidden']}", f"{context}, {row['vocab']:,}",
                     millions(row["params"]), course,
                     f"{row['params_by_part']['embeddings'] / row['params']:.1%}", f"{row['gflops_per_token']:.3g}",
                     row["norm"], f"{row['with_bias']} of {row['matrices']}",
                     f"{row['layer_weights']} / {row['layers_run']}", "; ".join(row["positions"])])
    return pd.DataFrame(data, columns=HEADERS)


def chart(r: dict):
    names = [row["name"] for row in r["rows"]]
    fig = plots.bars_side_by_side(
        [("Parameters, millions", names, [row["params"] / 1e6 for row in r["rows"]]),
         ("GFLOPs per token", names, [row["gflops_per_token"] for row in r["rows"]])],
        title=f"{r['label']}: parameters against the compute of a {r['tokens']}-token forward pass (log scales)")
    fig.update_xaxes(type="log")
    return fig


def details_md(r: dict) -> str:
    q = r["quotes"]
    lines = []
    for row in r["rows"]:
        lines.append(f"**{ui.md(row['name'])}**, one layer as it runs ({row['norm']}): "
                     + " → ".join(f"`{ui.md(step)}`" for step in row["block_order"]))
        if row["factorised"]:
            f = row["factorised"]
            lines.append(f"ALBERT's embedding: V×H = {f['V']:,} × {f['H']:,} = **{f['tied']:,}** if it were as wide "
                         f"as the layers; V×E + E×H = {f['V']:,} × {f['E']} + {f['E']} × {f['H']:,} = "
                         f"**{f['factorised']:,}**, the same as its two weight matrices hold ({f['from_weights']:,}).")
    names = {row["name"] for row in r["rows"]}
    if names & {"ALBERT-base", "ALBERT-xxlarge"}:
        lines.append(f"{q['albert_factorised']['cite']}: “{q['albert_factorised']['text']}”  \n"
                     f"{q['albert_slower']['cite']}: “{ui.md(q['albert_slower']['text'])}”")
    if any(n.startswith("T5") for n in names):
        lines.append(f"{q['t5_relative']['cite']}: “{ui.md(q['t5_relative']['text'])}” “{ui.md(q['t5_prenorm']['text'])}” "
                     f"“{ui.md(q['t5_no_bias']['text'])}” The hooks above show each: `relative_attention_bias` "
                     "is in block 0 alone, its bias handed to every later block; the norm runs first; 0 biases.")
    lines.append("The course's figures are from " + "; ".join(sorted({ui.md(row["course_cite"]) for row in r["rows"]
                                                                       if row["course_cite"]})) + ".")
    lines += [ui.md(n) for n in dict.fromkeys(note for row in r["rows"] for note in row["notes"])]
    return "\n\n".join(lines)


def on_count(group, tokens):
    r = arch.architecture_specs(group, tokens)
    return rows(r), chart(r), details_md(r), r


def build() -> SimpleNamespace:
    with gr.Accordion("Published architectures, counted: GPT-1 to GPT-3, BERT and ALBERT, T5", open=False):
        gr.Markdown(INTRO)
        with gr.Row():
            group = gr.Dropdown([(label, key) for key, (label, _) in arch.GROUPS.items()], value="albert",
                                label="Architectures", scale=2)
            tokens = gr.Slider(1, arch.MAX_TOKENS, value=arch.DEFAULT_TOKENS, step=1,
                               label="Tokens in the forward pass", scale=2)
            run = gr.Button("Count them", variant="primary", scale=1)
        table = ui.table(HEADERS, "Each architecture at its published sizes, read from transformers' own code",
                         wrap=True)
        plot = gr.Plot(label="Parameters and compute")
        details = gr.Markdown(latex_delimiters=[{"left": "$", "right": "$", "display": False}])
        result = ui.result_json()
        gr.Markdown(TRY)
    return SimpleNamespace(group=group, tokens=tokens, run=run, table=table, plot=plot, details=details, result=result)


def wire(ctx: Build, p: SimpleNamespace) -> None:
    inputs, outputs = [p.group, p.tokens], [p.table, p.plot, p.details, p.result]
    ui.wire([p.run.click, p.group.input], on_count, inputs, outputs)
    ctx.on_load(on_count, inputs, outputs)
