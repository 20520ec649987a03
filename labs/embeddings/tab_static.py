"""Embeddings, panel "Static embeddings": word2vec's king − man + woman on the model's own input embedding
rows, the expected answer's rank, and "bank": one row, two contextual vectors."""

from __future__ import annotations

import gradio as gr

from labs.core.ui import plots, ui
from labs.core.ui.build import Build
from labs.embeddings import compute, static

HEADING = "## Static embeddings: king − man + woman on this model's embedding matrix"
COURSE = (f"**Textbook 20.1.1, about word2vec** (a claim about word2vec's vectors, not this model's):\n\n"
          f"> {static.QUOTE_ANALOGY}\n>\n> {static.QUOTE_FORMULA}\n>\n> {static.QUOTE_STATIC}\n\n"
          "Below, the same arithmetic on the rows of this model's input embedding matrix "
          "(`model.get_input_embeddings().weight`): one row per token, before any context. Each word must be one "
          "token; the three words are left out of the neighbours, as in word2vec's own evaluation.")


def summary(r: static.Analogy) -> str:
    a, b, c = (ui.md(w) for w in r.words)
    best = r.neighbours[0]
    lines = [(f"On **{ui.md(r.model)}**'s embedding matrix ({r.rows:,} rows × {r.dims} numbers), the row nearest to "
             f"**{a} − {b} + {c}** is **{ui.md(best.token)}** (cosine {best.cosine:.3f}), among {r.candidates:,} "
             "rows (the three input words left out, as word2vec's evaluation does).")]
    if r.expected_rank is not None:
        e = ui.md(r.expected)
        lines.append(f"“{e}” ranks **{r.expected_rank:,}** (cosine {r.expected_cosine:.3f}). Without the arithmetic, "
                     f"among {a}'s own nearest rows, it ranks {r.rank_without_arithmetic:,}: "
                     + ("the arithmetic moved it up." if r.expected_rank < r.rank_without_arithmetic else
                        "the arithmetic did not move it up."))
    return " ".join(lines)


def neighbours_figure(r: static.Analogy):
    colours = [plots.ORANGE if n.token_id == r.expected_token_id else plots.BLUE for n in r.neighbours]
    title = plots.safe(f"Rows nearest to {' − '.join(r.words[:2])} + {r.words[2]} (cosine)")
    return plots.bar_chart([n.token for n in r.neighbours], [round(n.cosine, 3) for n in r.neighbours], title=title,
                           colors=colours, x_title="cosine similarity with a − b + c")


def bank_line(o: static.OneRowTwoVectors) -> str:
    first, second = (ui.md(s) for s in o.sentences)
    rows = ", ".join(str(i) for i in o.token_ids)
    return (f"**One row, two vectors.** In “{first}” and “{second}” (the textbook's 20.1.2 sentences), "
            f"“{ui.md(o.word)}” is row {rows} of the embedding matrix in both: cosine {o.static_cosine:.3f}, the "
            f"static view. After {o.num_layers} layers of context, {ui.md(o.model)} gives it two vectors with cosine "
            f"**{o.contextual_cosine:.3f}**. See the sentences above for every layer.")


def on_analogy(a, b, c, expected, model, top_k):
    loaded = compute.check_model(model)  # once per click
    r = static.analogy(loaded, a, b, c, expected, top_k)
    return summary(r), neighbours_figure(r), bank_line(static.one_row_two_vectors(loaded)), r.to_json()


def build(ctx: Build) -> dict:
    gr.Markdown(HEADING)
    gr.Markdown(COURSE)
    a_, b_, c_, e_ = static.EXAMPLE
    with gr.Row():
        a = gr.Textbox(a_, label="Word A", max_length=40)
        b = gr.Textbox(b_, label="− word B", max_length=40)
        c = gr.Textbox(c_, label="+ word C", max_length=40)
        expected = gr.Textbox(e_, label="≈ expected answer (shows its rank)", max_length=40)
    with gr.Row():
        model = ui.model_dropdown(*compute.FAMILIES, label="Model (its input embedding matrix)", family_order=True)
        top_k = gr.Slider(1, static.MAX_TOP_K, value=static.TOP_K, step=1, label="Nearest rows shown")
        button = gr.Button("Find the nearest rows", variant="primary")
    gr.Examples([list(e) for e in static.EXAMPLES], inputs=[a, b, c, expected], label="More analogies")
    found = gr.Markdown()
    with gr.Row():
        chart = gr.Plot(label="The nearest rows", scale=3)
        bank = gr.Markdown(scale=2)
    result = ui.result_json()
    ctx.link(__name__, a=a, b=b, c=c, expected=expected, analogy_model=model, top_k=top_k)
    inputs, outputs = [a, b, c, expected, model, top_k], [found, chart, bank, result]
    ui.wire([button.click, a.submit, b.submit, c.submit, expected.submit], on_analogy, inputs, outputs)
    ctx.on_load(on_analogy, inputs, outputs)
    return {"a": a, "model": model}
