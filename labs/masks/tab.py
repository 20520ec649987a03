"""Masks, the tab: layout, wiring, and handlers that take values and return values."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr
import numpy as np
import pandas as pd

from labs.core.errors import MAX_CHARS
from labs.core.models import models
from labs.core.ui import course_quotes, plots, ui
from labs.core.ui.build import Build
from labs.masks import compute, tab_cheating
from labs.masks.compute import EXAMPLE

TITLE = "Masks"
ID = "masks"  # the ?tab= link and the folder
EXPLAINER = """**The attention mask is the one structural difference between BERT and GPT.** An encoder
lets every token attend to every other token (all ones); a decoder's lower-triangular mask hides the
future, so each token sees only itself and what came before. Type a sentence and compare, then check
it against the attention weights of two real models. An encoder-decoder (T5) has both: pick it on either
side to see its encoder's mask or its decoder's."""
TRY_THIS = (
    "B1.2: for \"The [MASK] sat on the mat\", pick [MASK]. Which tokens can it attend to under each mask?",
    "Count the allowed connections for n = 6 by hand, then check with the box above. Which formula grows faster?",
    "In the real-model panel, is the largest weight above the diagonal exactly 0 for the causal LM? Why is "
    "it not for the encoder?",
    "Open the arithmetic: why does exp(−∞) = 0 make masking exact, and why do the rows still sum to 1?",
    "Pick t5-small on both sides: which of its two stacks has the encoder's mask, and which the decoder's?")
ATTEND_HEADERS = ["to", "Can attend? (bidirectional)", "Can attend? (causal)"]
MASK_COLOURS = {"mask": [[0, "#f3f4f6"], [1, plots.BLUE]], "padding": [[0, "#f3f4f6"], [1, plots.GREEN]],
                "encdec": [[0, "#f3f4f6"], [1, plots.PURPLE]]}


def mask_figures(tokens: list[str], row: int | None = None):
    kwargs = dict(zmin=0, zmax=1, text_format="%{z}" if len(tokens) <= 16 else None, highlight_row=row,
                  colorscale=MASK_COLOURS["mask"])
    n = len(tokens)
    return (plots.heatmap(compute.bidirectional_mask(n), tokens, title="Bidirectional (BERT): everyone sees everyone",
                          **kwargs),
            plots.heatmap(compute.causal_mask(n), tokens, title="Causal (GPT): no peeking at the future", **kwargs))


def token_choices(tokens: list[str]):
    return gr.update(choices=[(f"{i}: {t}", i) for i, t in enumerate(tokens)], value=None)


def counts_text(n: int, c: dict) -> str:
    return (f"**n = {n} tokens.** Bidirectional: n² = {n}² = **{c['bidirectional']}** connections. "
            f"Causal: n(n+1)/2 = {n}·{n + 1}/2 = **{c['causal']}** connections.")


def arithmetic(tokens: list[str]):
    """The masked-softmax explanation and its two heatmaps (masked scores, weights)."""
    ex = compute.masked_softmax_example(tokens)
    slide = course_quotes.get("course_mask_nan")
    nans = int(np.isnan(ex.slide_way).sum())
    text = (f"On the first {len(ex.tokens)} tokens, with made-up scores. Masked entries are set to −∞ (masked_fill: "
            "where M = 0, −∞); exp(−∞) = 0, so their weights are exactly 0. Row sums: "
            + ", ".join(f"{s:.6f}" for s in ex.weights.sum(axis=1))
            + f"\n\nThe slide ({ui.md(slide.cite)}) writes it `{slide.text}`. Computed that way, as written, "
            f"{nans} of the {ex.slide_way.size} scores are NaN (every allowed one: 0 · (−∞) = NaN in floating point), "
            "and softmax turns every row NaN: implementations fill instead of multiplying.")
    shown = np.where(np.isinf(ex.masked_scores), np.nan, ex.masked_scores)
    return (text, plots.heatmap(shown, ex.tokens, title="masked_fill(M = 0, −∞)  (blank = −∞)", zmin=None,
                                text_format="%{z:.1f}", colorscale="RdBu"),
            plots.heatmap(np.round(ex.weights, 3), ex.tokens, title="softmax: masked weights are 0",
                          text_format="%{z:.3f}", zmin=0, zmax=1))


def on_show(text, encoder_name, causal_name):
    result = compute.masks_result(text, encoder_name, causal_name)
    tokens, cut_note = compute.sentence_tokens(text)
    n = len(tokens)
    return (ui.notice(cut_note), *mask_figures(tokens), token_choices(tokens),
            pd.DataFrame(columns=ATTEND_HEADERS), counts_text(n, result["connections"]), gr.update(value=n),
            *arithmetic(tokens), result)


def labels_for(text, encoder_name, use_subwords) -> tuple[list[str], str]:
    if use_subwords and encoder_name:
        return compute.limit(compute.model_tokens(models.load(encoder_name, *compute.ENCODER_FAMILIES), text))
    return compute.sentence_tokens(text)


def on_pick(text, encoder_name, use_subwords, row):
    if row is None:  # the list was just refilled: the masks on screen are already right
        return gr.skip(), gr.skip(), pd.DataFrame(columns=ATTEND_HEADERS)
    tokens, _ = labels_for(text, encoder_name, use_subwords)
    row = None if row is None or int(row) >= len(tokens) else int(row)
    rows = compute.can_attend_table(tokens, row) if row is not None else []
    return *mask_figures(tokens, row), pd.DataFrame(rows, columns=ATTEND_HEADERS)


def on_labels(text, encoder_name, use_subwords):
    tokens, cut_note = labels_for(text, encoder_name, use_subwords)
    return *mask_figures(tokens), token_choices(tokens), ui.notice(cut_note)


def on_check(n, bidirectional_answer, causal_answer) -> str:
    lines = []
    for key, answer, right, hint in compute.check_counts(n, bidirectional_answer, causal_answer):
        label = key.capitalize()
        if answer is None:
            lines.append(f"- {label}: enter your answer.")
        elif right:
            lines.append(f"- {label}: **{answer} is right.** ✅")
        else:
            lines.append(f"- {label}: {answer} is not right. ❌ Hint: {hint}.")
    return "\n".join(lines)


def real_figure(r: compute.RealAttention, what: str):
    name = r.model if r.part == "self" else f"{r.model} ({r.part})"
    return plots.heatmap(np.round(r.weights, 3), r.tokens, title=plots.safe(f"{name}: {what}"), zmin=0, zmax=None,
                         text_format="%{z:.2f}" if len(r.tokens) <= 12 else None, colorscale="Viridis")


def real_note(role: str, r: compute.RealAttention) -> str:
    part = "" if r.part == "self" else f", its {compute.PART_WORDS[r.part]}"
    return (f"**{role} {ui.md(r.model)}** ({r.source}{part}): largest weight above the diagonal, any layer and "
            f"head = **{r.max_above_diagonal:.6g}**")


def on_real(text, encoder_name, causal_name, layer, head):
    head = None if head is None or int(head) < 0 else int(head)
    what = f"layer {int(layer)}, " + ("average over heads" if head is None else f"head {head}")
    figures, notes = [], []
    resolved = compute.resolve_pair(encoder_name, causal_name)  # once per click
    for role, (r, error) in zip(("Encoder", "Causal LM"), compute.real_pair(text, resolved, layer, head)):
        figures.append(real_figure(r, what) if r else None)
        notes.append(real_note(role, r) if r else f"**{role}**: {ui.md(error)}")
    return "\n\n".join(notes), *figures


def on_padding(a, b):
    p = compute.padding_masks(a, b)
    return tuple(plots.heatmap(p["combined"][i], p["tokens"][i], colorscale=MASK_COLOURS["padding"], zmin=0, zmax=1,
                               text_format="%{z}" if len(p["tokens"][i]) <= 16 else None,
                               title=f"Sentence {i + 1}: causal × padding ([PAD] is invisible)") for i in range(2))


def on_encdec(source, target):
    m = compute.encoder_decoder_masks(source, target)
    common = dict(colorscale=MASK_COLOURS["encdec"], zmin=0, zmax=1)
    return (plots.heatmap(m["encoder"], m["source"], title="Encoder self-attention (full)", **common),
            plots.heatmap(m["decoder"], m["target"], title="Decoder self-attention (causal)", **common),
            plots.heatmap(m["cross"], m["source"], m["target"], title="Cross-attention: decoder → encoder", **common))


def two_texts(title: str, labels: tuple[str, str], values: tuple[str, str], button: str, plots_count: int):
    """An accordion with two text boxes, a button and a row of plots (padding, encoder–decoder)."""
    with gr.Accordion(title, open=False):
        with gr.Row():
            texts = [gr.Textbox(v, label=lab, max_length=MAX_CHARS) for lab, v in zip(labels, values)]
        run = gr.Button(button)
        with gr.Row():
            figures = [gr.Plot() for _ in range(plots_count)]
    return SimpleNamespace(texts=texts, run=run, plots=figures)


def counting_section() -> SimpleNamespace:
    with gr.Accordion("Check your count (exercise B1.2)", open=True):
        with gr.Row():
            n = gr.Number(6, label="Sentence length n", precision=0, minimum=1, maximum=10000)
            bidirectional = gr.Number(None, label="Your answer: allowed connections, bidirectional", precision=0)
            causal = gr.Number(None, label="Your answer: allowed connections, causal", precision=0)
        check = gr.Button("Check my answer")
        verdict = gr.Markdown()
    with gr.Accordion("The arithmetic: mask the scores with −∞, then softmax", open=False):
        text = gr.Markdown()
        with gr.Row():
            scores, weights = gr.Plot(label="masked scores"), gr.Plot(label="weights")
    return SimpleNamespace(n=n, bidirectional=bidirectional, causal=causal, check=check, verdict=verdict,
                           arithmetic=[text, scores, weights])


def build(ctx: Build) -> None:
    ui.explainer(EXPLAINER)
    with gr.Row():
        text = gr.Textbox(EXAMPLE, label="Your sentence", scale=3, max_lines=3, max_length=MAX_CHARS)
        with gr.Column(scale=2):
            encoder = ui.model_dropdown(*compute.ENCODER_FAMILIES, family_order=True,
                                        label="Encoder (bidirectional, or an encoder-decoder's)")
            causal = ui.model_dropdown(*compute.CAUSAL_FAMILIES, label="Causal LM (or an encoder-decoder's decoder)",
                                       family_order=True)
    show = gr.Button("Show the masks", variant="primary")
    notice = gr.Markdown()
    with gr.Row():
        subwords = gr.Checkbox(False, label="Label with the encoder's own subword tokens instead of words")
        picked = gr.Dropdown(label="Pick a token to see what it can attend to", choices=[], value=None)
    with gr.Row():
        bidir_plot, causal_plot = gr.Plot(label="Bidirectional mask"), gr.Plot(label="Causal mask")
    table = ui.table(ATTEND_HEADERS, "What the picked token can see")
    counts = gr.Markdown()
    count = counting_section()
    gr.Markdown("### Proof on real models")
    with gr.Row():
        layer = gr.Slider(-1, 11, value=-1, step=1, label="Layer (−1 = last)")
        head = gr.Slider(-1, 11, value=-1, step=1, label="Head (−1 = average over heads)")
    real_note = gr.Markdown()
    with gr.Row():
        enc_plot, dec_plot = gr.Plot(label="Encoder attention"), gr.Plot(label="Causal LM attention")
    result_json = ui.result_json()
    padding = two_texts("Padding: two sentences in one batch", ("Sentence 1", "Sentence 2"),
                        ("The cat sat on the mat", "Dogs bark"), "Show padding masks", 2)
    encdec = two_texts("Encoder–decoder (T5-style): three kinds of attention",
                       ("Source (encoder input)", "Target (decoder input)"),
                       ("The cat sat on the mat", "Le chat était assis"), "Show encoder–decoder masks", 3)
    ctx.link(__name__, text=text, encoder=encoder, causal=causal)
    tab_cheating.build(ctx)
    ui.course_links(("mask_nan", "the causal mask's (1 − M)·(−∞)"))
    ui.try_this(*TRY_THIS)

    shown = [notice, bidir_plot, causal_plot, picked, table, counts, count.n, *count.arithmetic, result_json]
    ui.wire(show.click, on_show, [text, encoder, causal], shown)
    ctx.on_load(on_show, [text, encoder, causal], shown)
    ui.wire(picked.change, on_pick, [text, encoder, subwords, picked], [bidir_plot, causal_plot, table])
    ui.wire(subwords.change, on_labels, [text, encoder, subwords], [bidir_plot, causal_plot, picked, notice])
    ui.wire(count.check.click, on_check, [count.n, count.bidirectional, count.causal], count.verdict)
    # The real-model forward pass is cached (labs.core.work.lm): sliders and first loads reuse it.
    real = ([text, encoder, causal, layer, head], [real_note, enc_plot, dec_plot])
    ui.wire([show.click, layer.release, head.release], on_real, *real)
    ctx.on_load(on_real, *real)
    for part, handler in ((padding, on_padding), (encdec, on_encdec)):
        ui.wire(part.run.click, handler, part.texts, part.plots)
        ctx.on_load(handler, part.texts, part.plots)
