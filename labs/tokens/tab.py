"""Tokens, the tab: every tokenizer on one text, BPE step by step, and three tokenizers trained here."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr
import pandas as pd

from labs.core.ui import ui
from labs.core.ui.build import Build
from labs.tokens import bpe, compute, tab_mismatch, tab_unigram, tab_word_level, train

TITLE = "Tokens"
ID = "tokens"  # the ?tab= link and the folder
EXPLAINER = """**A model never sees your text: it sees token ids.** Each model splits text into pieces from
its own fixed vocabulary: BERT's WordPiece marks a word's continuation with `##`, GPT-2's byte-level BPE
marks a leading space with ␣, T5's SentencePiece Unigram marks a word's start with ▁ (and keeps its sentinels
`<extra_id_0>`, `<extra_id_1>`, … whole, as special tokens). Type anything and compare; then watch how BPE
*learns* its pieces, one merge at a time; why a word-level vocabulary fails (one [UNK] for every new word); and
what a model reads when it is given another tokenizer's ids."""
TRY_THIS = (
    "Which tokenizer needs the most tokens for the emoji and Japanese example? Why does byte-level BPE never "
    "need [UNK]?",
    "\"playing\" and \"unbelievable\": which pieces does WordPiece use? Is \"##ing\" the same token as \"ing\"?",
    "The sentinel example: which tokenizer keeps `<extra_id_0>` as one special token, and what do the others make "
    "of it? (T5 learned to fill the span each sentinel stands for.)",
    "BPE on the course's corpus: before each click, write the pair you expect and check. After 5 merges, how "
    "does \"lowest\" split? And \"newer\"?",
    "Train the three tokenizers with a vocabulary of 100, then 1000: which one splits \"unbelievable\" into the "
    "fewest pieces?",
    "Word level: type a sentence about your weekend. What share of its words are [UNK]? Lower the vocabulary to "
    "50: which words survive, and why those?",
    "Pitfall 6: read GPT-2's ids with SmolLM2's tokenizer. Guess the perplexity on the wrong ids before you look; "
    "then pick the same tokenizer for A and B.")
PIECE_COLOURS = ("#dbeafe", "#fde68a", "#bbf7d0", "#fbcfe8", "#ddd6fe", "#fed7aa")
CORPUS_HEADERS = ["word", "count", "symbols now"]
PAIR_HEADERS = ["pair", "count (BPE)", "WordPiece score = freq(xy) / (freq(x)·freq(y))"]
MERGE_HEADERS = ["step", "pair", "count", "new token"]


def typed_specials(row: compute.TokenizerRow, text: str) -> list[str]:
    """Special tokens the student typed (T5's sentinels <extra_id_N>), not those the tokenizer adds."""
    return list(dict.fromkeys(t for t, special in zip(row.tokens, row.special) if special and t in text))


def row_html(row: compute.TokenizerRow, text: str = "") -> str:
    name = ui.esc(row.model)
    if row.error:
        return f'<div class="lab-token-row"><b>{name}</b>: {ui.esc(row.error)}</div>'
    pieces = "".join(
        f'<span class="lab-piece{" lab-piece-special" if special else ""}" '
        f'style="background:{"#e5e7eb" if special else PIECE_COLOURS[i % len(PIECE_COLOURS)]}">'
        f'{ui.esc(shown)}<sub>{token_id}</sub></span>'
        for i, (shown, token_id, special) in enumerate(zip(row.shown, row.ids, row.special)))
    algorithm = ui.esc(row.algorithm + (f" ({row.marks})" if row.marks else ""))
    facts = (f"{algorithm} · vocabulary {row.vocab_size:,} · <b>{len(row.ids)} tokens</b> · "
             f"{row.chars_per_token:.1f} characters per token (specials left out)")
    typed = typed_specials(row, text)
    if typed:
        facts += f" · typed special tokens kept whole: {ui.esc(', '.join(typed))}"
    return f'<div class="lab-token-row"><div><b>{name}</b>: {facts}</div><div class="lab-pieces">{pieces}</div></div>'


def on_tokenize(text):
    rows = compute.tokenize(text)  # each tokenizer resolved once for this click
    return "".join(row_html(r, text) for r in rows), compute.as_json(rows)


def shown_pair(pair) -> str:
    return f"{pair[0]} + {pair[1]}"


def bpe_view(corpus, merges, word):
    """The corpus after `merges` merges: the words' symbols, the pair counts, the merges so far, the
    vocabulary, the word's split, and WordPiece's choice beside BPE's next one."""
    counts, merges, word = bpe.parse_corpus(corpus), bpe.check_merges(merges), bpe.check_word(word)
    state = bpe.learn(counts, merges)
    words = pd.DataFrame([[w, c, " ".join(s)] for (s, c), w in zip(state.words, counts)], columns=CORPUS_HEADERS)
    scores = sorted(bpe.wordpiece_scores(state), key=lambda s: -s.count)
    pairs = pd.DataFrame([[shown_pair(s.pair), s.count, f"{s.count} / ({s.left}·{s.right}) = {s.score:.3f}"]
                          for s in scores], columns=PAIR_HEADERS)
    done = pd.DataFrame([[m.step, shown_pair(m.pair), m.count, m.token] for m in state.merges], columns=MERGE_HEADERS)
    split = " + ".join(bpe.split(word, state.merges)) if word else ""
    summary = (f"**{len(state.merges)} merge(s) learned; vocabulary {len(state.vocab)} symbols:** "
               f"{ui.md(' '.join(state.vocab))}")
    if split:
        summary += f"\n\n**\"{ui.md(word)}\" splits now as:** {ui.md(split)}"
    return summary, words, pairs, done, compare_text(state)


def compare_text(state: bpe.BpeState) -> str:
    upcoming, wp = bpe.next_merge(state), bpe.wordpiece_choice(state)
    if upcoming is None:
        return "Every word is a single symbol: nothing is left to merge."
    text = (f"**Next, BPE merges the most frequent pair.** WordPiece would merge **{ui.md(shown_pair(wp.pair))}**: "
            f"score {wp.count} / ({wp.left}·{wp.right}) = {wp.score:.3f}")
    if wp.pair == upcoming.pair:
        return text + ", the same pair as BPE."
    return (text + f", not the most frequent pair (BPE's, count {upcoming.count}). WordPiece prefers pairs whose "
            "parts are rare on their own.")


def guessed_pieces(text: str) -> list[str]:
    """"e s", "e+s" or "e + s" as ["e", "s"]; "low est</w>" as ["low", "est</w>"]."""
    return text.replace("+", " ").split()


def on_check(corpus, merges, word, pair_guess, split_guess):
    """Compare the student's guesses (the next merge; the word's split after it) with BPE's."""
    state = bpe.learn(bpe.parse_corpus(corpus), bpe.check_merges(merges))
    upcoming = bpe.next_merge(state)
    if upcoming is None:
        return "Nothing is left to merge: every word is one symbol."
    lines = [f"**Merge {upcoming.step}: {ui.md(shown_pair(upcoming.pair))} → {ui.md(upcoming.token)}** "
             f"(count {upcoming.count}{', a tie: the pair met first reading the corpus wins' if upcoming.tied else ''})."]
    if pair_guess.strip():
        right = tuple(guessed_pieces(pair_guess)) == upcoming.pair
        lines.append(f"Your merge {ui.md(pair_guess.strip())}: {'✅ right' if right else '❌ not this one'}.")
    word = bpe.check_word(word)
    if word:
        split = bpe.split(word, state.merges + [upcoming])
        lines.append(f"After it, \"{ui.md(word)}\" splits as **{ui.md(' + '.join(split))}**.")
        if split_guess.strip():
            # "</w>" may be left out of a guess: the end of the word is implied.
            right = [p.removesuffix(bpe.END) for p in guessed_pieces(split_guess)] == \
                [p.removesuffix(bpe.END) for p in split if p != bpe.END]
            lines.append(f"Your split {ui.md(split_guess.strip())}: {'✅ right' if right else '❌ not quite'}.")
    return "\n\n".join(lines)


def next_merges(merges):
    return min(bpe.check_merges(merges) + 1, bpe.MAX_MERGES)


def on_train(text, vocab_size, words):
    out = train.train_and_split(text, vocab_size, words)
    rows = [[s["word"]] + [" ".join(r["splits"][i]["pieces"]) for r in out["results"]]
            for i, s in enumerate(out["results"][0]["splits"])]
    sizes = ", ".join(f"{r['algorithm']} {r['vocab_size']:,}" for r in out["results"])
    summary = (f"Trained on {out['trained_on']} with a vocabulary of {out['vocab_size']:,} asked for. "
               f"Vocabularies learned: {sizes} (Unigram stops when the text has no more useful pieces).")
    return pd.DataFrame(rows, columns=["word"] + list(train.ALGORITHMS)), summary


def every_tokenizer_section() -> SimpleNamespace:
    with gr.Row():
        text = gr.Textbox(compute.EXAMPLES[0], label="Your text", scale=4, max_lines=4, max_length=compute.MAX_CHARS)
        split_btn = gr.Button("Split it", variant="primary", scale=1)
    gr.Examples([[e] for e in compute.EXAMPLES], inputs=[text], label="Examples that make a point", elem_id="tok-examples")
    rows = gr.HTML(elem_classes=["lab-token-rows"])
    result_json = ui.result_json()
    return SimpleNamespace(text=text, split=split_btn, rows=rows, json=result_json)


def bpe_section() -> SimpleNamespace:
    with gr.Accordion("BPE, step by step: how a tokenizer learns its pieces", open=True):
        gr.Markdown("Every word starts as characters plus `</w>` (end of word). Each merge joins the most frequent "
                    "adjacent pair everywhere; a tie goes to the pair met first reading the corpus.")
        with gr.Row():
            corpus = gr.Textbox(bpe.COURSE_CORPUS, label="Corpus: one word and its count per line", lines=5,
                                max_length=bpe.MAX_CORPUS_CHARS, scale=2)
            with gr.Column(scale=3):
                merges = gr.Slider(0, bpe.MAX_MERGES, value=0, step=1, label="Merges learned")
                with gr.Row():
                    next_btn = gr.Button("Next merge", variant="primary")
                    reset_btn = gr.Button("Start again")
                word = gr.Textbox("lowest", label="A new word to split with the merges so far", max_length=50)
        summary = gr.Markdown()
        with gr.Row():
            words = ui.table(CORPUS_HEADERS, "The corpus now")
            pairs = ui.table(PAIR_HEADERS, "Adjacent pairs, most frequent first")
        compare = gr.Markdown()
        with gr.Row():
            pair_guess = gr.Textbox(label="Your guess: the next merge (e.g. e s)", max_length=100)
            split_guess = gr.Textbox(label="Your guess: the word's split after it (e.g. low est)", max_length=200)
            check_btn = gr.Button("Check my guesses")
        verdict = gr.Markdown()
        done = ui.table(MERGE_HEADERS, "Merges so far")
    return SimpleNamespace(corpus=corpus, merges=merges, next=next_btn, reset=reset_btn, word=word,
                           outputs=[summary, words, pairs, done, compare], pair_guess=pair_guess,
                           split_guess=split_guess, check=check_btn, verdict=verdict)


def train_section() -> SimpleNamespace:
    with gr.Accordion("Train your own: BPE, WordPiece and Unigram on the same text", open=False):
        with gr.Row():
            text = gr.Textbox("", label="Text to train on (empty: the 352 built-in reviews)", lines=3,
                              max_length=train.MAX_TEXT_CHARS, scale=3)
            with gr.Column(scale=2):
                vocab = gr.Slider(*train.VOCAB_RANGE, value=300, step=10, label="Vocabulary size")
                words = gr.Textbox("unbelievable lowest reviewers wonderful", label="Words to split", max_length=500)
        train_btn = gr.Button("Train and split", variant="primary")
        summary = gr.Markdown()
        table = ui.table(["word"] + list(train.ALGORITHMS), "How each trained tokenizer splits your words")
    return SimpleNamespace(text=text, vocab=vocab, words=words, run=train_btn, outputs=[table, summary])


def build(ctx: Build) -> None:
    ui.explainer(EXPLAINER)
    every = every_tokenizer_section()
    steps = bpe_section()
    trained = train_section()
    tab_word_level.build(ctx)
    tab_mismatch.build(ctx)
    tab_unigram.build(ctx)
    ui.course_links(("gpt2_ids", "GPT-2's ids for “The cat sat on”"), ("wordpiece_lecture", "the lecture's WordPiece splits"), ("wordpiece_textbook", "the textbook's splits"))
    ui.try_this(*TRY_THIS)
    ctx.link(__name__, text=every.text)

    ui.wire([every.split.click, every.text.submit], on_tokenize, every.text, [every.rows, every.json])
    ctx.on_load(on_tokenize, every.text, [every.rows, every.json])
    view = ([steps.corpus, steps.merges, steps.word], steps.outputs)
    ui.wire([steps.merges.change, steps.corpus.blur, steps.word.submit], bpe_view, *view, show_progress="hidden")
    ctx.on_load(bpe_view, *view)
    ui.wire(steps.next.click, next_merges, steps.merges, steps.merges, queue=False)
    ui.wire(steps.reset.click, lambda: 0, None, steps.merges, queue=False)
    ui.wire(steps.check.click, on_check, [steps.corpus, steps.merges, steps.word, steps.pair_guess,
                                          steps.split_guess], steps.verdict)
    ui.wire(trained.run.click, on_train, [trained.text, trained.vocab, trained.words], trained.outputs)
