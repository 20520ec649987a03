"""Tokens, panel "A model needs its own tokenizer": ids from tokenizer A read with tokenizer B (and by B's
model), the lecture's pitfall 6."""

from __future__ import annotations

import gradio as gr
import pandas as pd

from labs.core.ui import course_quotes, ui
from labs.core.ui.build import Build
from labs.tokens import compute, mismatch

HEADING = "Pitfall: a model needs its own tokenizer (the lecture's pitfall 6)"
HEADERS = ["id", "piece for tokenizer A (encoded)", "piece for tokenizer B (read)"]


def ids(n: int) -> str:
    return f"{n} id" + ("" if n == 1 else "s")


def course_text() -> str:
    title = course_quotes.get("pitfall_title")
    lines = "\n> ".join(course_quotes.text(i) for i in ("pitfall_title", "pitfall_match", "pitfall_solution"))
    return (f"**{title.cite}:**\n\n> {lines}\n\n"
            "An id is a row number in one vocabulary. Encode your text with tokenizer A, then read the same ids "
            "with tokenizer B, as a model given the wrong tokenizer's ids would.")


def reading_text(r: mismatch.Mismatch) -> str:
    if r.reading is None:
        return ui.md(r.reading_note)
    m = r.reading
    own = "—" if m.perplexity_own is None else f"{m.perplexity_own:,.1f}"
    foreign = "—" if m.perplexity_foreign is None else f"{m.perplexity_foreign:,.1f}"
    left = f" ({ids(m.left_out)} past its vocabulary left out)" if m.left_out else ""
    return (f"**{ui.md(m.model)} reading the text:** perplexity **{own}** on its own {m.own_tokens} ids, "
            f"**{foreign}** on tokenizer A's {m.foreign_tokens} ids{left}. Perplexity is exp(the mean loss on each "
            "next token): how surprised the model is; the same text, only the ids differ.")


def summary(r: mismatch.Mismatch) -> str:
    if r.encode_with == r.read_with:
        verdict = "Same tokenizer both ways: B reads its own ids."
    else:
        past = f" ({ids(r.past_vocabulary)} past B's vocabulary: B drops them)" if r.past_vocabulary else ""
        verdict = f"B reads A's {len(r.ids)} ids as:{past}\n\n> {ui.md(r.garbled) or '(nothing)'}"
    return (f"**A: {ui.md(r.encode_with)} → B: {ui.md(r.read_with)}.** {verdict}\n\n"
            f"B's own ids of the text decode to: {ui.md(r.own_decoded)}")


def on_mismatch(text, encode_with, read_with):
    r = mismatch.tokenizer_mismatch(text, encode_with, read_with)
    table = pd.DataFrame([[i, a, "(past B's vocabulary)" if b is None else b]
                          for i, a, b in zip(r.ids, r.encoded_pieces, r.read_pieces)], columns=HEADERS)
    return summary(r), reading_text(r), table, r.to_json()


def build(ctx: Build) -> None:
    names = compute.check_models(None)
    with gr.Accordion(HEADING, open=True, elem_id="tok-mismatch-panel"):
        gr.Markdown(course_text())
        with gr.Row():
            text = gr.Textbox(mismatch.EXAMPLE, label="Text to encode with A", scale=3, max_lines=3,
                              max_length=mismatch.MAX_CHARS)
            with gr.Column(scale=2):
                encode_with = gr.Dropdown(names, value=mismatch.ENCODE_DEFAULT if mismatch.ENCODE_DEFAULT in names
                                          else names[0], label="A: encode with")
                read_with = gr.Dropdown(names, value=mismatch.READ_DEFAULT if mismatch.READ_DEFAULT in names
                                        else names[-1], label="B: read the ids with")
                button = gr.Button("Read A's ids with B", variant="primary")
        found = gr.Markdown(elem_id="tok-mismatch")
        reading = gr.Markdown()
        table = ui.table(HEADERS, "Each id, in both vocabularies")
        result = ui.result_json()
        ctx.link(__name__, mismatch_text=text, mismatch_encode=encode_with, mismatch_read=read_with)
    inputs, outputs = [text, encode_with, read_with], [found, reading, table, result]
    ui.wire([button.click, text.submit, encode_with.change, read_with.change], on_mismatch, inputs, outputs)
    ctx.on_load(on_mismatch, inputs, outputs)
