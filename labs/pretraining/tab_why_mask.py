"""Pre-training, panel 5: why 80 / 10 / 10? The same chosen tokens shown to a trained masked LM as
[MASK], as a random token, or kept; and the other tokens of a text with no [MASK], as at fine-tuning."""

from __future__ import annotations

import gradio as gr
import pandas as pd

from labs.core.errors import MAX_CHARS
from labs.core.models import models
from labs.core.ui import ui
from labs.core.ui.build import Build
from labs.pretraining import why_80_10_10 as why
from labs.pretraining.tab_examples import CHOSEN, KEPT, WORD, grid

HEADERS = ["what the model sees at the scored positions", "positions", "top-1 = original", "MLM loss (−log P)"]
WIDTH = 40  # positions of the example shown
INTRO = ("BERT's 15 % of tokens, chosen as DataCollatorForLanguageModeling chooses them (seeded), are shown to the "
         "masked LM in three ways: as [MASK], as a random token, or kept. Only what the model sees at those positions "
         "changes. Last row: the other tokens of the same text with no [MASK] anywhere, as at fine-tuning.")


def condition_rows(result: dict) -> pd.DataFrame:
    def pct(x):
        return "not measured here" if x is None else f"{x:.1%}"

    def loss(x):
        return "not measured here" if x is None else round(x, 3)

    rows = []
    for c in result["conditions"]:
        what = c["label"]
        if c.get("copies_input") is not None:
            what += f" (top-1 = the random token: {c['copies_input']:.0%})"
        rows.append([what, c["positions"], pct(c["accuracy"]), loss(c["loss"])])
    return pd.DataFrame(rows, columns=HEADERS)


def example_html(result: dict) -> str:
    ex = result["example"]
    n = min(len(ex["ids"]), WIDTH)
    chosen = set(ex["positions"])
    mark = [CHOSEN if i in chosen else WORD for i in range(n)]
    rows = [("original", ex["tokens"][:n], [WORD] * n)]
    guesses = {k: ex["top1"].get(k) for k in ("mask", "random", "keep", "no_mask")}
    for kind, name in (("mask", "shown as [MASK]"), ("random", "random token shown")):
        rows.append((name, ex["inputs"][kind][:n], mark))
        if guesses[kind]:
            rows.append(("→ top-1", guesses[kind][:n], verdicts(guesses[kind], ex["tokens"], n)))
    rows.append(("kept, no [MASK]", ex["inputs"]["keep"][:n], mark))
    if guesses["keep"]:
        merged = [a or b for a, b in zip(guesses["keep"], guesses["no_mask"])]
        rows.append(("→ top-1", merged[:n], verdicts(merged, ex["tokens"], n)))
    shown = f"its first {n} of {len(ex['ids'])} tokens" if n < len(ex["ids"]) else "every token"
    return (f'<p style="margin:6px 0">The first text, {shown}: chosen positions in red; a top-1 in green is the '
            f"original token.</p>{grid(rows)}")


def verdicts(guess: list[str], tokens: list[str], n: int) -> list[str]:
    return [WORD if not g else KEPT if g == t else CHOSEN for g, t in zip(guess[:n], tokens[:n])]


def why_markdown(result: dict) -> str:
    notes = "".join(f"{ui.notice(n)}\n\n" for n in result["notes"] if n != why.NEEDS_BERT)  # shown above the inputs
    notes += "" if result["measured"] else "Loss and accuracy: **not measured here** (no masked LM). "
    model = f"Model: **{ui.md(result['model'])}**. " if result["model"] else ""
    quotes = "\n\n".join(f"> “{ui.md(c['quote'])}” ({ui.md(c['where'])})" for c in result["course"])
    return (f"{notes}{model}Text: {ui.md(result['source'])}, {result['tokens']} tokens, {result['chosen']} chosen "
            f"(seed {result['seed']}).\n\n**Why not always [MASK]?** {ui.md(result['why'])}\n\n"
            f"**The course says:**\n\n{quotes}")


def on_why(text, model_name, seed):
    if not model_name and not models.choice_names("masked"):
        result = why.measure(None, text, seed, models.load_tokenizer(models.MINILM_NAME)).to_json()
    else:
        result = why.measure(models.load(model_name, "masked"), text, seed).to_json()  # once per click
    return condition_rows(result), example_html(result), why_markdown(result), result


def build(ctx: Build) -> dict:
    gr.Markdown(f"## 5. Why 80 / 10 / 10?\n{INTRO}")
    if not models.choice_names("masked"):
        gr.Markdown(ui.notice(why.NEEDS_BERT))
    with gr.Row():
        text = gr.Textbox("", label="Your paragraph (optional; empty: the built-in passages)", lines=2, scale=3,
                          max_length=MAX_CHARS)
        model = ui.model_dropdown("masked", label="Masked LM")
        seed = gr.Number(0, label="Seed (which tokens are chosen)", precision=0, minimum=0)
    button = gr.Button("Measure the four conditions", variant="primary")
    table = ui.table(HEADERS, "Loss and accuracy at the same positions")
    example = gr.HTML()
    explained = gr.Markdown()
    result = ui.result_json()
    ui.wire([button.click, text.submit], on_why, [text, model, seed], [table, example, explained, result])
    ctx.on_load(on_why, [text, model, seed], [table, example, explained, result])
    return {"why_text": text, "why_model": model, "why_seed": seed}
