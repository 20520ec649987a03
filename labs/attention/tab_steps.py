"""Attention, panel "Inside the transformer, step by step": one layer and one head of the real model written
out (steps.py), every step's shape and the followed token's first numbers, the scores before and after the
division by √d_k, and the MLM head's (or the next token's) predictions."""

from __future__ import annotations

import gradio as gr
import numpy as np

from labs.attention import quotes, steps
from labs.core.errors import MAX_CHARS
from labs.core.models import models
from labs.core.ui import plots, ui
from labs.core.ui.build import Build

HEADING = "## Inside the transformer, step by step"
EXPLAINER = ("Your sentence through the real model, one operation at a time: every step's **shape** and the "
             "**first numbers of one token's row** (pick the token to follow). The layer and head are yours to "
             "choose; the last column compares a step with the model's own output (its hidden states, "
             "`output_attentions`, the shared prediction passes): the differences are float rounding. An "
             "encoder shows BERT's walkthrough; a causal LM (SmolLM2) shows one position of a Llama layer.")
COURSE = "\n\n".join(f"**{q.cite}:** “{q.text}”" for q in quotes.STEPS)
AUTO = "auto"
POSITIONS = [("auto: the [MASK], else the last token", AUTO)] + [(str(i), str(i)) for i in range(steps.MAX_TOKENS)]
MAX_LAYER, MAX_HEAD = 47, 31  # the sliders' range before the first run (a link may name any layer up to these)
HEADERS = ["#", "Step", "Formula", "Shape", "Followed token: first values", "Checked against the model's own"]


def number_list(values: list) -> str:
    return "[" + ", ".join("−∞" if v is None else f"{v:.3f}" for v in values) + ", …]"


def step_rows(result: dict) -> list[list]:
    rows = []
    for i, s in enumerate(result["steps"]):
        check = s["check"]
        checked = f"✓ max |diff| {check['max_abs_diff']:.1e}: {check['against']}" if check else ""
        rows.append([i + 1, s["name"], s["formula"], " × ".join(map(str, s["shape"])), number_list(s["row"][:4]),
                     checked])
    return rows


def token_line(result: dict) -> str:
    p = result["position"]
    words = " · ".join(f"{i} {ui.md(t)}" if i != p else f"**{i} {ui.md(t)}**" for i, t in enumerate(result["tokens"]))
    sizes = result["sizes"]
    return (f"**{result['architecture']}**: {sizes['layers']} layers, {sizes['heads']} heads of {sizes['head_dim']}"
            f" dimensions ({sizes['kv_heads']} key/value heads), hidden {sizes['hidden']}, feed-forward "
            f"{sizes['hidden']} → {sizes['intermediate']} → {sizes['hidden']} with {sizes['activation']}.\n\n"
            f"Tokens (following **{ui.md(result['tokens'][p])}**, position {p}): {words}")


def entropy_bits(row: list) -> float:
    p = np.array([v for v in row if v], dtype=float)
    return float(-(p * np.log2(p)).sum())


def scaling_note(result: dict) -> str:
    """What the division by √d_k does to the followed token's row of weights."""
    p = result["position"]
    scaled, unscaled = result["attention"][p], result["attention_unscaled"][p]
    d = result["sizes"]["head_dim"]
    return (f"Without the division by √{d} = {d ** 0.5:.2f}, the followed token's largest weight would be "
            f"**{max(unscaled):.3f}** (entropy {entropy_bits(unscaled):.2f} bits); with it, **{max(scaled):.3f}** "
            f"({entropy_bits(scaled):.2f} bits). Large dot products make the softmax nearly one-hot; dividing by "
            "√d_k keeps it spread, so the gradients do not vanish. The right-hand map is the model's own "
            "attention for this layer and head: the Attention lab's heatmap.")


def matrix_figure(result: dict, key: str, title: str, colorscale: str = "Viridis", zmin=0.0):
    matrix = np.array([[np.nan if v is None else v for v in row] for row in result[key]], dtype=float)
    return plots.heatmap(np.round(matrix, 3), result["tokens"], title=plots.safe(title), colorscale=colorscale,
                         zmin=zmin, zmax=None, highlight_row=result["position"], height=420)


def predictions_text(result: dict) -> str:
    if not result["predictions"]:
        return ui.md(result["prediction_note"])
    where = "at the [MASK]" if result["family"] != "causal" else "as the next token after the followed one"
    rows = "\n".join(f"| {ui.md(p['token'])} | {p['prob']:.3f} |" for p in result["predictions"])
    check = result["prediction_check"]
    checked = f"\n\n✓ max |diff| {check['max_abs_diff']:.1e} against {ui.md(check['against'])}." if check else ""
    return f"**Top predictions {where}:**\n\n| token | probability |\n|---|---|\n{rows}{checked}"


def on_steps(text, text_b, model_name, layer, head, position):
    """The sliders may hold another model's layer or head (or a link's): clamped to this model's."""
    loaded = models.load(model_name, *steps.FAMILIES)
    config = loaded.model.config
    layer = min(max(int(layer or 0), 0), getattr(config, "num_hidden_layers", 1) - 1)
    head = min(max(int(head or 0), 0), getattr(config, "num_attention_heads", 1) - 1)
    r = steps.forward_steps(loaded, text, layer, head, None if position in (None, "", AUTO) else int(position),
                            text_b)
    result = r.to_json()
    notes = "\n".join(f"- {ui.md(n)}" for n in result["notes"])
    return (f"{ui.model_badge(loaded)}\n\n{token_line(result)}\n\n{notes}", step_rows(result),
            matrix_figure(result, "scaled_scores", f"Head {r.head}: QKᵀ / √d_k", "Blues", None),
            matrix_figure(result, "attention_unscaled", "Softmax without ÷ √d_k"),
            matrix_figure(result, "attention", "Softmax with ÷ √d_k"),
            scaling_note(result), predictions_text(result),
            gr.update(maximum=r.sizes["layers"] - 1, value=r.layer), gr.update(maximum=r.sizes["heads"] - 1, value=r.head),
            result)


def build(ctx: Build) -> None:
    gr.Markdown(HEADING)
    ui.explainer(EXPLAINER)
    gr.Markdown(COURSE, elem_classes=["lab-secondary"])
    with gr.Row():
        with gr.Column(scale=3):
            text = gr.Textbox(steps.EXAMPLE, label="Sentence (a [MASK] shows a masked LM's head)", max_lines=2,
                              max_length=MAX_CHARS)
            text_b = gr.Textbox("", label="Sentence B (optional, BERT-style models: segment 1)", max_lines=2,
                                max_length=MAX_CHARS)
        with gr.Column(scale=2):
            model = ui.model_dropdown(*steps.FAMILIES, label="Model (an encoder, or a causal LM)", family_order=True)
            position = gr.Dropdown(POSITIONS, value=AUTO, label="Follow the token at position")
    with gr.Row():
        layer = gr.Slider(0, MAX_LAYER, value=0, step=1, label="Layer")  # set to the model's range after each run
        head = gr.Slider(0, MAX_HEAD, value=0, step=1, label="Head")
        run = gr.Button("Show every step", variant="primary")
    summary = gr.Markdown()
    table = ui.table(HEADERS, "Every step of the chosen layer and head", wrap=True, max_height=2400,  # a phone scrolls
                     column_widths=["44px", "190px", "250px", "90px", "250px", "300px"])  # it sideways
    with gr.Row():
        figures = [gr.Plot(min_width=300) for _ in range(3)]
    scaling, predictions = gr.Markdown(), gr.Markdown()
    result = ui.result_json()
    ctx.link(__name__, steps_text=text, steps_text_b=text_b, steps_model=model, steps_layer=layer, steps_head=head,
            steps_position=position)
    inputs = [text, text_b, model, layer, head, position]
    outputs = [summary, table, *figures, scaling, predictions, layer, head, result]
    ui.wire([run.click, text.submit, text_b.submit, layer.release, head.release, position.input], on_steps,
            inputs, outputs)
    ctx.on_load(on_steps, inputs, outputs)
