"""Tokens, panel "The unigram tokenizer, whole": a SentencePiece unigram model trained here; for one short text its
pieces' log-probabilities, the Viterbi segmentation and its score, the n best, and sampled segmentations."""

from __future__ import annotations

import math

import gradio as gr
import pandas as pd

from labs.core.ui import course_quotes, ui
from labs.core.ui.build import Build
from labs.tokens import train, unigram

HEADING = "The unigram tokenizer, whole: piece probabilities, Viterbi, n-best and sampled segmentations"
PIECE_HEADERS = ["piece", "id", "log p (the model's score)", "p"]
NBEST_HEADERS = ["rank", "segmentation", "score = Σ log p", "P(segmentation | text)"]
SAMPLE_HEADERS = ["segmentation", "times drawn", "share drawn", "P when drawn with α"]
PIECE_COLOURS = ("#dbeafe", "#fde68a", "#bbf7d0", "#fbcfe8", "#ddd6fe", "#fed7aa")
UNK_COLOUR = "#fca5a5"
HINT = ("**Try this:** “predictable” with 500 pieces: two segmentations almost tie. Draw 100 samples with α = 1, "
        "then with α = 0.05: how many different segmentations come up each time?")


def course_text() -> str:
    quote = course_quotes.get("unigram_viterbi")
    quoted = "\n>\n".join(f"> {line}" for line in quote.text.split("\n"))
    return (f"**{quote.cite}:**\n\n{quoted}\n\n"
            "Below, a real unigram model: the `sentencepiece` library (the one T5's and ALBERT's tokenizers were "
            "made with) trains it here, in memory, on the 352 built-in film reviews or on your text, with the "
            "vocabulary size you pick. Each piece x has a probability p(x); its log, log p(x), is the model's score "
            "for it. A segmentation's score is the sum of its pieces' log p (the log of their product); the Viterbi "
            "algorithm finds the highest-scoring one without trying them all. The sum over *all* the "
            "segmentations of your text (the formula's inner sum, for your text as the sentence) turns each "
            "segmentation's score into its probability given the text. Subword regularisation (Kudo, 2018) trains "
            "a model on segmentations *sampled* instead: the library draws each with probability proportional to "
            "exp(α · its score); α = 1 draws by the model's own probabilities, a smaller α spreads the draws over "
            "more segmentations.")


def pieces_html(s: unigram.Segmentation, unknown: set) -> str:
    """The pieces with their ids under them; an unknown piece in red."""
    colours = [UNK_COLOUR if (p, i) in unknown else PIECE_COLOURS[n % len(PIECE_COLOURS)]
               for n, (p, i) in enumerate(zip(s.pieces, s.ids))]
    return '<div class="lab-pieces">' + "".join(
        f'<span class="lab-piece" style="background:{colour}">{ui.esc(p)}<sub>{i}</sub></span>'
        for p, i, colour in zip(s.pieces, s.ids, colours)) + "</div>"


def shown(pieces: list[str]) -> str:
    return " · ".join(pieces)


def number(x: float) -> str:
    return f"{x:.3f}".replace("-", "−")


def summary_html(r: unigram.UnigramResult) -> str:
    v, nbest_first = r.viterbi, r.nbest[0] if r.nbest else None
    log_probs = {(p["piece"], p["id"]): p["log_prob"] for p in r.pieces}
    terms = " + ".join(f"({number(log_probs[p, i])})" if log_probs[p, i] < 0 else number(log_probs[p, i])
                       for p, i in zip(v.pieces, v.ids))
    facts = (f"<b>Unigram model</b> trained on {ui.esc(r.trained_on)} ({r.lines:,} lines): {r.vocab_size:,} pieces. "
             f"Your text as the model reads it: <code>{ui.esc(r.normalized)}</code> (▁ marks a word's start).")
    same = nbest_first is not None and nbest_first.pieces == v.pieces
    lines = [
        f"<div>{facts}</div>",
        f"<div><b>Viterbi segmentation</b> (the library's <code>encode</code>), {len(v.pieces)} pieces:</div>"
        + pieces_html(v, {(p["piece"], p["id"]) for p in r.pieces if p["unknown"]}),
        f"<div>score = {ui.esc(terms)} = <b>{number(v.score)}</b></div>",
        f"<div>Your text has <b>{r.segmentations:,}</b> segmentations over this vocabulary; log Σ<sub>x</sub> "
        f"Π<sub>j</sub> p(x<sub>j</sub>) over all of them = <b>{number(r.log_total)}</b>, so P(Viterbi | text) = "
        f"exp({number(v.score)} − ({number(r.log_total)})) = <b>{v.probability:.3f}</b>.</div>",
        f"<div>The n-best list's first is the Viterbi segmentation: {'✅ yes' if same else '❌ no'}.</div>"]
    unknown = [p["piece"] for p in r.pieces if p["unknown"]]
    if unknown:
        lines.append(f"<div>Not in the vocabulary: {ui.esc(', '.join(unknown))}, each the piece &lt;unk&gt; (id 0, in "
                     f"red); sentencepiece scores each of its characters the lowest piece score − 10 = "
                     f"{number(r.unk_score)}, and so do the sums here.</div>")
    return '<div class="lab-vocab-row">' + "".join(lines) + "</div>"


def tables(r: unigram.UnigramResult) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    nbest = pd.DataFrame([[k, shown(s.pieces), round(s.score, 3), round(s.probability, 4)]
                          for k, s in enumerate(r.nbest, 1)], columns=NBEST_HEADERS)
    samples = pd.DataFrame([[shown(s.pieces), f"{s.count} of {r.drawn}", round(s.count / r.drawn, 3),
                             round(s.expected, 4)] for s in r.samples], columns=SAMPLE_HEADERS)
    pieces = pd.DataFrame([[p["piece"] if not p["unknown"] else f"{p['piece']} (<unk>)", p["id"],
                            round(p["log_prob"], 3), f"{math.exp(p['log_prob']):.2e}"] for p in r.pieces],
                          columns=PIECE_HEADERS)
    return nbest, samples, pieces


def on_unigram(text, vocab_size, corpus, alpha, samples, seed):
    r = unigram.unigram(text, vocab_size, corpus, alpha, samples, seed)
    viterbi = next((s.count for s in r.samples if s.pieces == r.viterbi.pieces), 0)
    drawn = (f"**{r.drawn} segmentation(s) sampled** with α = {r.alpha:g} and seed {r.seed}: {len(r.samples)} "
             f"different, the Viterbi one {viterbi} time(s). The last column is the probability the library draws "
             "each with: exp(α · its score) divided by the same sum over every segmentation of the text.")
    nbest, sampled, pieces = tables(r)
    return summary_html(r), nbest, drawn, sampled, pieces, r.to_json()


def build(ctx: Build) -> None:
    with gr.Accordion(HEADING, open=True, elem_id="tok-unigram-panel"):
        gr.Markdown(course_text(), latex_delimiters=[{"left": "$$", "right": "$$", "display": True},
                                                     {"left": "$", "right": "$", "display": False}])
        gr.Markdown(HINT)
        with gr.Row():
            text = gr.Textbox(unigram.EXAMPLE, label="A word or a short text to segment", scale=3, max_lines=2,
                              max_length=unigram.MAX_CHARS)
            with gr.Column(scale=2):
                size = gr.Slider(*unigram.VOCAB_RANGE, value=unigram.VOCAB_DEFAULT, step=10,
                                 label="Vocabulary size (pieces the model keeps)")
                button = gr.Button("Segment it", variant="primary")
        with gr.Row():
            alpha = gr.Slider(*unigram.ALPHA_RANGE, value=unigram.ALPHA_DEFAULT, step=0.05,
                              label="α for sampling (1: the model's own probabilities; smaller: flatter)")
            samples = gr.Slider(*unigram.SAMPLES_RANGE, value=unigram.SAMPLES_DEFAULT, step=1,
                                label="Segmentations to sample")
            seed = gr.Number(0, label="Seed (the same seed draws the same samples)", precision=0,
                             minimum=unigram.SEED_RANGE[0], maximum=unigram.SEED_RANGE[1])
        corpus = gr.Textbox("", label="Text to train on (empty: the 352 built-in reviews)", lines=2,
                            max_length=train.MAX_TEXT_CHARS)
        summary = gr.HTML(elem_classes=["lab-token-rows"], elem_id="tok-unigram")
        nbest = ui.table(NBEST_HEADERS, f"The {unigram.NBEST} best segmentations (the library's nbest_encode)")
        drawn = gr.Markdown()
        sampled = ui.table(SAMPLE_HEADERS, "Sampled segmentations, the most frequent first")
        pieces = ui.table(PIECE_HEADERS, "Every piece above, with its log-probability")
        result = ui.result_json()
        ctx.link(__name__, unigram_text=text, unigram_vocab_size=size, unigram_alpha=alpha,
                 unigram_samples=samples, unigram_seed=seed)
    inputs, outputs = [text, size, corpus, alpha, samples, seed], [summary, nbest, drawn, sampled, pieces, result]
    ui.wire([button.click, text.submit, size.release, alpha.release, samples.release, seed.submit], on_unigram,
            inputs, outputs)
    ctx.on_load(on_unigram, inputs, outputs)
