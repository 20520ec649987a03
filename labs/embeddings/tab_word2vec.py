"""Embeddings, panel "word2vec and GloVe trained live": CBOW, skip-gram and GloVe trained on one small corpus, a
word's nearest neighbours in each beside the contextual model's input-embedding rows, a − b + c, and "one word, one
vector, whatever the sentence"."""

from __future__ import annotations

import gradio as gr
import plotly.graph_objects as go

from labs.core.ui import course_quotes, plots, ui
from labs.core.ui.build import Build
from labs.embeddings import word2vec_glove as wg
from labs.embeddings import word_corpus

HEADING = "word2vec and GloVe trained live: one word, one vector"
NEIGHBOUR_HEADERS = ["#"] + list(wg.STATIC_NAMES) + ["contextual model's input rows"]
ANALOGY_HEADERS = ["model", "a − b + c", "nearest words (cosine)", "expected", "its rank"]


def course_text() -> str:
    cbow, skip, glove, objective = (course_quotes.get(f"w2v_{k}") for k in ("cbow", "skipgram", "glove", "objective"))
    limit = course_quotes.get("static_static")  # the same sentence the analogy panel quotes
    return (
        f"**{cbow.cite}:**\n\n> {cbow.text}\n> {skip.text}\n>\n> {glove.text}\n>\n> {objective.text}\n>\n> …\n>\n"
        f"> {limit.text}\n\n"
        f"**What you see here (LM Lab's own experiment).** Three static models trained on the spot on one small corpus: "
        f"{word_corpus.CREDIT}, lower-cased words (gensim's `simple_preprocess`). word2vec is gensim's `Word2Vec` "
        f"(CBOW: `sg=0`; skip-gram: `sg=1`; {wg.VECTOR_SIZE} numbers per word, window {wg.WINDOW}, words seen at least "
        f"{wg.MIN_COUNT} times, {wg.W2V_EPOCHS} epochs, one worker, seed {wg.SEED}). GloVe is the objective above "
        f"written out in numpy: X_ij counts word j within {wg.WINDOW} words of word i, a pair d words apart adding 1/d; "
        f"f(x) = min(1, (x/{wg.X_MAX:g})^{wg.ALPHA}); AdaGrad as in the GloVe paper (here on the whole sum each step, "
        f"{wg.GLOVE_EPOCHS} steps, rate {wg.GLOVE_LR}); each word's vector is w + w̃. A corpus of ~60k words is tiny "
        "(word2vec was trained on billions): expect topical neighbours (“bank” → “west”, “gaza”: the news of 2001), "
        "not clean synonyms, and king − man + woman to miss. The first click trains all three (about half a minute), "
        "then they are cached.")


def neighbour_rows(r: wg.Word2VecResult) -> list[list]:
    columns = [r.neighbours[n] for n in wg.STATIC_NAMES] + [r.contextual_neighbours]
    depth = max(len(c) for c in columns)
    return [[i + 1] + [f"{c[i][0]} ({c[i][1]:.3f})" if i < len(c) else "" for c in columns] for i in range(depth)]


def analogy_rows(r: wg.Word2VecResult) -> list[list]:
    rows = []
    for a in r.analogies:
        found = (", ".join(f"{w} ({s:.3f})" for w, s in a.neighbours[:5]) if a.neighbours else
                 "not in the corpus's vocabulary: " + ", ".join(a.missing))
        rank = "—" if a.expected_rank is None else a.expected_rank
        rows.append([a.model, " − ".join(a.words[:2]) + " + " + a.words[2], found, a.expected or "—", rank])
    return rows


def summary(r: wg.Word2VecResult) -> str:
    word = ui.md(r.word)
    lines = [f"Trained on **{r.words:,} words** ({r.documents} documents; {r.vocabulary:,} words seen at least "
             f"{wg.MIN_COUNT} times). GloVe's loss J fell from {r.glove_losses[0]:,.0f} to **{r.glove_losses[-1]:,.0f}** "
             f"over {len(r.glove_losses) - 1} AdaGrad steps ({r.glove_nonzero:,} nonzero counts)."]
    if not any(r.neighbours.values()):
        lines.append(f"“{word}” is **not in the corpus's vocabulary** (seen {r.counts} time(s); a word needs "
                     f"{wg.MIN_COUNT}): none of the three static models has a vector for it. That is a static model's "
                     "other limit: a word it never saw has no row at all.")
    else:
        lines.append(f"“{word}” is seen {r.counts:,} times in the corpus.")
    if r.contextual_note:
        lines.append(f"Contextual model: {ui.md(r.contextual_note)}")
    return "\n\n".join(lines)


def one_vector_text(r: wg.Word2VecResult) -> str:
    o = r.one_vector
    first, second = (ui.md(s) for s in o["sentences"])
    rows = "; ".join(f"{ui.md(n)}: row {v['row']} in both (cosine {v['cosine']:.3f})" for n, v in o["static"].items())
    c = o["contextual"]
    contextual = (f"**{ui.md(c['model'])}** gives it two vectors, cosine **{c['cosine_last_layer']:.3f}** at its last "
                  f"layer ({c['layers']} layers of context), though its own input row is one (cosine "
                  f"{c['static_row_cosine']:.3f})." if "note" not in c else ui.md(c["note"]))
    return (f"**One word, one vector, whatever the sentence.** In “{first}” and “{second}” (Textbook 20.1.2's "
            f"sentences), “{ui.md(o['word'])}” is a lookup in a static model: {rows}. The sentence is never read. "
            f"{contextual}")


def loss_figure(r: wg.Word2VecResult):
    steps = list(range(len(r.glove_losses)))
    fig = go.Figure(go.Scatter(x=steps, y=r.glove_losses, line=dict(color=plots.BLUE, width=4),
                                           name="J"))
    plots.style(fig, "GloVe's loss J while it trains (AdaGrad)", 320)
    fig.update_xaxes(title="AdaGrad step (each on the whole sum)")
    fig.update_yaxes(title="J", type="log")
    return fig


def on_word2vec(word, a, b, c, expected):
    r = wg.word2vec(word, a, b, c, expected)
    return summary(r), neighbour_rows(r), analogy_rows(r), one_vector_text(r), loss_figure(r), r.to_json()


def build(ctx: Build) -> None:
    with gr.Accordion(HEADING, open=False, elem_id="emb-word2vec-panel"):
        gr.Markdown(course_text())
        with gr.Row():
            word = gr.Textbox(wg.WORD, label="A word: its nearest neighbours", max_length=40)
            a = gr.Textbox(wg.COURSE_ANALOGY[0], label="Word A", max_length=40)
            b = gr.Textbox(wg.COURSE_ANALOGY[1], label="− word B", max_length=40)
            c = gr.Textbox(wg.COURSE_ANALOGY[2], label="+ word C", max_length=40)
            expected = gr.Textbox(wg.COURSE_ANALOGY[3], label="≈ expected answer", max_length=40)
        button = gr.Button("Train (once) and compare", variant="primary")
        gr.Examples([list(wg.COURSE_ANALOGY), list(wg.CORPUS_ANALOGY)], inputs=[a, b, c, expected],
                    label="Analogies: the course's, and one this corpus can answer (LM Lab's own)")
        found = gr.Markdown()
        table = ui.table(NEIGHBOUR_HEADERS, "Nearest neighbours by cosine (the word itself left out)")
        analogies = ui.table(ANALOGY_HEADERS, "a − b + c on the static vectors (the three words left out)", wrap=True)
        one = gr.Markdown()
        loss = gr.Plot(label="GloVe's loss")
        result = ui.result_json()
        ctx.link(__name__, w2v_word=word, w2v_a=a, w2v_b=b, w2v_c=c, w2v_expected=expected)
    inputs, outputs = [word, a, b, c, expected], [found, table, analogies, one, loss, result]
    ui.wire([button.click, word.submit], on_word2vec, inputs, outputs)
