"""Embeddings, the tab: one word's vectors across sentences and layers, a map, sentence vectors, and
left-only vs both sides; then the panels tab_static (king − man + woman), tab_word2vec (word2vec and GloVe trained
live), tab_elmo (ELMo in miniature) and tab_pooling ([CLS] / mean / max)."""

from __future__ import annotations

import itertools

import gradio as gr
import numpy as np
import plotly.graph_objects as go

from labs.core.errors import check_int
from labs.core.ui import course_quotes, plots, ui
from labs.core.ui.build import Build
from labs.embeddings import compute, tab_elmo, tab_pooling, tab_probes, tab_static, tab_word2vec

TITLE = "Embeddings"
ID = "embeddings"  # the ?tab= link and the folder
EXPLAINER = """**A static embedding (word2vec) gives "bank" one vector; BERT gives every "bank" its own.**
Type sentences that share a word (one per line, optionally `| sense`) and see how similar the word's
vectors are, layer by layer: identical in the embedding matrix, then pulled apart by the context. For an
encoder-decoder such as T5, the vectors are its encoder's (the part that reads the whole input). Further
down: word2vec's king − man + woman on the model's own embedding rows, word2vec and GloVe trained live on a small
corpus, ELMo in miniature (two one-way LSTMs beside an encoder), [CLS] vs mean vs max sentence vectors, and what
each layer knows (a linear probe per layer)."""
TRY_THIS = (
    "\"bat\": The bat flew out of the cave. | animal / He swung the bat. | cricket. Where do the senses separate?",
    "\"I record the record\": type the sentence twice with labels verb / noun and the word \"record\"; is the "
    "first \"record\" the one compared? Move it to check.",
    "Same sense, different neighbours: \"The cat sat on the mat.\" vs \"A cat slept on my bed.\" Similar?",
    "Left only vs both sides: with a causal LM, can two sentences that only differ after the word give it "
    "different vectors? And with T5's encoder?",
    "king − man + woman: guess \"queen\"'s rank before you click. Then try paris − france + italy: which rows beat "
    "\"rome\"? Does the arithmetic help, or was the answer already among word A's own neighbours?",
    "[CLS], mean or max: which pooling finds the paraphrases best, and is it the one the model was trained with? "
    "Add a distractor that shares every word with a sentence but not its meaning (\"The dog bit the man.\" / "
    "\"The man bit the dog.\"): which pooling is fooled?",
    "What each layer knows: before you look, guess which probe peaks highest up. Does word sense need the upper "
    f"layers? (The textbook says of ELMo's: “{course_quotes.text('elmo_layers')}”, 20.1.3.) Why might position "
    "fade towards the top of a sentence encoder?")
# What each family's vectors are and what they can depend on, for the notes under a result.
READS = {
    "masked": "a masked LM, an encoder: it reads both sides of the word, so the words after it change its vector.",
    "encoder": "an encoder: it reads both sides of the word, so the words after it change its vector.",
    "seq2seq": ("an encoder-decoder: these are its encoder's vectors, and the encoder reads both sides of the word "
                "(only the decoder, which writes the output, reads left to right), so the words after it change "
                "its vector."),
    "causal": ("a causal LM: it reads left to right, so the word's vector depends only on the words before it; two "
               "sentences that differ only after it give it exactly the same vector (cosine 1.000) at every layer."),
}
NO_POSITIONS_NOTE = ("At layer 0 the word's vector is still its static vector: this model adds no position vectors "
                     "(its positions act inside attention: relative in T5, rotary in Llama), so the context has not "
                     "reached it yet.")
LAYER_LABEL = "Layer (−1 = the static vector, 0 = embeddings + positions, then each layer)"


def short_labels(r: compute.EmbeddingsRun) -> list[str]:
    return [f"{i + 1}" + (f" {s.label}" if s.label else "") for i, s in enumerate(r.sentences)]


def similarity_figure(r: compute.EmbeddingsRun, layer: int):
    vectors, name = (r.static, "static vector") if layer < 0 else (r.by_layer[layer], f"layer {layer}")
    labels = short_labels(r)
    return plots.heatmap(np.round(compute.cosine_matrix(vectors), 3), labels, title=plots.safe(
        f"Cosine similarity of \"{r.word}\", {name}"), zmin=0, zmax=1, text_format="%{z:.3f}",
        x_title="sentence", y_title="sentence")


def layer_names(r: compute.EmbeddingsRun) -> list[str]:
    return ["static"] + [str(i) for i in range(r.num_layers + 1)]


def senses_figure(r: compute.EmbeddingsRun):
    labels = [s.label for s in r.sentences]
    matrices = [compute.cosine_matrix(r.static)] + list(compute.cosine_matrix(r.by_layer))
    curves = [compute.sense_means(m, labels) for m in matrices]
    fig = go.Figure()
    if not any(a is not None and b is not None for a, b in curves):
        mean = [float(m[np.triu_indices(len(labels), 1)].mean()) for m in matrices]
        fig.add_trace(go.Scatter(x=layer_names(r), y=mean, name="all pairs", line=dict(color=plots.BLUE, width=4)))
    else:
        for i, (name, colour) in enumerate((("same sense", plots.GREEN), ("different senses", plots.RED))):
            fig.add_trace(go.Scatter(x=layer_names(r), y=[c[i] for c in curves], name=name,
                                     line=dict(color=colour, width=4)))
    plots.style(fig, plots.safe(f"Where the senses of \"{r.word}\" separate"), 360, legend=dict(orientation="h"))
    fig.update_xaxes(title="layer", type="category")
    fig.update_yaxes(title="mean cosine similarity")
    return fig


def map_figure(r: compute.EmbeddingsRun, layer: int):
    coords = compute.projection(r.static if layer < 0 else r.by_layer[layer])
    fig = go.Figure()
    senses = list(dict.fromkeys(s.label for s in r.sentences))
    colours = itertools.cycle([plots.BLUE, plots.RED, plots.GREEN, plots.PURPLE, "#b45309"])
    for sense, colour in zip(senses, colours):
        rows = [i for i, s in enumerate(r.sentences) if s.label == sense]
        fig.add_trace(go.Scatter(x=coords[rows, 0], y=coords[rows, 1], mode="markers+text", name=plots.safe(
            sense or "no label"), text=[str(i + 1) for i in rows], textposition="top center",
            hovertext=[plots.safe(r.sentences[i].text) for i in rows], hoverinfo="text",
            marker=dict(size=18, color=colour)))
    plots.style(fig, f"The vectors on a map (PCA), {'static' if layer < 0 else f'layer {layer}'}", 380,
                legend=dict(orientation="h"))
    if np.ptp(coords) < 1e-9:  # the static vector: nothing to spread out
        fig.add_annotation(text="Every sentence gives the same vector: one point", x=0, y=0, yshift=-40,
                           showarrow=False, font=dict(size=18))
    fig.update_xaxes(title="first principal component")
    fig.update_yaxes(title="second")
    return fig


def pieces_note(r: compute.EmbeddingsRun) -> str:
    pieces = ", ".join(r.word_pieces)
    split = (f"\"{r.word}\" is one token ({pieces})." if len(r.word_pieces) == 1 else
             f"\"{r.word}\" is split into {len(r.word_pieces)} pieces ({pieces}): their vectors are averaged.")
    layers = f"{r.num_layers} {'encoder ' if r.family == 'seq2seq' else ''}layers"
    about = f"{r.model} is {READS[r.family]}" + (f" {NO_POSITIONS_NOTE}" if r.layer0_is_static else "")
    return ui.md(f"Comparing \"{r.word}\" with {r.model}, {layers}. {split} {about}")


def sentence_figure(r: compute.EmbeddingsRun):
    return plots.heatmap(np.round(compute.cosine_matrix(r.pooled), 3), short_labels(r), zmin=0, zmax=1,
                         text_format="%{z:.3f}", title="Whole sentences: mean-pooled vectors, last layer",
                         x_title="sentence", y_title="sentence")


def pair_choices(n: int) -> list[str]:
    return [f"{i + 1} and {j + 1}" for i, j in itertools.combinations(range(n), 2)]


def closest_pair(r: compute.EmbeddingsRun) -> tuple[int, int, float]:
    sim = compute.cosine_matrix(r.pooled)
    i, j = max(itertools.combinations(range(len(sim)), 2), key=lambda p: sim[p])
    return i, j, float(sim[i, j])


def shown_layer(layer, r: compute.EmbeddingsRun) -> int:
    """The slider's value within this model's layers (−1: the static vector)."""
    return min(check_int(layer, "The layer", -1, 10_000), r.num_layers)


def on_show(sentences, word, model, layer):
    r = compute.run(compute.check_model(model), sentences, word)  # the model resolved once per click
    layer = shown_layer(layer, r)
    return (pieces_note(r), similarity_figure(r, layer), senses_figure(r), map_figure(r, layer), sentence_figure(r),
            gr.update(choices=pair_choices(len(r.sentences)), value=None), "",
            gr.update(maximum=r.num_layers, value=layer), compute.to_json(r, -1))


def on_layer(sentences, word, model, layer):
    r = compute.run(compute.check_model(model), sentences, word)  # the hidden states are cached: no new pass
    layer = shown_layer(layer, r)
    return similarity_figure(r, layer), map_figure(r, layer)


def on_reveal(sentences, word, model, guess):
    i, j, similarity = closest_pair(compute.run(compute.check_model(model), sentences, word))
    answer = f"{i + 1} and {j + 1}"
    verdict = "" if not guess else ("✅ Right: " if guess == answer else f"❌ You picked {ui.md(guess)}. ")
    return f"{verdict}Sentences **{answer}** are the closest (cosine {similarity:.3f})."


def on_compare(sentences, word, encoder, causal):
    """The word's similarity between sentence 1 and 2 at every layer: a model that reads both sides (an
    encoder, or an encoder-decoder's encoder) beside a causal LM. Each is resolved once, for its slot."""
    compute.check_inputs(sentences, word)  # typed input first, before any model is looked up
    sides = ((compute.check_model(encoder, *compute.BOTH_SIDES), plots.BLUE),
             (compute.check_model(causal, *compute.LEFT_ONLY), plots.RED))
    fig, lines = go.Figure(), []
    for loaded, colour in sides:
        r = compute.run(loaded, sentences, word)
        similarity = compute.cosine_matrix(r.by_layer)[:, 0, 1]
        depth = np.linspace(0, 1, len(similarity))
        fig.add_trace(go.Scatter(x=depth, y=similarity, name=plots.safe(r.model), line=dict(color=colour, width=4),
                                 hovertext=[f"layer {i}" for i in range(len(similarity))]))
        lines.append(f"**{ui.md(r.model)}**: lowest cosine {similarity.min():.4f}. {ui.md(r.model)} is "
                     f"{READS[r.family]}")
    plots.style(fig, plots.safe(f"\"{r.word}\" in sentences 1 and 2, every layer"), 360, legend=dict(orientation="h"))
    fig.update_xaxes(title="depth (0 = embeddings, 1 = last layer)")
    fig.update_yaxes(title="cosine similarity")
    return fig, "\n\n".join(lines)


def causal_example():
    return compute.CAUSAL_EXAMPLE, "bank"


def build(ctx: Build) -> None:
    ui.explainer(EXPLAINER)
    with gr.Row():
        sentences = gr.Textbox(compute.EXAMPLE, label="Sentences that share a word (one per line; optional | sense)",
                               lines=5, max_lines=10, scale=3, max_length=2000)
        with gr.Column(scale=2):
            word = gr.Textbox("bank", label="The word (empty: the word every sentence shares)", max_length=50)
            model = ui.model_dropdown(*compute.FAMILIES, label="Model (T5: its encoder)", family_order=True)
    show = gr.Button("Compare the vectors", variant="primary")
    layer = gr.Slider(-1, 12, value=-1, step=1, label=LAYER_LABEL)
    with gr.Row():
        similarity = gr.Plot(label="The word's similarity between sentences")
        senses = gr.Plot(label="Same sense vs different senses, every layer")
    # Under the plots: a causal LM's or T5's note runs to three lines and would push them off a projected screen.
    note = gr.Markdown()
    word_map = gr.Plot(label="A map of the word's vectors")
    with gr.Accordion("Whole sentences: which two are closest?", open=True):
        with gr.Row():
            guess = gr.Dropdown(label="Your guess before the reveal", choices=[], scale=2)
            reveal = gr.Button("Reveal", scale=1)
        verdict = gr.Markdown()
        sentence_plot = gr.Plot(label="Sentence similarity")
    with gr.Accordion("Left only vs both sides: an encoder beside a causal LM", open=False):
        with gr.Row():
            encoder = ui.model_dropdown(*compute.BOTH_SIDES, label="Reads both sides: an encoder, or an "
                                        "encoder-decoder's encoder (T5)", family_order=True)
            causal = ui.model_dropdown("causal", label="Causal LM")
        with gr.Row():
            example = gr.Button("Load \"The bank was flooded / robbed\"")
            compare = gr.Button("Compare sentences 1 and 2", variant="primary")
        compare_plot, compare_note = gr.Plot(), gr.Markdown()
    result_json = ui.result_json()
    ctx.link(__name__, sentences=sentences, word=word, model=model, layer=layer)
    tab_static.build(ctx)
    tab_word2vec.build(ctx)
    tab_elmo.build(ctx)
    tab_pooling.build(ctx)
    tab_probes.build(ctx)
    ui.try_this(*TRY_THIS)

    inputs = [sentences, word, model, layer]
    shown = [note, similarity, senses, word_map, sentence_plot, guess, verdict, layer, result_json]
    ui.wire([show.click, sentences.submit, word.submit], on_show, inputs, shown)
    ctx.on_load(on_show, inputs, shown)
    ui.wire(layer.release, on_layer, inputs, [similarity, word_map], show_progress="hidden")
    ui.wire(reveal.click, on_reveal, [sentences, word, model, guess], verdict)
    ui.wire(example.click, causal_example, None, [sentences, word], queue=False).then(
        ui.friendly(on_compare), [sentences, word, encoder, causal], [compare_plot, compare_note],
        api_visibility="private")
    ui.wire(compare.click, on_compare, [sentences, word, encoder, causal], [compare_plot, compare_note])
