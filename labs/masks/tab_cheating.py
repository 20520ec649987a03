"""Masks, panel "the encoder that cheats": one tiny transformer trained for the next character twice, with and
without the causal mask, from the same seed and batches. Its two training curves, its losses as trained and the
honest ways, each one's greedy continuation of a prompt, and its attention on the next position."""

from __future__ import annotations

import gradio as gr
import numpy as np
import plotly.graph_objects as go

from labs.core.ui import course_quotes, figure_text, plots, ui
from labs.core.ui.build import Build
from labs.masks import cheating

HEADING = "The encoder that cheats: train the same model with and without the causal mask"
NAMES = {"masked": "with the causal mask (a decoder)", "cheater": "without a mask (an encoder: it cheats)"}
LOSS_HEADERS = ["loss (nats per character; lower is better)", "with the causal mask", "without a mask (cheater)"]
SHARE_HEADERS = ["layer", "head", "model", "mean weight on the next position (i + 1)", "mean weight on all later positions"]
END_SHOWN = "⏎"


def course_text() -> str:
    lm, see, leak = (course_quotes.get(i) for i in ("cheating_lm", "cheating_see_future", "cheating_leak"))
    return (
        f"**{lm.cite}:**\n\n> {lm.text}\n\n**{leak.cite}:**\n\n> {see.text}\n>\n> …\n>\n> {leak.text}\n\n"
        "Here you can watch that happen. LM Lab trains one tiny transformer (character by character, on "
        "LM Lab's own sentences) to predict the next character, **twice**: the same weights to start with, the "
        "same batches in the same order. The only difference is the attention mask. With the causal mask, "
        "character t sees characters 0…t. Without it, as in an encoder, character t can also attend to character "
        "t + 1, **which is the answer it is asked for**. Watch what it learns: copying, not predicting.\n\n"
        "Then both are tested the honest way, the only way a language model is ever used: predicting each "
        "character from the ones before it (the future is not there yet when you generate text).")


def loss_figure(r: dict) -> go.Figure:
    fig = go.Figure()
    for name, colour, dash in (("masked", plots.BLUE, "solid"), ("cheater", plots.RED, "dash")):
        losses = r["models"][name]["train_losses"]
        fig.add_trace(go.Scatter(x=list(range(1, len(losses) + 1)), y=losses, name=NAMES[name], mode="lines",
                                 line=dict(color=colour, dash=dash, width=3)))
    plots.style(fig, "Training loss, step by step (the same batches for both)", 420,
                legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0))
    fig.update_xaxes(title="training step")
    fig.update_yaxes(title="cross-entropy on the batch (nats)", rangemode="tozero")
    m, c = (r["models"][n]["train_losses"][-1] for n in ("masked", "cheater"))
    return figure_text.attach(fig, f"After {len(r['models']['masked']['train_losses'])} steps the last batch's loss "
                                   f"is {m:.3f} with the causal mask and {c:.3f} without a mask.")


def loss_table(r: dict) -> list[list]:
    m, c = r["models"]["masked"], r["models"]["cheater"]

    def row(label, key=None, held=None):
        pick = (lambda x: x[key]) if key else (lambda x: x["held_out"][held])
        return [label, round(pick(m), 3), round(pick(c), 3)]

    return [row("training text, as trained (each with its own mask)", key="train"),
            row("held-out text, as trained (the cheater still sees the next character)", held="as_trained"),
            row("held-out, honest: the future cut off (each character from the ones before it only)",
                held="future_cut"),
            row("held-out, honest: the causal mask put on at test time", held="causal_mask"),
            ["for scale: held-out, each character's frequency (no context at all)", round(r["unigram_loss"], 3),
             round(r["unigram_loss"], 3)],
            ["for scale: a uniform guess over the vocabulary, ln V", round(r["uniform_loss"], 3),
             round(r["uniform_loss"], 3)]]


def findings(r: dict) -> str:
    m, c = r["models"]["masked"], r["models"]["cheater"]
    share = max(h["next"] for layer in c["attention"] for h in layer)
    scale = "worse than" if c["held_out"]["future_cut"] > r["unigram_loss"] else "not much better than"
    copied = c["train"] < 0.5 * m["train"]
    found = ("A loss near 0 means it is almost sure of every next character: it has found where the answer is. "
             if copied else "It has not found the answer's place yet: train for more steps. ")
    return (
        f"**Training:** the cheater ends at **{c['train']:.3f}** nats per character, the causal model at "
        f"**{m['train']:.3f}**. {found}One of its heads puts **{share:.0%}** of its attention, on average, on the "
        "very next position.\n\n"
        f"**Honest test** (held-out text, the future cut off): the causal model scores **{m['held_out']['future_cut']:.3f}**"
        f", the cheater **{c['held_out']['future_cut']:.3f}**, {scale} knowing only how often each character "
        f"occurs ({r['unigram_loss']:.3f}). Once the answer is not there to copy, it has little to go on.\n\n"
        f"**The mask, checked:** changing the prompt's last character changes the causal model's logits at the "
        f"earlier positions by at most **{m['future_change']:.3g}** (they never saw it), the cheater's by up to "
        f"**{c['future_change']:.3g}**.\n\n"
        f"Trained here: {r['model']['parameters']:,} parameters each ({r['model']['layers']} layers, "
        f"{r['model']['heads']} heads, d = {r['model']['d_model']}, {r['model']['block']} characters at a time), "
        f"{r['steps']} steps of {r['batch']} windows, seed {r['seed']}, on {ui.md(r['corpus_description'])} "
        f"({r['train_texts']} texts; {r['held_out_texts']} held out). Both trainings took "
        f"{r['training_seconds']:.1f} s.")


def generations(r: dict) -> str:
    prompt = ui.md(r["prompt"])
    lines = ["**Greedy generation, one character at a time** (each step reads only what is already written: the "
             f"prompt and its own characters; {END_SHOWN} is the end of a sentence):"]
    for name in ("masked", "cheater"):
        text = ui.md(r["models"][name]["generation"].replace(cheating.END, f" {END_SHOWN} "))
        lines.append(f"- **{NAMES[name]}:** {prompt}**{text}**")
    return "\n".join(lines)


def share_table(r: dict) -> list[list]:
    return [[layer, head, NAMES[name], round(h["next"], 3), round(h["future"], 3)]
            for name in ("cheater", "masked") for layer, heads in enumerate(r["models"][name]["attention"])
            for head, h in enumerate(heads)]


def attention_figures(r: dict | None, layer, head):
    if not r:
        return None, None
    layer = min(max(int(layer or 0), 0), r["model"]["layers"] - 1)
    head = min(max(int(head or 0), 0), r["model"]["heads"] - 1)
    chars = [c if c != " " else "␣" for c in r["prompt_characters"]]
    figures = []
    for name in ("cheater", "masked"):
        w = np.asarray(r["models"][name]["prompt_attention"][layer][head])
        nxt = float(np.mean(np.diagonal(w, 1))) if len(w) > 1 else 0.0
        figures.append(plots.heatmap(np.round(w, 3), chars, zmin=0, zmax=1, colorscale="Viridis",
                                     text_format="%{z:.2f}" if len(chars) <= 12 else None,
                                     title=plots.safe(f"{NAMES[name]}: layer {layer}, head {head}"),
                                     summary=f"On the prompt, mean weight on the next position: {nxt:.3f}; above "
                                             f"the diagonal in all: {float(np.triu(w, 1).sum()):.3f}."))
    return tuple(figures)


def on_cheating(prompt, corpus, steps, seed, new_chars, layer, head):
    r = cheating.cheating_json(prompt, corpus, steps, seed, new_chars)
    return (findings(r), loss_figure(r), loss_table(r), generations(r), share_table(r),
            *attention_figures(r, layer, head), r)


def build(ctx: Build) -> None:
    with gr.Accordion(HEADING, open=False, elem_id="masks-cheating-panel"):
        gr.Markdown(course_text())
        with gr.Row():
            prompt = gr.Textbox(cheating.EXAMPLE, label="Prompt to continue", scale=2, max_lines=2,
                                max_length=cheating.MAX_PROMPT)
            corpus = gr.Dropdown([(d.split(":")[0], k) for k, d in cheating.CORPORA.items()], value="everyday",
                                 label="Corpus (LM Lab's own)")
        with gr.Row():
            steps = gr.Slider(cheating.MIN_STEPS, cheating.MAX_STEPS, value=cheating.DEFAULT_STEPS, step=50, label="Training steps")
            seed = gr.Number(cheating.DEFAULT_SEED, label="Seed", precision=0, minimum=0, maximum=10_000)
            new_chars = gr.Slider(1, cheating.MAX_NEW, value=cheating.DEFAULT_NEW, step=1,
                                  label="Characters to generate")
        button = gr.Button("Train both models and compare", variant="primary")
        gr.Markdown("Both models are trained on the spot (about half a minute on a small server; a class asking "
                    "for the same settings shares one training).")
        found = gr.Markdown()
        curves = gr.Plot(label="Training loss")
        losses = ui.table(LOSS_HEADERS, "Losses: as trained, and the honest way", wrap=True)
        written = gr.Markdown()
        gr.Markdown("**Where does it look?** Attention on your prompt (rows: each character; columns: what it "
                    "attends to). The cheater's weight sits just right of the diagonal, on the next character; the "
                    "causal model's is 0 everywhere above the diagonal.")
        with gr.Row():
            layer = gr.Slider(0, cheating.LAYERS - 1, value=0, step=1, label="Layer")
            head = gr.Slider(0, cheating.HEADS - 1, value=0, step=1, label="Head")
        with gr.Row():
            cheat_map, masked_map = gr.Plot(label="Without a mask"), gr.Plot(label="With the causal mask")
        shares = ui.table(SHARE_HEADERS, "Held-out text: where the attention goes, every layer and head", wrap=True)
        result = ui.result_json()
        ctx.link(__name__, cheat_prompt=prompt, cheat_corpus=corpus, cheat_steps=steps, cheat_seed=seed)
    inputs = [prompt, corpus, steps, seed, new_chars, layer, head]
    outputs = [found, curves, losses, written, shares, cheat_map, masked_map, result]
    ui.wire([button.click, prompt.submit], on_cheating, inputs, outputs)
    ui.wire([layer.release, head.release], attention_figures, [result, layer, head], [cheat_map, masked_map])
