"""Embeddings, panel "ELMo in miniature": a forward and a backward LSTM LM trained on the spot, each layer's vector
for a word in two sentences that share their left context, ELMo's learned layer mixture, and the encoder beside it."""

from __future__ import annotations

import gradio as gr
import plotly.graph_objects as go

from labs.core.ui import course_quotes, plots, ui
from labs.core.ui.build import Build
from labs.embeddings import elmo, word_corpus

HEADING = "ELMo in miniature: two one-way LSTMs, concatenated, beside an encoder"
LAYER_HEADERS = ["ELMo layer", "what it is", "cosine, whole vector", "cosine, forward half", "cosine, backward half",
                 "distance, forward half", "distance, backward half"]
LAYER_NAMES = ("token embedding [forward row; backward row]", "LSTM layer 1 [forward h; backward h]",
               "LSTM layer 2 [forward h; backward h]")


def course_text() -> str:
    elmo_q, formula, joint = (course_quotes.get(f"elmo_{k}") for k in ("bilstm", "formula", "concatenates"))
    return (
        f"**{elmo_q.cite}:**\n\n> {elmo_q.text}\n>\n> {formula.text}\n\n**{joint.cite}:**\n\n> {joint.text}\n\n"
        "**What you see here (LM Lab's own experiment).** Two LSTM language models trained on the spot on "
        f"{word_corpus.CREDIT}: a forward one that predicts the next word and a separate backward one that predicts "
        f"the previous word (torch `nn.LSTM`, {elmo.LAYERS} layers of {elmo.DIM} numbers, the {elmo.VOCAB:,} most "
        f"frequent words + {ui.md(elmo.UNK)}, {elmo.EPOCHS} epochs of Adam, seed {elmo.SEED}; every tenth document "
        "held out for the perplexity). It reads gensim's lower-cased words of 2 to 15 letters, so “I” is dropped. "
        "Unlike ELMo's, layer 0 here is a word embedding, not a character CNN: a word "
        f"outside the vocabulary is {ui.md(elmo.UNK)}. ELMo's vector for a word at layer j is the two models' states "
        "side by side, [forward hⱼ; backward hⱼ]. The mixture's γ and sⱼ are learned here for one small task: the "
        "sentiment of LM Lab's own reviews (a logistic head on the review's mean mixed vector; the file's train and "
        "validation split). The encoder is the lab's all-MiniLM-L6-v2, its vectors from the lab's shared pass. The "
        "first click trains (under a minute), then it is cached.")


def layer_rows(r: elmo.PairResult) -> list[list]:
    return [[x["layer"], LAYER_NAMES[x["layer"]] if x["layer"] < len(LAYER_NAMES) else "", x["cosine"],
             x["forward_cosine"], x["backward_cosine"], x["forward_distance"], x["backward_distance"]]
            for x in r.layers]


def findings(r: elmo.PairResult) -> str:
    word = ui.md(r.word)
    same = all(x["forward_identical"] for x in r.layers)
    top = r.layers[-1]
    left = ("The two sentences share every word before it, so ELMo's **forward half is identical** in both "
            "(bit for bit: distance 0, cosine 1.0): the forward LSTM has not read the right side yet." if same else
            "The words before it differ, so even the forward half differs." if not r.shared_left else
            "The forward halves differ.")
    lines = [f"“{word}” is word {r.positions[0] + 1} of sentence 1 and word {r.positions[1] + 1} of sentence 2. {left} "
             f"Its **backward half** differs (top layer: distance {top['backward_distance']:.4f}, cosine "
             f"{top['backward_cosine']:.6f}): the backward LSTM read the different right side first. The meaning "
             "carried by the right side reaches ELMo's vector only through the backward model."]
    enc = r.encoder_cosines
    lines.append(f"**{ui.md(r.encoder)}** (joint attention) gives “{word}” two different vectors from its first layer "
                 f"on: cosine {min(enc[1:]):.3f} at its lowest (layer 0, its embeddings plus positions, has read "
                 f"nothing yet: {enc[0]:.3f}). Each of its layers reads both sides at once.")
    if r.unknown:
        lines.append(f"Read as {ui.md(elmo.UNK)} by the biLM (outside its {elmo.VOCAB:,} words): "
                     f"{ui.md(', '.join(r.unknown))}.")
    x = r.mixture
    lines.append(f"Held-out perplexity: forward **{r.perplexity['forward']:.1f}**, backward "
                 f"**{r.perplexity['backward']:.1f}** (exp of the mean cross-entropy per word). Sentiment head with "
                 f"the learned mixture: {x.test_accuracy:.0%} right on the {x.test_examples} validation reviews "
                 f"({x.train_accuracy:.0%} on its {x.train_examples} training reviews; always guessing the commoner "
                 f"label: {x.majority:.0%}). A 60k-word LM learns little about sentiment: the point is the weights "
                 f"themselves, γ and softmax(s) learned by gradient descent. The two mixed vectors of "
                 f"“{word}” have cosine {r.mixed_cosine:.6f}.")
    return "\n\n".join(lines)


def weights_figure(r: elmo.PairResult):
    x = r.mixture
    names = [f"layer {j}" for j in range(len(x.weights))]  # 0: token embedding; 1, 2: the LSTM layers
    return plots.bar_chart(names, [round(w, 4) for w in x.weights], x_title="softmax(s)ⱼ, learned",
                           title=plots.safe(f"ELMo's learned layer weights for the sentiment task (γ = {x.gamma:.3f})"))


def encoder_figure(r: elmo.PairResult):
    fig = go.Figure()
    enc = r.encoder_cosines
    fig.add_trace(go.Scatter(x=[j / (len(enc) - 1) for j in range(len(enc))], y=enc, name=plots.safe(r.encoder),
                             line=dict(color=plots.BLUE, width=4)))
    for key, name, colour in (("forward_cosine", "ELMo forward half", plots.GREEN),
                              ("backward_cosine", "ELMo backward half", plots.RED)):
        ys = [x[key] for x in r.layers]
        fig.add_trace(go.Scatter(x=[j / (len(ys) - 1) for j in range(len(ys))], y=ys, name=name,
                                 line=dict(color=colour, width=4)))
    plots.style(fig, plots.safe(f"\"{r.word}\" in the two sentences: cosine, every layer"), 360,
                legend=dict(orientation="h"))
    fig.update_xaxes(title="depth (0 = embeddings, 1 = last layer)")
    fig.update_yaxes(title="cosine similarity")
    return fig


def on_elmo(first, second, word):
    r = elmo.compare(first, second, word)
    return findings(r), layer_rows(r), weights_figure(r), encoder_figure(r), r.to_json()


def build(ctx: Build) -> None:
    with gr.Accordion(HEADING, open=False, elem_id="emb-elmo-panel"):
        gr.Markdown(course_text())
        with gr.Row():
            first = gr.Textbox(elmo.PAIR[0], label="Sentence 1 (LM Lab's own)", max_length=300, scale=2)
            second = gr.Textbox(elmo.PAIR[1], label="Sentence 2: same words before the word, others after",
                                max_length=300, scale=2)
            word = gr.Textbox(elmo.WORD, label="The word", max_length=40, scale=1)
        button = gr.Button("Train (once) and compare", variant="primary")
        found = gr.Markdown()
        table = ui.table(LAYER_HEADERS, "ELMo's layers for the word: sentence 1 against sentence 2", wrap=True)
        with gr.Row():
            weights = gr.Plot(label="The learned mixture")
            compare = gr.Plot(label="ELMo's halves beside the encoder")
        result = ui.result_json()
        ctx.link(__name__, elmo_first=first, elmo_second=second, elmo_word=word)
    inputs, outputs = [first, second, word], [found, table, weights, compare, result]
    ui.wire([button.click, word.submit], on_elmo, inputs, outputs)
