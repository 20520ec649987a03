"""Next token, inside a prediction: score a sentence with the chain rule (perplexity), the logit lens
layer by layer, and beam search drawn as a tree."""

from __future__ import annotations

import math
from types import SimpleNamespace

import gradio as gr
import pandas as pd

from labs.core.errors import MAX_CHARS
from labs.core.models import models
from labs.core.ui import ui
from labs.next_token import beam_tree, inside, inside_plots
from labs.next_token.tab_generate import BEAM_HEADERS

SCORE_EXPLAINER = """**The chain rule: P(sentence) = P(w1) · P(w2 | w1) · P(w3 | w1 w2) · …** The model scores every
token of a sentence in one forward pass, each from the tokens before it: this is exactly the pass training
uses (teacher forcing). Perplexity = exp(mean loss): how many tokens the model was, on average, choosing
between. Guess first: which sentence is more likely, and by how much?

*Try this:* "The cat sat on the mat." against "The cat sat on the hat.": which token makes the
difference?"""
LENS_EXPLAINER = """**The logit lens: stop the model after any layer and ask what it would predict.** Each layer's
hidden state goes through the model's own final norm and output head. Watch the answer appear, and where.
A causal LM is read at the end of the prompt; a masked LM at the first [MASK].

*Try this:* "The capital of France is", then "The capital of Germany is": does the answer appear at
the same layer?"""
TREE_EXPLAINER = """**Beam search keeps the B best partial texts at every step.** Blue: kept beams; grey: candidates
it weighed and pruned; green stars: finished; orange: the path greedy decoding takes. The scores at the end
are those `generate()` reports (log-probability / length).

*Try this:* 2 beams, then 8: does the best beam change? Does it ever leave the greedy path?"""
HOW_MUCH = ["about the same (under 10×)", "10× to 1,000×", "more than 1,000×"]


def how_much(log_ratio: float) -> str:
    """The guess's bucket for a likelihood ratio given as its natural log (a ratio can overflow)."""
    digits = log_ratio / math.log(10)
    return HOW_MUCH[0] if digits < 1 else HOW_MUCH[1] if digits <= 3 else HOW_MUCH[2]


def on_score(model_name, text_a, text_b, guess, guess_size):
    loaded = models.load(model_name, "causal")
    a, b = inside.score(loaded, text_a), inside.score(loaded, text_b)
    rows = "\n".join(f"| {name} | {len(s.tokens)} | {s.total_logprob:.2f} | "
                     f"{inside_plots.exp_readable(s.total_logprob)} | {s.mean_loss:.3f} | **{s.perplexity:,.1f}** |"
                     for name, s in (("A", a), ("B", b)))
    likelier, log_ratio = ("A", a.total_logprob - b.total_logprob) if a.total_logprob >= b.total_logprob else \
        ("B", b.total_logprob - a.total_logprob)
    size = how_much(log_ratio)
    right = guess == likelier and guess_size == size
    guessed = f"❌ You guessed {ui.md(guess)}, {ui.md(guess_size or '?')}. "
    verdict = "" if not guess else "✅ Right. " if right else guessed
    summary = ("| sentence | tokens | log P(sentence) | P(sentence) | mean loss | perplexity |\n"
               f"|---|---|---|---|---|---|\n{rows}\n\n{verdict}**{likelier}** is "
               f"{inside_plots.exp_readable(log_ratio)} times more "
               f"likely ({size}). Both were scored in one forward pass each: every position at once, as in "
               "training.")
    return summary, inside_plots.surprise_figure([("A", a), ("B", b)]), {"a": a.to_json(), "b": b.to_json()}


def on_lens(model_name, text, top_k):
    lens = inside.logit_lens(models.load(model_name, "causal", "masked"), text, top_k)
    first = len(lens.layers) - 1
    while first > 0 and lens.layers[first - 1].final_token_rank == 1:  # the layer from which it stays on top
        first -= 1
    summary = (f"The final answer **{ui.md(lens.final_token)}** (p = {lens.layers[-1].final_token_prob:.3f}) "
               f"is the top guess from layer **{first}** of {len(lens.layers) - 1} on; at layer 0 it ranks "
               f"{lens.layers[0].final_token_rank:,}.")
    return summary, inside_plots.lens_grid(lens), inside_plots.lens_curve(lens), lens.to_json()


def on_tree(model_name, prompt, num_beams, max_new):
    tree = beam_tree.beam_tree(models.load(model_name, "causal"), prompt, num_beams, max_new)
    rows = pd.DataFrame([[i + 1, round(b.score, 4), b.text] for i, b in enumerate(tree.beams)], columns=BEAM_HEADERS)
    note = f"Greedy (orange): “{ui.md(tree.greedy_text)}”. Length penalty {tree.length_penalty:g}."
    return inside_plots.tree_figure(tree), rows, note, tree.to_json()


def build() -> SimpleNamespace:
    with gr.Accordion("Score a sentence: the chain rule and perplexity", open=False):
        ui.explainer(SCORE_EXPLAINER)
        with gr.Row():
            text_a = gr.Textbox(inside.SCORE_EXAMPLE, label="Sentence A", max_length=MAX_CHARS)
            text_b = gr.Textbox(inside.SCRAMBLED_EXAMPLE, label="Sentence B", max_length=MAX_CHARS)
        with gr.Row():
            guess = gr.Radio(["A", "B"], label="Your guess: more likely", value=None)
            guess_size = gr.Radio(HOW_MUCH, label="…by how much", value=None)
            score = gr.Button("Score both", variant="primary")
        score_outputs = [gr.Markdown(), gr.Plot(), ui.result_json()]
    with gr.Accordion("Layer by layer: watch the guess form (logit lens)", open=False) as lens_box:
        ui.explainer(LENS_EXPLAINER)
        with gr.Row():
            lens_text = gr.Textbox(inside.LENS_EXAMPLE, label="Text (a masked LM needs a [MASK])", scale=3,
                                   max_length=MAX_CHARS)
            lens_model = ui.model_dropdown("causal", "masked", label="Model")
            lens_k = gr.Slider(*inside.LENS_TOP_K, value=5, step=1, label="Top-k per layer")
        lens_run = gr.Button("Look inside", variant="primary")
        lens_md = gr.Markdown()
        with gr.Row():
            lens_grid, lens_curve = gr.Plot(), gr.Plot()
        lens_outputs = [lens_md, lens_grid, lens_curve, ui.result_json()]
    with gr.Accordion("Beam search as a tree", open=False) as tree_box:
        ui.explainer(TREE_EXPLAINER)
        with gr.Row():
            tree_prompt = gr.Textbox(beam_tree.EXAMPLE, label="Prompt", scale=3, max_length=MAX_CHARS)
            tree_beams = gr.Slider(*beam_tree.BEAMS_RANGE, value=3, step=1, label="Beams")
            tree_new = gr.Slider(*beam_tree.NEW_TOKENS_RANGE, value=5, step=1, label="New tokens")
        tree_run = gr.Button("Draw the tree", variant="primary")
        tree_plot, tree_note = gr.Plot(), gr.Markdown()
        tree_table, tree_json = ui.table(BEAM_HEADERS, "Final beams, as generate() scores them"), ui.result_json()
    return SimpleNamespace(score=score, score_inputs=[text_a, text_b, guess, guess_size], score_outputs=score_outputs,
                           lens_box=lens_box, lens_run=lens_run, lens_text=lens_text,
                           lens_inputs=[lens_model, lens_text, lens_k], lens_outputs=lens_outputs,
                           tree_box=tree_box, tree_run=tree_run, tree_inputs=[tree_prompt, tree_beams, tree_new],
                           tree_outputs=[tree_plot, tree_table, tree_note, tree_json])


def wire(box: SimpleNamespace, model: gr.Dropdown) -> None:
    # Not run on opening: the student guesses before the scores are revealed.
    ui.wire(box.score.click, on_score, [model, *box.score_inputs], box.score_outputs)
    ui.wire([box.lens_run.click, box.lens_box.expand, box.lens_text.submit], on_lens, box.lens_inputs,
            box.lens_outputs)
    ui.wire([box.tree_run.click, box.tree_box.expand], on_tree, [model, *box.tree_inputs], box.tree_outputs,
            concurrency_id="generate")
