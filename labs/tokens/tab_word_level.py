"""Tokens, panel "Why a word-level vocabulary fails": the student's text through a word-level vocabulary
trained here ([UNK] for every word it never saw) beside the real subword tokenizers."""

from __future__ import annotations

import gradio as gr

from labs.core.ui import course_quotes, ui
from labs.core.ui.build import Build
from labs.tokens import word_level

HEADING = "Why a word-level vocabulary fails: [UNK] for every new word"
UNK_COLOUR, KNOWN_COLOUR, PIECE_COLOUR = "#fca5a5", "#bbf7d0", "#dbeafe"


def course_text() -> str:
    deck, book = (course_quotes.get(i) for i in ("word_level_novel", "word_level_morphology"))
    explosion = course_quotes.text("word_level_explosion")
    return (f"**{deck.cite}:**\n\n> {deck.text}\n\n**{book.cite}:**\n\n> {explosion}\n>\n> {book.text}\n\n"
            f"The default text is the course's own words: the deck's table ({', '.join(word_level.DECK_WORDS)}) and "
            f"the textbook's {', '.join(word_level.TEXTBOOK_WORDS)}. The word-level vocabulary below is real: "
            f"`tokenizers`' WordLevel model trained on {len(word_level.corpus_lines())} everyday sentences written "
            "for LM Lab (lower-cased, cut at spaces and punctuation), keeping the most frequent words.")


def pieces_html(pieces, ids, colours) -> str:
    return '<div class="lab-pieces">' + "".join(
        f'<span class="lab-piece" style="background:{colour}">{ui.esc(p)}<sub>{i}</sub></span>'
        for p, i, colour in zip(pieces, ids, colours)) + "</div>"


def word_level_html(r: word_level.WordLevelResult) -> str:
    shown = [f"[UNK] ({w})" if unk else t for t, w, unk in zip(r.tokens, r.words, r.unknown)]
    colours = [UNK_COLOUR if unk else KNOWN_COLOUR for unk in r.unknown]
    facts = (f"<b>Word-level vocabulary</b>: {r.vocab_size:,} entries (asked for {r.vocabulary_size:,}; the "
             f"{r.corpus_sentences} sentences have {r.vocab_size - 1:,} distinct words) · <b>{sum(r.unknown)} of "
             f"{len(r.tokens)} tokens are [UNK] ({r.unk_share:.0%})</b>; each [UNK] is id "
             f"{r.ids[r.unknown.index(True)] if any(r.unknown) else 0}: the model cannot tell them apart")
    return f'<div class="lab-vocab-row"><div>{facts}</div>{pieces_html(shown, r.ids, colours)}</div>'


def subword_html(row: word_level.SubwordRow) -> str:
    name = ui.esc(row.model)
    if row.error:
        return f'<div class="lab-vocab-row"><b>{name}</b>: {ui.esc(row.error)}</div>'
    back = ("✅ decodes to your text exactly" if row.round_trip else
            "✅ decodes to your text, lower-cased (this WordPiece is uncased)" if row.round_trip_uncased else
            f"decodes to: {ui.esc(row.decoded)}")
    unknown = f" · {row.unknown} [UNK]" if row.unknown else " · no [UNK]"
    facts = f"<b>{name}</b>: {ui.esc(row.algorithm)} · {len(row.ids)} pieces{unknown} · {back}"
    colours = ["#fca5a5" if p == "[UNK]" else PIECE_COLOUR for p in row.pieces]
    return f'<div class="lab-vocab-row"><div>{facts}</div>{pieces_html(row.pieces, row.ids, colours)}</div>'


def on_word_level(text, vocabulary_size):
    r = word_level.word_level(text, vocabulary_size)
    return word_level_html(r) + "".join(subword_html(row) for row in r.subword), r.to_json()


def build(ctx: Build) -> None:
    with gr.Accordion(HEADING, open=True, elem_id="tok-word-level-panel"):
        gr.Markdown(course_text())
        with gr.Row():
            text = gr.Textbox(word_level.EXAMPLE, label="Words to look up", scale=3, max_lines=3,
                              max_length=word_level.MAX_CHARS)
            with gr.Column(scale=2):
                size = gr.Slider(*word_level.VOCAB_RANGE, value=word_level.VOCAB_RANGE[1], step=1,
                                 label="Word-level vocabulary size (the most frequent words of the corpus)")
                button = gr.Button("Look the words up", variant="primary")
        rows = gr.HTML(elem_classes=["lab-token-rows"], elem_id="tok-word-level")
        result = ui.result_json()
        ctx.link(__name__, word_text=text, word_vocabulary_size=size)
    inputs, outputs = [text, size], [rows, result]
    ui.wire([button.click, text.submit, size.release], on_word_level, inputs, outputs)
    ctx.on_load(on_word_level, inputs, outputs)
