"""Attention, the tab: layout, wiring, and handlers that take values and return values."""

from __future__ import annotations

import html
import math

import gradio as gr
import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from labs.attention import compute, tab_cost, tab_steps, views
from labs.attention.compute import EXAMPLES, AttentionRun
from labs.core.errors import MAX_CHARS, each
from labs.core.models import models
from labs.core.ui import plots, ui
from labs.core.ui.build import Build

TITLE = "Attention"
ID = "attention"  # the ?tab= link and the folder
FAMILIES = compute.FAMILIES  # masked, encoder, causal, seq2seq (T5: encoder, decoder, cross-attention)
EXPLAINER = """**Every head in every layer spreads each token's attention over the other tokens, and many heads
specialise**: one looks at the previous token, one at `[SEP]`, one links a pronoun to its noun. Type a
sentence (or a pair A/B for BERT-style models), then find those heads in the bertviz views, the heatmaps
and the map of all heads below. The example is a pair of LM Lab's own "bank" sentences
(the course's word for the point: Textbook, 20.1.2 The Polysemy Problem). An encoder-decoder (T5) has
three kinds: the encoder's, the decoder's (causal) and the cross-attention from decoder to encoder."""
TRY_THIS = (
    "The bank pair: in the head view, pick the filter Sentence B -> Sentence A and hover over \"bank\". "
    "Which layer links the two uses most?",
    "Find a previous-token head in the map (blue cells). Open it: where is the bright diagonal?",
    "Many BERT heads send most attention to [SEP]. Count the orange cells. Why might a head \"rest\" there?",
    "Compare: why is the causal LM's heatmap empty above the diagonal, and why does its first column glow?",
    "Switch to a causal model: which patterns disappear, and why can't a causal head be a next-token head?",
    "Pick t5-small and switch between encoder, decoder and cross-attention: which one is empty above the "
    "diagonal, and which one is not square?",
    "Step by step: follow the [MASK] through a layer. Which step's numbers change most? Compare the softmax "
    "with and without the division by √d_k: how much flatter is the row?",
    "Measure the cost: from 256 to 512 tokens, how much do the attention weights grow, and the feed-forward's?",
    "Long documents: which strategy reads the reviewer's verdict? Paste a news article: is the head enough?")
PATTERN_COLOURS = {"previous token": "#bfdbfe", "next token": "#ddd6fe", "self": "#fde68a",
                   "first token / [CLS]": "#fecaca", "separator / end token": "#fed7aa", "broad": "#e5e7eb",
                   "mixed": "#bbf7d0"}
SHORT = {"previous token": "prev", "next token": "next", "self": "self", "first token / [CLS]": "first",
         "separator / end token": "sep", "broad": "broad", "mixed": "mixed"}  # table cells stay narrow
# On a phone (assets/lab.css) bertviz's views do not fit (the head view's right column falls off a 390 px
# screen); the heatmaps below show the same weights, so they stand in, with this note.
PHONE_NOTE = ("bertviz's views do not fit a phone: the heatmaps below show the same attention weights (a wider "
              "screen shows bertviz).")
SEGMENT_COLOURS = {"A": "#bfdbfe", "B": "#bbf7d0", "special": "#fde68a"}
PART_CHOICES = [("Encoder self-attention", "encoder"), ("Decoder self-attention (causal)", "decoder"),
                ("Cross-attention: decoder → encoder", "cross")]
PART_WORDS = {value: label.lower() for label, value in PART_CHOICES}


def shown_part(r: AttentionRun, part) -> AttentionRun:
    """The kind of attention the views show: the chosen one for an encoder-decoder, else the only one."""
    return compute.select(r, part if r.seq2seq else "encoder")


def head_figure(r: AttentionRun, layer: int, head: int | None):
    what = "average over heads" if head is None else f"head {head}"
    part = f"{PART_WORDS[r.part]}, " if r.family == "seq2seq" else ""
    return plots.heatmap(np.round(compute.head_weights(r, layer, head), 3), list(r.key_tokens), list(r.tokens),
                         title=plots.safe(f"{r.model}: {part}layer {layer}, {what}"), colorscale="Viridis", zmin=0,
                         zmax=None, text_format="%{z:.2f}" if len(r.tokens) <= 12 else None)


def layer_grid_figure(r: AttentionRun, layer: int, patterns: list[list[str]]):
    """All heads of one layer, small multiples, each titled with its pattern label."""
    compute.check_layer_head(r, layer, None)
    cols = 4 if r.num_heads > 4 else r.num_heads
    rows = math.ceil(r.num_heads / cols)
    fig = make_subplots(rows=rows, cols=cols, horizontal_spacing=0.03, vertical_spacing=0.08,
                        subplot_titles=[f"head {h}: {patterns[layer][h]}" for h in range(r.num_heads)])
    queries, keys = plots.unique_labels(list(r.tokens)), plots.unique_labels(list(r.key_tokens))
    for h in range(r.num_heads):
        fig.add_trace(go.Heatmap(z=np.round(r.weights[layer, h], 3), x=keys, y=queries, zmin=0, zmax=1,
                                 colorscale="Viridis", showscale=False,
                                 hovertemplate=f"head {h}: from %{{y}} to %{{x}}: %{{z}}<extra></extra>"),
                      row=h // cols + 1, col=h % cols + 1)
    fig.update_yaxes(autorange="reversed", showticklabels=False, type="category")
    fig.update_xaxes(showticklabels=False, type="category")
    fig.update_annotations(font_size=15)
    return plots.style(fig, plots.safe(f"{r.model}: every head of layer {layer}"), 60 + 230 * rows,
                       margin=dict(l=10, r=10, t=80, b=10))


def heatmaps(r: AttentionRun, layer, head, patterns) -> tuple:
    """The chosen head's heatmap (head None = the average) and the layer's grid, layer and head clamped."""
    layer, head = compute.clamp_layer_head(r, layer, head)
    return layer, head, head_figure(r, layer, head), layer_grid_figure(r, layer, patterns)


def segment_chips(r: AttentionRun) -> list[tuple[str, str]]:
    special = set(r.special_positions)
    return [(f"{t} ", "special" if i in special else ("B" if r.segments[i] else "A")) for i, t in enumerate(r.tokens)]


def map_table(r: AttentionRun, entropy: np.ndarray, patterns: list[list[str]]):
    """The layers × heads map: short pattern name and entropy in each cell, coloured by pattern."""
    rows = [[f"L{layer}"] + [f"{SHORT[patterns[layer][h]]} {entropy[layer, h]:.1f}" for h in range(r.num_heads)]
            for layer in range(r.num_layers)]
    colours = [["#f9fafb"] + [PATTERN_COLOURS[p] for p in row] for row in patterns]
    return {"headers": ["layer"] + [f"H{h}" for h in range(r.num_heads)], "data": rows, "colours": colours}


def pattern_legend(patterns: list[list[str]]) -> str:
    """Colour chips with each pattern's short name and how many heads have it (HTML, no user text)."""
    chips = "".join(f'<span class="lab-chip" style="background:{PATTERN_COLOURS[p]}">'
                    f"<b>{SHORT[p]}</b> = {html.escape(p)}: {c}</span> "
                    for p, c in compute.pattern_counts(patterns).items())
    return f'<div class="lab-legend">{chips}</div>'


def run_notes(r: AttentionRun, loaded, text_b, part: str) -> str:
    notes = [ui.model_badge(loaded), ui.notice(r.note)]
    if text_b and r.family == "causal":
        notes.append("A causal LM has no segments: sentence B simply follows A in one text.")
    if r.seq2seq:
        notes.append(f"{compute.DECODER_READS} Shown below: **{PART_WORDS[part]}**.")
    return "\n\n".join(filter(None, notes))


def on_show(text, text_b, model_name, layer, head, average, part="encoder"):
    """Every view of the lab from one (cached) forward pass."""
    loaded = models.load(model_name, *FAMILIES)
    r = compute.run(loaded, text, text_b)
    shown = shown_part(r, part)
    entropy, patterns = compute.summary(shown)
    layer, head, head_fig, grid_fig = heatmaps(shown, layer, None if average else head, patterns)
    frames, files = views.views(r, shown.part), views.standalone_files(r, shown.part)
    counts = (f"**{shown.num_layers} layers × {shown.num_heads} heads = {shown.num_layers * shown.num_heads} "
              "heads.** Low entropy = focused on few tokens; high = spread out.")
    return (run_notes(r, loaded, text_b, shown.part), segment_chips(r), frames["head"], frames["model"],
            files["head"], files["model"], gr.update(maximum=shown.num_layers - 1, value=layer),
            gr.update(maximum=shown.num_heads - 1, value=head or 0), head_fig, grid_fig, counts,
            pattern_legend(patterns), map_table(shown, entropy, patterns),
            compute.run_json(r, layer, head or 0, shown.part), gr.update(visible=r.seq2seq))


def on_heatmap(text, text_b, model_name, layer, head, average, part="encoder"):
    r = shown_part(compute.run(models.load(model_name, *FAMILIES), text, text_b), part)
    return heatmaps(r, layer, None if average else head, compute.pattern_map(r))[2:]


def on_cell(text, text_b, model_name, part, evt: gr.SelectData):
    """A click on the map opens that head (a click on the layer-name column does nothing)."""
    row, col = evt.index
    if col == 0:
        return (gr.update(),) * 5
    return (gr.update(value=row), gr.update(value=col - 1), gr.update(value=False),
            *on_heatmap(text, text_b, model_name, row, col - 1, False, part))


def compare_note(role: str, r: AttentionRun) -> str:
    found = ", ".join(f"{p} {c}" for p, c in compute.pattern_counts(compute.pattern_map(r)).items())
    return (f"**{role}: {ui.md(r.model)}** ({r.source}). Attention above the diagonal, last layer: "
            f"**{compute.above_diagonal(r):.3f}**. Heads: {found}.")


COMPARED = (("Encoder", ("masked", "encoder")), ("Causal LM", ("causal",)))  # role, families


def on_compare(text, encoder_name, causal_name):
    figures, notes = [], []
    asked = [(name, families) for name, (_, families) in zip((encoder_name, causal_name), COMPARED)]
    for (role, _), (r, error) in zip(COMPARED, each(lambda pair: compute.run(models.load(pair[0], *pair[1]), text),
                                                    asked)):
        figures.append(head_figure(r, r.num_layers - 1, None) if r else None)
        notes.append(compare_note(role, r) if r else f"**{role}**: {ui.md(error)}")
    return "\n\n".join(notes), *figures


def bertviz_tab(view: str, explanation: str):
    with gr.Tab(f"{view.capitalize()} view (bertviz)"):
        gr.Markdown(explanation)
        frame = gr.HTML()
        download = gr.DownloadButton("Download this view (standalone HTML, works offline)")
    return frame, download


def build(ctx: Build) -> None:
    ui.explainer(EXPLAINER)
    with gr.Row():
        with gr.Column(scale=3):
            text = gr.Textbox(EXAMPLES[0][0], label="Sentence A", max_lines=3, max_length=MAX_CHARS)
            text_b = gr.Textbox(EXAMPLES[0][1], label="Sentence B (optional; BERT reads [CLS] A [SEP] B [SEP])",
                                max_lines=3, max_length=MAX_CHARS)
        with gr.Column(scale=2):
            model = ui.model_dropdown(*FAMILIES, family_order=True)
            part = gr.Radio(PART_CHOICES, value="encoder", label="Which attention (encoder-decoder models)",
                            info=compute.DECODER_READS, visible=False)
            show = gr.Button("Show attention", variant="primary")
    gr.Examples(EXAMPLES, inputs=[text, text_b], label="Examples", elem_id="att-examples")
    notice = gr.Markdown()
    segments = gr.HighlightedText(label="Tokens and segments (A / B; special tokens marked)",
                                  color_map=SEGMENT_COLOURS, combine_adjacent=False, show_legend=True,
                                  elem_classes=["lab-secondary"])
    gr.Markdown(PHONE_NOTE, elem_classes=["lab-phone-note"])
    with gr.Tabs(overflow_behavior="wrap", elem_classes=["lab-bertviz-views"]):
        head_view, head_download = bertviz_tab("head", "Hover over a token to see where it attends; double-click "
                                                       "a colour to show one head. Each colour is a head; line "
                                                       "thickness is the weight.")
        model_view, model_download = bertviz_tab("model", "Every layer (rows) and head (columns) at once; click a "
                                                         "thumbnail to enlarge it.")
    gr.Markdown("### Heatmaps and what each head does")
    with gr.Row():
        layer = gr.Slider(0, 11, value=0, step=1, label="Layer")
        head = gr.Slider(0, 11, value=0, step=1, label="Head")
        average = gr.Checkbox(False, label="Average over heads")
    with gr.Row():
        head_plot, grid_plot = gr.Plot(label="The chosen head"), gr.Plot(label="Every head of the chosen layer")
    counts, legend = gr.Markdown(), gr.HTML()
    head_map = ui.table([], "Every layer × head: its pattern and attention entropy in bits (click a cell to open "
                            "that head, or pick it with the sliders above)", clickable=True)
    result_json = ui.result_json()
    with gr.Accordion("Compare: an encoder and a causal LM on the same sentence", open=False):
        with gr.Row():
            compare_encoder = ui.model_dropdown("masked", "encoder", label="Encoder")
            compare_causal = ui.model_dropdown("causal", label="Causal LM")
        compare_btn = gr.Button("Compare (last layer, average over heads)")
        compare_note = gr.Markdown()
        with gr.Row():
            compare_left, compare_right = gr.Plot(), gr.Plot()
    ctx.link(__name__, text=text, text_b=text_b, model=model, layer=layer, head=head, part=part)
    tab_steps.build(ctx)
    tab_cost.build(ctx)
    ui.try_this(*TRY_THIS)

    inputs = [text, text_b, model, layer, head, average, part]
    shown = [notice, segments, head_view, model_view, head_download, model_download, layer, head, head_plot,
             grid_plot, counts, legend, head_map, result_json, part]
    ui.wire([show.click, part.input], on_show, inputs, shown)
    ctx.on_load(on_show, inputs, shown)
    ui.wire([layer.release, head.release, average.change], on_heatmap, inputs, [head_plot, grid_plot])
    ui.wire(head_map.select, on_cell, [text, text_b, model, part], [layer, head, average, head_plot, grid_plot])
    ui.wire(compare_btn.click, on_compare, [text, compare_encoder, compare_causal],
            [compare_note, compare_left, compare_right])
