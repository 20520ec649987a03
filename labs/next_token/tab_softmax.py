"""Next token, softmax and temperature by hand (exercise B2): a calculator for exp(z / T) / sum, and
a check of the student's own answer."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr
import pandas as pd

from labs.core.errors import BadInput
from labs.core.ui import ui
from labs.core.ui.build import Build
from labs.next_token import compute
from labs.next_token.compute import B2_LOGITS, B2_WORDS


def calc_inputs(table: pd.DataFrame, t) -> tuple[list[str], list[float], float]:
    try:
        return ([str(w) for w in table["word"].tolist()], [float(v) for v in table["logit"].tolist()], float(t))
    except (TypeError, ValueError):
        raise BadInput("Every logit and the temperature must be a number.") from None


def on_calc(table, t):
    words, logits, t = calc_inputs(table, t)
    r = compute.softmax_by_hand(logits, t)
    rows = "\n".join(f"| {ui.md(w)} | {z:g} | {z / t:.4f} | {e:.4f} | **{pr:.4f}** |"
                     for w, z, e, pr in zip(words, logits, r["exp"], r["probs"]))
    return (f"| word | logit z | z / T | exp(z / T) | probability |\n|---|---|---|---|---|\n{rows}\n\n"
            f"Sum of exps = **{r['sum']:.4f}**; each probability = exp(z / T) / sum.")


def on_answer(table, t, word, answer):
    words, logits, t = calc_inputs(table, t)
    if word not in words or answer is None:
        raise BadInput("Pick a word from the table and type your probability.")
    right = compute.softmax_by_hand(logits, t)["probs"][words.index(word)]
    if round(float(answer), 3) == round(right, 3):
        return f"✅ Right: P({ui.md(word)}) = {right:.3f}."
    return f"❌ Not quite: P({ui.md(word)}) is not {float(answer):.3f}. Divide exp(z / T) by the sum of all four."


def build() -> SimpleNamespace:
    with gr.Accordion("Softmax and temperature by hand (exercise B2)", open=False):
        gr.Markdown("Context: *The cat* → which word next? Edit the logits and the temperature.")
        table = gr.Dataframe(pd.DataFrame({"word": B2_WORDS, "logit": B2_LOGITS}), interactive=True,
                             label="Words and logits", column_count=2)
        t = gr.Number(1.0, label="Temperature T")
        run = gr.Button("Compute")
        out = gr.Markdown()
        with gr.Row():
            word = gr.Dropdown(B2_WORDS, value="sat", label="Word")
            answer = gr.Number(None, label="Your probability (3 decimals)")
            check = gr.Button("Check")
        verdict = gr.Markdown()
    return SimpleNamespace(table=table, t=t, run=run, out=out, word=word, answer=answer, check=check, verdict=verdict)


def wire(ctx: Build, calc: SimpleNamespace) -> None:
    ui.wire(calc.run.click, on_calc, [calc.table, calc.t], calc.out)
    ctx.on_load(on_calc, [calc.table, calc.t], calc.out)
    ui.wire(calc.check.click, on_answer, [calc.table, calc.t, calc.word, calc.answer], calc.verdict)
