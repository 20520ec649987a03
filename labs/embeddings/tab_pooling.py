"""Embeddings, panel "Sentence vectors": [CLS] vs mean vs max pooling, each one's cosine similarities side
by side, and how often each finds a sentence's paraphrase."""

from __future__ import annotations

import gradio as gr
import numpy as np

from labs.core.errors import MAX_CHARS
from labs.core.models import models
from labs.core.ui import plots, ui
from labs.core.ui.build import Build
from labs.embeddings import pooling

HEADING = "## One vector per sentence: [CLS], mean or max pooling?"
COURSE = (f"**Textbook 20.8.3:**\n\n> {pooling.QUOTE_TEXTBOOK}\n\n"
          f"**Lecture, Week 6, slide “{pooling.LECTURE_SLIDE}”:**\n\n"
          f"> {pooling.QUOTE_LECTURE}\n\nBelow, each sentence's last-layer token vectors are pooled three ways "
          "([CLS] = the first token's vector; mean and max over every token of the sentence, [CLS] and [SEP] "
          "included, padding never). Sentences with the same `| label` are paraphrases: is each one's nearest "
          "other sentence its paraphrase? The unlabelled ones are distractors that share words, not meaning.")
TRAINED = {"cls": "the [CLS] token", "mean": "mean pooling", "max": "max pooling"}
SHORT = {"cls": "[CLS]", "mean": "mean", "max": "max"}


def labels(r: pooling.Pooled) -> list[str]:
    return [f"{i + 1}" + (f" {label}" if label else "") for i, (_, label) in enumerate(r.sentences)]


def heatmap(r: pooling.Pooled, p: str, colour_bar: bool):
    """Three of these stand side by side: no numbers in the cells (hover shows them), sentence numbers
    across, one colour bar (the three share the scale 0 to 1)."""
    numbers = [str(i + 1) for i in range(len(r.sentences))]
    fig = plots.heatmap(np.round(r.similarity(p), 3), numbers, labels(r), zmin=0, zmax=1,
                        title=plots.safe(pooling.POOLING_NAMES[p]), x_title="sentence", y_title="sentence",
                        height=480)
    fig.update_traces(showscale=colour_bar)
    fig.update_xaxes(tickangle=0)
    return fig


def trained_note(r: pooling.Pooled) -> str:
    if r.trained_pooling is None:
        return (f"{ui.md(r.model)} ships no sentence-transformers pooling config (`1_Pooling/config.json`), so "
                "which pooling it suits is not written down: the scores above are the only evidence.")
    names = " and ".join(TRAINED.get(p, p) for p in r.trained_pooling.split("+"))
    return (f"{ui.md(r.model)} was trained as a sentence encoder with **{names}**: its sentence-transformers "
            "config (`1_Pooling/config.json`) says so. A pooling it was not trained with still gives a vector, "
            "but the training never asked that vector to place paraphrases together.")


def scores(r: pooling.Pooled) -> str:
    rows = []
    for p in pooling.POOLINGS:
        t = r.retrieval(p)
        hits = sum(rank == 1 for rank in t.ranks)
        trained = " (trained with)" if r.trained_pooling and p in r.trained_pooling.split("+") else ""
        rows.append(f"| {pooling.POOLING_NAMES[p]}{trained} | {hits} of {len(t.ranks)} ({t.accuracy:.0%}) | "
                    f"{t.mrr:.3f} |")
    return ("| Pooling | Paraphrase is the nearest other sentence | Mean reciprocal rank |\n|---|---|---|\n"
            + "\n".join(rows) + "\n\n" + trained_note(r))


def nearest_rows(r: pooling.Pooled) -> list[list[str]]:
    """Per query sentence: its text, then each pooling's nearest other sentence (✓ when a paraphrase)."""
    found = {p: r.retrieval(p) for p in pooling.POOLINGS}
    rows = []
    for k, i in enumerate(found["mean"].queries):
        cells = [f"{i + 1}. {r.sentences[i][0]}"]
        for p in pooling.POOLINGS:
            j = found[p].nearest[k]
            cells.append(f"{'✓' if found[p].ranks[k] == 1 else '✗'} {j + 1}. {r.sentences[j][0]}")
        rows.append(cells)
    return rows


def on_pooling(sentences, model):
    r = pooling.run(models.load(model, *pooling.FAMILIES), sentences)  # the model resolved once per click
    return (scores(r), *(heatmap(r, p, p == pooling.POOLINGS[-1]) for p in pooling.POOLINGS), nearest_rows(r),
            r.to_json())


def build(ctx: Build) -> dict:
    gr.Markdown(HEADING)
    gr.Markdown(COURSE)
    with gr.Row():
        sentences = gr.Textbox(pooling.EXAMPLE, label="Sentences, one per line (two paraphrases end with the same | label)",
                               lines=8, max_lines=16, max_length=MAX_CHARS, scale=3)
        with gr.Column(scale=2):
            model = ui.model_dropdown(*pooling.FAMILIES, label="Encoder (reads the whole sentence)")
            button = gr.Button("Pool and compare", variant="primary")
    found = gr.Markdown()
    with gr.Row():
        plots_ = [gr.Plot(label=f"Cosine similarity, {SHORT[p]} pooling", min_width=300) for p in pooling.POOLINGS]
    table = ui.table(["Sentence"] + [f"Nearest by {SHORT[p]}" for p in pooling.POOLINGS],
                     label="Each sentence's nearest other sentence (✓ its paraphrase)", wrap=True,
                     column_widths=["28%", "24%", "24%", "24%"])
    result = ui.result_json()
    ctx.link(__name__, pool_sentences=sentences, pool_model=model)
    outputs = [found, *plots_, table, result]
    ui.wire([button.click, sentences.submit], on_pooling, [sentences, model], outputs)
    ctx.on_load(on_pooling, [sentences, model], outputs)
    return {"sentences": sentences, "model": model}
