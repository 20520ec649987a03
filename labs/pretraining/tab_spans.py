"""Pre-training, panel 3: T5 fills its own blanks (span corruption), sentinel by sentinel, beside the
spans that were removed and BERT's one-token blanks at the same places."""

from __future__ import annotations

import gradio as gr
import pandas as pd

from labs.core.errors import MAX_CHARS
from labs.core.models import models
from labs.core.ui import ui
from labs.core.ui.build import Build
from labs.pretraining import span_corruption
from labs.pretraining.tab_examples import SENTINEL, SPECIAL, WORD, chips

NEEDS_T5 = ("T5 filling its blanks needs t5-small (an encoder-decoder pre-trained by span corruption), which is not "
            "available here. While online, run `./lab download` once. Section 1 still shows how the "
            "example is built.")
HEADERS = ["sentinel", "removed span (the target)", "T5 wrote", "BERT's one-token blanks"]


def colours(tokens: list[str]) -> list[str]:
    return [SENTINEL if t.startswith("<extra_id_") else SPECIAL if t == "</s>" else WORD for t in tokens]


def fill_rows(result: dict) -> pd.DataFrame:
    return pd.DataFrame([[f["sentinel"], f["original"], f["predicted"] if f["predicted"] is not None else
                          "(T5 did not write this sentinel)", f["bert"] if f["bert"] is not None else "(no BERT here)"]
                         for f in result["filled"]], columns=HEADERS)


def fill_html(result: dict) -> str:
    bert = (f"BERT ({ui.esc(result['bert_model'])}) gets one [MASK] per missing token: it is told the length, "
            "T5 is not." if result["bert_model"] else "No masked LM here, so BERT's column is empty.")
    return (f'<p style="font-size:1.1em"><b>Input to T5</b> ({ui.esc(result["model"])})</p>'
            f'{chips(result["input_tokens"], colours(result["input_tokens"]))}'
            f'<p style="font-size:1.1em"><b>Target</b> (what T5 is trained to write)</p>'
            f'{chips(result["target_tokens"], colours(result["target_tokens"]))}<p>{bert}</p>')


def on_fill(text, model_name, density, span, seed):
    if not model_name and not models.choice_names("seq2seq"):
        raise models.ModelUnavailable(NEEDS_T5)
    t5 = models.load(model_name, "seq2seq")  # once per click
    result = span_corruption.fill(t5, span_corruption.default_masked(), text, density, span, seed).to_json()
    return fill_html(result), fill_rows(result), result


def build(ctx: Build) -> dict:
    gr.Markdown("## 3. T5 fills its own blanks")
    names = models.choice_names("seq2seq")
    if not names:
        gr.Markdown(ui.notice(NEEDS_T5))
    with gr.Row():
        text = gr.Textbox(span_corruption.EXAMPLE, label="Text to corrupt", lines=2, scale=3, max_length=MAX_CHARS)
        model = ui.model_dropdown("seq2seq", label="T5 (encoder-decoder)")
    with gr.Row():
        density = gr.Slider(0.05, 0.5, value=0.15, step=0.05, label="Noise density (T5: 0.15)")
        span = gr.Slider(1, 10, value=3, step=1, label="Mean span length (T5: 3)")
        seed = gr.Number(0, label="Seed", precision=0, minimum=0)
    button = gr.Button("Corrupt and let T5 fill it", variant="primary")
    out = gr.HTML()
    table = ui.table(HEADERS, "Sentinel by sentinel")
    result = ui.result_json()
    inputs = [text, model, density, span, seed]
    ui.wire([button.click, text.submit], on_fill, inputs, [out, table, result])
    if names:
        ctx.on_load(on_fill, inputs, [out, table, result])
    return {"span_text": text, "seq2seq_fill": model, "noise_density": density, "mean_span_length": span}
