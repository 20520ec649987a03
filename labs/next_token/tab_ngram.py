"""Next token, panel "n-grams against a neural LM": a Kneser–Ney trigram model counted on the built-in reviews beside
SmolLM2, on the same held-out reviews and on the student's sentence word by word. Held out: both perplexities, per
word and per token. Word by word: where the trigram model falls back to the bigram or the unigram level, what it
does with a word it never saw, and what SmolLM2 makes of the same words."""

from __future__ import annotations

import gradio as gr
import plotly.graph_objects as go

from labs.core.ui import course_quotes, figure_text, plots, ui
from labs.core.ui.build import Build
from labs.next_token import ngram

HEADING = "n-grams against a neural LM: a trigram model beside SmolLM2"
PERPLEXITY_HEADERS = ["model", "perplexity per", "all the held-out words", "only the words the trigram model knows"]
WORD_HEADERS = ["#", "word", "after", "trigram model: where its probability comes from", "P trigram model",
                "P SmolLM2", "P bigram level", "P unigram level", "SmolLM2's tokens"]
SEEN, BIGRAM, UNIGRAM, UNKNOWN = "#bbf7d0", "#fde68a", "#fed7aa", "#fca5a5"  # the word table's rows
UNK = ui.md(ngram.UNK)  # in Markdown, <UNK> would be taken for a tag
TRIGRAM_NAME, NEURAL_NAME = "trigram model (Kneser–Ney)", "SmolLM2"


def quoted(text: str) -> str:
    """The course's bullets as a Markdown quote, the second level indented so that it nests (the words as written)."""
    return "\n".join("> " + ("  " + line if line.startswith(" ") else line) for line in text.split("\n"))


def course_text() -> str:
    slide = course_quotes.get("ngram_vs_llm")
    train, held = ngram.split(ngram.reviews())
    return (
        f"**{slide.cite}**, on the simple n-gram language model, then on large language models:\n\n"
        f"> …\n{quoted(slide.text)}\n\n"
        f"Below, both kinds are real. The n-gram model is nltk's `KneserNeyInterpolated({ngram.ORDER})`, counted here "
        f"on {len(train)} of the {len(train) + len(held)} short reviews that ship with LM Lab (`assets/sentiment.csv`, "
        f"the reviews the Tokens and Fine-tune labs use: films, restaurants, products, travel, other); every tenth review "
        f"({len(held)}) is held out, and neither model is scored on text the trigram model counted. Its words are "
        f"lower-cased, each punctuation mark a word; a word seen fewer than {ngram.UNK_CUTOFF} times in training is "
        f"{UNK}. The neural LM is {ui.md(ngram.NEURAL)}, reading your text as typed.\n\n"
        "Interpolated Kneser–Ney: P(w | u v) = max(c(u v w) − d, 0) / c(u v ·) + γ(u v) · P(w | v), with "
        f"d = {ngram.DISCOUNT} and γ(u v) = d · (how many different words followed u v) / c(u v ·): the mass the "
        "discount set aside. The lower levels count *continuations* (how many different words come before), not "
        "occurrences; a context never seen at all passes the bigram level on as it is (γ = 1).\n\n"
        "*Try this:* the default sentence has a word the reviews never use (“success”) and a trigram they never have. "
        "Change “success” for “film”, a word the reviews use often but never after “a great”: how far does each "
        "model's probability fall? Then swap two words (“a success great”): which model notices, and by how much?")


def seen(count: int) -> str:
    return "never seen" if count == 0 else "seen once" if count == 1 else f"seen {count}×"


def level_text(r: ngram.WordRow) -> str:
    """Where the trigram model's probability for this word comes from, in words."""
    u, v = r.context
    unknown = f"not in its vocabulary ({seen(r.train_count)} in training): read as {ngram.UNK}; " if r.oov else ""
    if r.trigram_count:
        return f"{unknown}trigram: “{u} {v} {r.looked_up}” {seen(r.trigram_count)}"
    context = (f"“{u} {v}” {seen(r.context_count)}, never followed by “{r.looked_up}”" if r.context_seen
               else f"“{u} {v}” never seen")
    if r.bigram_count:
        return f"{unknown}bigram level: {context}; “{v} {r.looked_up}” {seen(r.bigram_count)}"
    return f"{unknown}unigram level: {context}, and “{v} {r.looked_up}” never seen either"


def number(p: float | None):
    return "(in the token before)" if p is None else float(f"{p:.3g}")


def row_colour(r: ngram.WordRow) -> str:
    return UNKNOWN if r.oov else SEEN if r.backed_off_to is None else BIGRAM if r.backed_off_to == "bigram" else UNIGRAM


def word_table(c: ngram.Comparison) -> dict:
    rows = [[i + 1, r.word, " ".join(r.context), level_text(r), number(r.ngram_p), number(p),
             number(r.bigram_level_p), number(r.unigram_level_p), " ".join(pieces)]
            for i, (r, p, pieces) in enumerate(zip(c.rows, c.smollm2_p, c.neural.word_tokens))]
    return {"headers": WORD_HEADERS, "data": rows, "colours": [[row_colour(r)] * len(WORD_HEADERS) for r in c.rows]}


def perplexity_table(h: ngram.HeldOut) -> list[list]:
    def shown(x: float) -> float:
        return round(x, 1)

    return [[TRIGRAM_NAME, "word", shown(h.ngram_per_word), shown(h.ngram_per_known_word)],
            [NEURAL_NAME, "word", shown(h.smollm2_per_word), shown(h.smollm2_per_known_word)],
            [NEURAL_NAME, "token (its own)", shown(h.smollm2_per_token), "—"]]


def perplexity_note(c: ngram.Comparison) -> str:
    h = c.held_out
    return (
        f"Held out: {len(c.corpus.held_out_texts)} reviews, **{h.words:,} words** as the trigram model reads them "
        f"(its own tokens; punctuation marks count), which SmolLM2 reads as **{h.tokens:,} tokens**. Perplexity = "
        "exp(total negative log-likelihood ÷ how many units it is shared over). **Units matter:** SmolLM2's per-token "
        f"figure shares its log-likelihood over {h.tokens:,} tokens, so it cannot be set against the trigram model's "
        f"per-word one. Per word, it shares the same log-likelihood over the same {h.words:,} words (a word's "
        "probability is the product of its tokens'): that row is the fair comparison. Two things still favour the "
        "trigram model: it reads lower-cased words, while SmolLM2 must also predict capitals and spaces; and for "
        f"each of the {h.words - h.known} held-out words it does not know it only has to predict {UNK}, *some* "
        "rare word, not the word itself. The last column leaves those words out, for both models. Neither model is "
        f"scored on the end of a review. Lower is better: here {lower(h.ngram_per_word, h.smollm2_per_word)} is ahead "
        f"on all the words, {lower(h.ngram_per_known_word, h.smollm2_per_known_word)} on the words the trigram model "
        "knows.")


def lower(ngram_figure: float, neural_figure: float) -> str:
    return "**the trigram model**" if ngram_figure < neural_figure else f"**{NEURAL_NAME}**"


def unknown_word(c: ngram.Comparison, i: int) -> str:
    """What the trigram model does with the i-th word, not in its vocabulary, and what SmolLM2 does."""
    r, p, pieces = c.rows[i], c.smollm2_p[i], c.neural.word_tokens[i]
    after = min(2, len(c.rows) - i - 1)
    later = {0: "", 1: f" The next word has {UNK} in its context.",
             2: f" The next two words have {UNK} in their context."}[after]
    neural = f"P = {p:.3g}" if p is not None else "no token of its own (it shares the one before)"
    return (f"“{ui.md(r.word)}” is not in the trigram model's vocabulary ({seen(r.train_count)} in training; a word "
            f"must be seen {ngram.UNK_CUTOFF} times): nltk looks it up as {UNK}, and the model gives it "
            f"P({UNK} | {ui.md(' '.join(r.context))}) = {r.ngram_p:.3g}, the probability of *some* rare word: the "
            f"same for any word it does not know, a typo included.{later} SmolLM2 spells it in {len(pieces)} "
            f"token{'s' if len(pieces) != 1 else ''} ({ui.md(' '.join(pieces))}) and gives it {neural}.")


def findings(c: ngram.Comparison) -> str:
    rows, smol = c.rows, c.smollm2_p
    fell = [(r, p) for r, p in zip(rows, smol) if r.backed_off_to]
    found = [f"**{len(rows) - len(fell)} of {len(rows)} words** were counted in training after the same two words "
             "(green): their probability is mostly their own trigram count's."]
    if fell:
        higher = sum(1 for r, p in fell if p is not None and p > r.ngram_p)
        found.append(
            f"**{len(fell)}** never were: their trigram count is 0, so their probability is the lower level's, times "
            "the weight the discount set aside (yellow: the word pair was counted, the bigram level; orange: not even "
            "that, the unigram level, which only knows how many different words it follows). SmolLM2 has no counts "
            "to run out of: it scores a context from what it learned about similar words and contexts, and gives "
            f"{higher} of these {len(fell)} words a higher probability than the trigram model does.")
    told = set()
    for i, r in enumerate(rows):
        if r.oov and r.word not in told:
            told.add(r.word)
            found.append(unknown_word(c, i))
    if not told:
        deck = course_quotes.get("word_level_transformerify")
        found.append(f"Every word is in the trigram model's vocabulary ({c.corpus.vocabulary_size:,} entries, "
                     f"{ui.md('<s>')}, {ui.md('</s>')} and {UNK} included). Add one it never saw, such as "
                     f"“{ui.md(deck.text)}” ({deck.cite}), and see what it gets.")
    return "\n\n".join(found)


def chart(c: ngram.Comparison) -> go.Figure:
    labels = plots.unique_labels([r.word for r in c.rows])
    smol = c.smollm2_p
    fig = go.Figure([
        go.Bar(name=TRIGRAM_NAME, x=labels, y=[r.ngram_p for r in c.rows], marker_color=plots.BLUE),
        go.Bar(name=NEURAL_NAME, x=labels, y=smol, marker_color=plots.ORANGE, marker_pattern_shape="/")])
    plots.style(fig, plots.safe("Each word's probability under both models (log scale)"), 440, barmode="group",
                legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0))
    fig.update_yaxes(type="log", title="P(word | the words before)")
    fig.update_xaxes(type="category", tickangle=-45, title="your sentence, word by word")
    ahead = sum(1 for r, p in zip(c.rows, smol) if p is not None and p > r.ngram_p)
    summary = (f"{len(c.rows)} words; SmolLM2 gives {ahead} of them a higher probability than the trigram model, "
               f"the trigram model {len(c.rows) - ahead}.")
    return figure_text.attach(fig, summary)


def on_ngram(text):
    c = ngram.compare(text)
    return perplexity_table(c.held_out), perplexity_note(c), word_table(c), findings(c), chart(c), c.to_json()


def build(ctx: Build) -> None:
    with gr.Accordion(HEADING, open=False, elem_id="nt-ngram-panel"):
        gr.Markdown(course_text())
        with gr.Row():
            text = gr.Textbox(ngram.EXAMPLE, label="Your sentence", scale=3, max_lines=2, max_length=ngram.MAX_CHARS)
            button = gr.Button("Compare the two models", variant="primary", scale=1)
        perplexities = ui.table(PERPLEXITY_HEADERS, "Held-out perplexity: the same reviews, both models")
        note = gr.Markdown()
        words = ui.table(WORD_HEADERS, "Your sentence, word by word (green: trigram seen; yellow: bigram level; "
                         "orange: unigram level; red: not in the vocabulary)", wrap=True)
        found = gr.Markdown()
        figure = gr.Plot(label="Each word's probability under both models")
        result = ui.result_json()
        ctx.link(__name__, ngram_text=text)
    inputs, outputs = [text], [perplexities, note, words, found, figure, result]
    ui.wire([button.click, text.submit], on_ngram, inputs, outputs)
    ctx.on_load(on_ngram, inputs, outputs)
