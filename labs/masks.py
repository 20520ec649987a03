"""Lab 3, "Masks": causal vs bidirectional attention masks, for the student's own sentence,
checked against the attention weights of real models (Part B exercise B1.2)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import logging

import numpy as np

from labs import models, plots
from labs.errors import BadInput

log = logging.getLogger(__name__)

TITLE = "Masks"
MAX_TOKENS = 64
EXAMPLE = "The cat sat on the mat"
ARITHMETIC_TOKENS = 6  # the worked softmax example stays readable at this size

# ---------------------------------------------------------------- compute


def word_tokens(text: str) -> list[str]:
    """Words as in the lecture's tables: [MASK] stays one token, punctuation is its own token."""
    return re.findall(r"\[MASK\]|\w+(?:'\w+)?|[^\w\s]", text)


def check_text(text) -> str:
    if not isinstance(text, str) or not text.strip():
        raise BadInput("Type a sentence first, for example: The cat sat on the mat")
    return text.strip()


def limit(tokens: list[str]) -> tuple[list[str], str]:
    """Keep the first MAX_TOKENS tokens, and say so when that cut something."""
    if len(tokens) > MAX_TOKENS:
        return tokens[:MAX_TOKENS], f"Your text has {len(tokens)} tokens; the masks show the first {MAX_TOKENS}."
    return tokens, ""


def bidirectional_mask(n: int) -> np.ndarray:
    """Encoder (BERT): every token may attend to every token. 1 = may attend."""
    return np.ones((n, n), dtype=int)


def causal_mask(n: int) -> np.ndarray:
    """Decoder (GPT): token i may attend to tokens 0..i only, never to the future."""
    return np.tril(np.ones((n, n), dtype=int))


def connections(n: int) -> dict[str, int]:
    return {"bidirectional": n * n, "causal": n * (n + 1) // 2}


def can_attend_table(tokens: list[str], row: int) -> list[list[str]]:
    """The exercise's table: from tokens[row] to each token, can it attend under each mask?"""
    causal = causal_mask(len(tokens))[row]
    return [[tok, "Yes", "Yes" if causal[j] else "No"] for j, tok in enumerate(tokens)]


@dataclass
class MaskedSoftmax:
    tokens: list[str]
    scores: np.ndarray  # raw attention scores q·k/√d (made up, rounded for reading)
    masked_scores: np.ndarray  # scores + (1 − M)·(−∞)
    weights: np.ndarray  # softmax of each row


def masked_softmax_example(tokens: list[str], seed: int = 0) -> MaskedSoftmax:
    """`scores + (1 − M)·(−∞)` then softmax, on the sentence's first few tokens: the masked
    weights come out exactly 0 and every row still sums to 1."""
    tokens = tokens[:ARITHMETIC_TOKENS]
    n = len(tokens)
    scores = np.round(np.random.default_rng(seed).normal(0, 1.5, (n, n)), 1)
    masked = np.where(causal_mask(n) == 1, scores, -np.inf)
    shifted = np.exp(masked - masked.max(axis=1, keepdims=True))  # exp(−∞) is exactly 0
    return MaskedSoftmax(tokens, scores, masked, shifted / shifted.sum(axis=1, keepdims=True))


def padding_masks(sentence_a: str, sentence_b: str) -> dict:
    """Two sentences in one batch: the shorter is padded; padding mask and padding × causal."""
    batch = [word_tokens(check_text(sentence_a))[:MAX_TOKENS], word_tokens(check_text(sentence_b))[:MAX_TOKENS]]
    width = max(len(t) for t in batch)
    padded = [t + ["[PAD]"] * (width - len(t)) for t in batch]
    padding = np.array([[1] * len(t) + [0] * (width - len(t)) for t in batch])  # per key position
    combined = [causal_mask(width) * padding[b][None, :] for b in range(2)]
    return {"tokens": padded, "padding": padding, "combined": combined}


def encoder_decoder_masks(source: str, target: str) -> dict:
    """T5-style: encoder self-attention (full), decoder self-attention (causal), cross-attention
    (every target token sees every source token)."""
    src = word_tokens(check_text(source))[:MAX_TOKENS]
    tgt = word_tokens(check_text(target))[:MAX_TOKENS]
    return {"source": src, "target": tgt, "encoder": bidirectional_mask(len(src)),
            "decoder": causal_mask(len(tgt)), "cross": np.ones((len(tgt), len(src)), dtype=int)}


def model_tokens(model_name: str, text: str) -> list[str]:
    """The model's own subword tokens (with its special tokens), for the masks' labels."""
    tokenizer = models.load(model_name).tokenizer
    return models.readable_tokens(tokenizer, tokenizer(check_text(text))["input_ids"])


def _attentions(model_name: str, text: str):
    """All layers' attention [L, H, n, n] and the tokens, from the Attention lab's cached forward
    pass: the same (model, text) is computed once for both labs."""
    from labs import attention

    r = attention.run(model_name, text)
    return list(r.tokens), r.weights


@dataclass
class RealAttention:
    model: str
    source: str
    tokens: list[str]
    weights: np.ndarray  # the chosen layer, one head or the mean over heads
    max_above_diagonal: float  # over every layer and head


def real_attention(model_name: str, text: str, layer: int = -1, head: int | None = None) -> RealAttention:
    text = check_text(text)
    tokens, weights = _attentions(model_name, text)
    n_layers, n_heads = weights.shape[:2]
    if not -n_layers <= layer < n_layers or (head is not None and not 0 <= head < n_heads):
        raise BadInput(f"This model has layers 0–{n_layers - 1} and heads 0–{n_heads - 1}.")
    chosen = weights[layer].mean(axis=0) if head is None else weights[layer, head]
    above = np.triu(np.ones(weights.shape[-2:], dtype=bool), k=1)
    return RealAttention(model_name, models.get_choice(model_name).source, tokens, chosen,
                         float(weights[..., above].max()) if above.any() else 0.0)


def masks_result(text: str, encoder_model: str, causal_model: str) -> dict:
    """The `masks` API's JSON: both masks, the counts, and the real models' largest weight above
    the diagonal (exactly 0 for a causal LM). A model that cannot load gives an "error" entry."""
    tokens, _ = limit(word_tokens(check_text(text)))
    real = {}
    for role, name in (("encoder", encoder_model), ("causal", causal_model)):
        try:
            r = real_attention(name, text)
            real[role] = {"model": r.model, "tokens": r.tokens, "max_above_diagonal": r.max_above_diagonal}
        except models.ModelUnavailable as exc:
            real[role] = {"model": name, "tokens": [], "max_above_diagonal": None, "error": str(exc)}
    return {"tokens": tokens, "bidirectional": bidirectional_mask(len(tokens)).tolist(),
            "causal": causal_mask(len(tokens)).tolist(), "connections": connections(len(tokens)), "real": real}


# ---------------------------------------------------------------- figures


def mask_figures(tokens: list[str], row: int | None = None):
    n = len(tokens)
    kwargs = dict(zmin=0, zmax=1, text_format="%{z}" if n <= 16 else None, highlight_row=row,
                  colorscale=[[0, "#f3f4f6"], [1, "#1d4ed8"]])
    return (plots.heatmap(bidirectional_mask(n), tokens, title="Bidirectional (BERT): everyone sees everyone",
                          **kwargs),
            plots.heatmap(causal_mask(n), tokens, title="Causal (GPT): no peeking at the future", **kwargs))


def real_figure(r: RealAttention, what: str):
    return plots.heatmap(np.round(r.weights, 3), r.tokens, title=f"{r.model}: {what}", zmin=0, zmax=None,
                         text_format="%{z:.2f}" if len(r.tokens) <= 12 else None, colorscale="Viridis")


# ---------------------------------------------------------------- tab

EXPLAINER = """**The attention mask is the one structural difference between BERT and GPT.** An encoder
lets every token attend to every other token (all ones); a decoder's lower-triangular mask hides the
future, so each token sees only itself and what came before. Type a sentence and compare, then check
it against the attention weights of two real models."""


def build_tab(demo) -> None:
    import gradio as gr
    import pandas as pd

    from labs import ui

    ui.explainer(EXPLAINER)
    with gr.Row():
        text = gr.Textbox(EXAMPLE, label="Your sentence", scale=3, max_lines=3)
        with gr.Column(scale=2):
            encoder = ui.model_dropdown("masked", "encoder", label="Encoder (bidirectional)")
            causal = ui.model_dropdown("causal", label="Causal LM")
    show = gr.Button("Show the masks", variant="primary")
    notice = gr.Markdown()
    with gr.Row():
        subwords = gr.Checkbox(False, label="Label with the encoder's own subword tokens instead of words")
        picked = gr.Dropdown(label="Pick a token to see what it can attend to", choices=[], value=None)
    with gr.Row():
        bidir_plot, causal_plot = gr.Plot(label="Bidirectional mask"), gr.Plot(label="Causal mask")
    table = gr.Dataframe(headers=["to", "Can attend? (bidirectional)", "Can attend? (causal)"], interactive=False,
                         label="What the picked token can see")
    counts = gr.Markdown()
    with gr.Accordion("Check your count (exercise B1.2)", open=True):
        with gr.Row():
            n_in = gr.Number(6, label="Sentence length n", precision=0, minimum=1, maximum=10000)
            bi_answer = gr.Number(None, label="Your answer: allowed connections, bidirectional", precision=0)
            ca_answer = gr.Number(None, label="Your answer: allowed connections, causal", precision=0)
        check = gr.Button("Check my answer")
        verdict = gr.Markdown()
    with gr.Accordion("The arithmetic: scores + (1 − M)·(−∞), then softmax", open=False):
        arithmetic = gr.Markdown()
        with gr.Row():
            scores_plot, weights_plot = gr.Plot(label="masked scores"), gr.Plot(label="weights")
    gr.Markdown("### Proof on real models")
    with gr.Row():
        layer = gr.Slider(-1, 11, value=-1, step=1, label="Layer (−1 = last)")
        head = gr.Slider(-1, 11, value=-1, step=1, label="Head (−1 = average over heads)")
    real_note = gr.Markdown()
    with gr.Row():
        enc_plot, dec_plot = gr.Plot(label="Encoder attention"), gr.Plot(label="Causal LM attention")
    result_json = gr.JSON(label="Result (as the API returns it)", open=False)
    with gr.Accordion("Padding: two sentences in one batch", open=False):
        with gr.Row():
            pad_a = gr.Textbox("The cat sat on the mat", label="Sentence 1")
            pad_b = gr.Textbox("Dogs bark", label="Sentence 2")
        pad_btn = gr.Button("Show padding masks")
        with gr.Row():
            pad_plot_a, pad_plot_b = gr.Plot(), gr.Plot()
    with gr.Accordion("Encoder–decoder (T5-style): three kinds of attention", open=False):
        with gr.Row():
            src = gr.Textbox("The cat sat on the mat", label="Source (encoder input)")
            tgt = gr.Textbox("Le chat était assis", label="Target (decoder input)")
        ed_btn = gr.Button("Show encoder–decoder masks")
        with gr.Row():
            ed_enc, ed_dec, ed_cross = gr.Plot(), gr.Plot(), gr.Plot()
    ui.try_this(
        "B1.2: for \"The [MASK] sat on the mat\", pick [MASK]. Which tokens can it attend to under each mask?",
        "Count the allowed connections for n = 6 by hand, then check with the box above. Which formula grows faster?",
        "In the real-model panel, is the largest weight above the diagonal exactly 0 for the causal LM? Why is "
        "it not for the encoder?",
        "Open the arithmetic: why does exp(−∞) = 0 make masking exact, and why do the rows still sum to 1?")

    def labels_for(text, encoder_name, use_subwords):
        if use_subwords and encoder_name:
            return limit(model_tokens(encoder_name, text))
        return limit(word_tokens(check_text(text)))

    @ui.friendly
    def on_show(text, encoder_name, causal_name):
        result = masks_result(text, encoder_name, causal_name)
        tokens, cut_note = limit(word_tokens(check_text(text)))
        n = len(tokens)
        bi, ca = mask_figures(tokens)
        c = result["connections"]
        counts_md = (f"**n = {n} tokens.** Bidirectional: n² = {n}² = **{c['bidirectional']}** connections. "
                     f"Causal: n(n+1)/2 = {n}·{n + 1}/2 = **{c['causal']}** connections.")
        ex = masked_softmax_example(tokens)
        arith_md = (f"On the first {len(ex.tokens)} tokens, with made-up scores. Masked entries become −∞; "
                    f"exp(−∞) = 0, so their weights are exactly 0. Row sums: "
                    + ", ".join(f"{s:.6f}" for s in ex.weights.sum(axis=1)))
        masked_text = np.where(np.isinf(ex.masked_scores), np.nan, ex.masked_scores)
        scores_fig = plots.heatmap(masked_text, ex.tokens, title="scores + (1 − M)·(−∞)  (blank = −∞)",
                                   zmin=None, text_format="%{z:.1f}", colorscale="RdBu")
        weights_fig = plots.heatmap(np.round(ex.weights, 3), ex.tokens, title="softmax: masked weights are 0",
                                    text_format="%{z:.3f}", zmin=0, zmax=1)
        return (ui.notice(ui.esc(cut_note)) if cut_note else "", bi, ca,
                gr.update(choices=[(f"{i}: {t}", i) for i, t in enumerate(tokens)], value=None),
                pd.DataFrame(columns=["to", "Can attend? (bidirectional)", "Can attend? (causal)"]),
                counts_md, gr.update(value=n), arith_md, scores_fig, weights_fig, result)

    show.click(on_show, [text, encoder, causal],
               [notice, bidir_plot, causal_plot, picked, table, counts, n_in, arithmetic, scores_plot,
                weights_plot, result_json], api_name="masks")

    @ui.friendly
    def on_pick(text, encoder_name, use_subwords, row):
        tokens, _ = labels_for(text, encoder_name, use_subwords)
        row = None if row is None or int(row) >= len(tokens) else int(row)
        bi, ca = mask_figures(tokens, row)
        rows = can_attend_table(tokens, row) if row is not None else []
        return bi, ca, pd.DataFrame(rows, columns=["to", "Can attend? (bidirectional)", "Can attend? (causal)"])

    @ui.friendly
    def on_labels(text, encoder_name, use_subwords):
        tokens, cut_note = labels_for(text, encoder_name, use_subwords)
        bi, ca = mask_figures(tokens)
        return (bi, ca, gr.update(choices=[(f"{i}: {t}", i) for i, t in enumerate(tokens)], value=None),
                ui.notice(ui.esc(cut_note)) if cut_note else "")

    picked.change(on_pick, [text, encoder, subwords, picked], [bidir_plot, causal_plot, table],
                  api_visibility="private")
    subwords.change(on_labels, [text, encoder, subwords], [bidir_plot, causal_plot, picked, notice],
                    api_visibility="private")

    def on_check(n, bi_ans, ca_ans):
        if n is None or n < 1:
            return "Enter a sentence length n of at least 1."
        want = connections(int(n))
        lines = []
        for label, answer, key in (("Bidirectional", bi_ans, "bidirectional"), ("Causal", ca_ans, "causal")):
            if answer is None:
                lines.append(f"- {label}: enter your answer.")
            elif int(answer) == want[key]:
                lines.append(f"- {label}: **{int(answer)} is right.** ✅")
            else:
                hint = "n × n" if key == "bidirectional" else "1 + 2 + … + n = n(n+1)/2"
                lines.append(f"- {label}: {int(answer)} is not right. ❌ Hint: {hint}.")
        return "\n".join(lines)

    check.click(on_check, [n_in, bi_answer, ca_answer], verdict, api_visibility="private")

    def on_real(text, encoder_name, causal_name, layer_i, head_i):
        head_arg = None if head_i is None or int(head_i) < 0 else int(head_i)
        what = "average over heads" if head_arg is None else f"head {head_arg}"
        figures, notes = [], []
        for role, name in (("Encoder", encoder_name), ("Causal LM", causal_name)):
            try:
                r = real_attention(name, text, int(layer_i), head_arg)
                figures.append(real_figure(r, f"layer {int(layer_i)}, {what}"))
                notes.append(f"**{role} {ui.esc(r.model)}** ({r.source}): largest weight above the diagonal, "
                             f"any layer and head = **{r.max_above_diagonal:.6g}**")
                continue
            except (BadInput, models.ModelUnavailable) as exc:  # the masks above still stand
                why = str(exc)
            except Exception:
                log.exception("real attention failed for %s", name)
                why = "its attention could not be computed for this text."
            figures.append(None)
            notes.append(f"**{role}**: {ui.esc(why)}")
        return "\n\n".join(notes), *figures

    real_inputs = [text, encoder, causal, layer, head]
    show.click(on_real, real_inputs, [real_note, enc_plot, dec_plot], api_visibility="private")
    layer.release(on_real, real_inputs, [real_note, enc_plot, dec_plot], api_visibility="private")
    head.release(on_real, real_inputs, [real_note, enc_plot, dec_plot], api_visibility="private")

    @ui.friendly
    def on_padding(a, b):
        p = padding_masks(a, b)
        colours = [[0, "#f3f4f6"], [1, "#047857"]]
        return tuple(plots.heatmap(p["combined"][i], p["tokens"][i], colorscale=colours, zmin=0, zmax=1,
                                   text_format="%{z}" if len(p["tokens"][i]) <= 16 else None,
                                   title=f"Sentence {i + 1}: causal × padding ([PAD] is invisible)")
                     for i in range(2))

    pad_btn.click(on_padding, [pad_a, pad_b], [pad_plot_a, pad_plot_b], api_visibility="private")

    @ui.friendly
    def on_encdec(source, target):
        m = encoder_decoder_masks(source, target)
        colours = [[0, "#f3f4f6"], [1, "#7c3aed"]]
        common = dict(colorscale=colours, zmin=0, zmax=1)
        return (plots.heatmap(m["encoder"], m["source"], title="Encoder self-attention (full)", **common),
                plots.heatmap(m["decoder"], m["target"], title="Decoder self-attention (causal)", **common),
                plots.heatmap(m["cross"], m["source"], m["target"], title="Cross-attention: decoder → encoder",
                              **common))

    ed_btn.click(on_encdec, [src, tgt], [ed_enc, ed_dec, ed_cross], api_visibility="private")

    # The example is drawn on first load; the real-model forward pass is cached per (model, text).
    demo.load(on_show, [text, encoder, causal], [notice, bidir_plot, causal_plot, picked, table, counts, n_in,
                                                 arithmetic, scores_plot, weights_plot, result_json],
              api_visibility="private")
    demo.load(on_real, real_inputs, [real_note, enc_plot, dec_plot], api_visibility="private")
    demo.load(on_padding, [pad_a, pad_b], [pad_plot_a, pad_plot_b], api_visibility="private")
    demo.load(on_encdec, [src, tgt], [ed_enc, ed_dec, ed_cross], api_visibility="private")
