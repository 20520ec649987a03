"""Pre-training, panel 7's fold: C4's cleaning rules (Textbook 20.10.4) on LM Lab's own web-like pages or the
student's, every page's fate and every line and sentence removed, with each rule's count."""

from __future__ import annotations

import gradio as gr
import pandas as pd

from labs.core.ui import course_quotes, ui
from labs.core.ui.build import Build
from labs.pretraining import c4_rules as c4
from labs.pretraining import classifier_filters as cf

BULLETS = "\n".join(f"> {course_quotes.text(f'c4_{k}')}" for k in ("sentences", "offensive", "duplicates",
                                                                       "language", "code"))
COURSE = (f"**Textbook 20.10.4 The C4 Dataset:**\n\n> {course_quotes.text('c4_dataset')}\n>\n{BULLETS}\n\n"
          "LM Lab's note: the paper's own list (Raffel et al. 2020, §2.2) runs here as named rules, in this order: "
          "a page with “lorem ipsum” or a curly bracket goes; a page with a word on a bad-words list goes; a line "
          f"that does not end in terminal punctuation, has fewer than {c4.MIN_WORDS_PER_LINE} words or mentions "
          f"JavaScript goes; a page with fewer than {c4.MIN_SENTENCES} sentences left goes (nltk's Punkt splitter); "
          "every three-sentence span seen before loses its sentences; then a page that is not English with "
          "probability at least your threshold goes (py3langid here, langdetect at 0.99 in C4). C4's bad-words "
          "list (the “List of Dirty, Naughty, Obscene or Otherwise Bad Words”) is not shipped here: LM Lab's "
          "stand-in is the words of profanity-check's own vocabulary that its classifier scores at least the cut "
          "you set when it reads the word alone. Such a list also removes harmless pages that use a listed word "
          "(Dodge et al. 2021 found that C4's list removed text from and about minority groups, LGBTQ+ people among "
          "them). TensorFlow Datasets' code "
          "that built C4 kept lines of 5 words or more and pages of 3 sentences or more.")
HEADERS = ["#", "kept", "removed by", "why", "lines", "sentences", "language", "page"]
REMOVED_HEADERS = ["page", "rule", "line or sentence removed"]


def preview(text: str, n: int = 80) -> str:
    flat = " ⏎ ".join(line.strip() for line in text.splitlines() if line.strip())
    return flat if len(flat) <= n else flat[:n - 1] + "…"


def page_rows(r: dict) -> pd.DataFrame:
    def language(p):
        return "" if p["language"] is None else f"{p['language']} {p['language_probability']:.3f}"
    return pd.DataFrame([[p["number"], "✓" if p["kept"] else "✗", p["rule"], p["reason"], p["lines"],
                          "" if p["sentences"] is None else p["sentences"], language(p), preview(p["text"])]
                         for p in r["pages"]], columns=HEADERS)


def removed_rows(r: dict) -> pd.DataFrame:
    return pd.DataFrame([[x["page"], x["rule"] + (f" (seen in page {x['of']})" if x["of"] else ""), x["text"]]
                         for x in r["removed"]], columns=REMOVED_HEADERS)


def summary(r: dict) -> str:
    def unit(c):
        return c["unit"][:-1] if c["removed"] == 1 else c["unit"]
    steps = "\n".join(f"| {c['rule']} | {c['pages_in']} | {c['removed']} {unit(c)} | {c['pages_out']} |"
                      for c in r["counts"]) or "| (no rule on) | | | |"
    return (f"**{r['kept']} of {len(r['pages'])} pages kept.** Bad-words list: {r['bad_words']} words of "
            f"profanity-check's vocabulary scored ≥ {r['bad_word_probability']:g} alone.\n\n"
            f"| rule | pages in | removed | pages out |\n|---|---|---|---|\n{steps}")


def on_c4(pages, rules, threshold, cut):
    r = c4.clean(pages, rules, threshold, cut).to_json()
    return summary(r), page_rows(r), removed_rows(r), r


def build(ctx: Build) -> dict:
    with gr.Accordion("C4's cleaning rules (T5's corpus)", open=False, elem_id="pretraining-c4"):
        gr.Markdown(COURSE)
        with gr.Row():
            pages = gr.Textbox("", label=f"Your pages (a blank line between two, a line break between lines; empty: "
                                         f"LM Lab's {len(c4.PAGES)})", lines=6, scale=3,
                               max_length=c4.MAX_ALL_CHARS, placeholder=c4.EXAMPLE)
            with gr.Column(scale=2):
                rules = gr.CheckboxGroup(list(c4.RULES), value=list(c4.RULES),
                                         label="C4's rules, in the order they run")
                threshold = gr.Slider(0.5, 1.0, value=cf.DEFAULT_LANGUAGE_PROBABILITY, step=0.005,
                                      label="Language: English with probability at least")
                cut = gr.Slider(0.5, 1.0, value=cf.DEFAULT_BAD_WORD_PROBABILITY, step=0.05,
                                label="Bad-words list: the words profanity-check scores at least")
        button = gr.Button("Clean like C4", variant="primary")
        counts = gr.Markdown()
        table = ui.table(HEADERS, label="Every page: kept, or removed and why", wrap=True)
        removed = ui.table(REMOVED_HEADERS, label="Every line and sentence the rules removed", wrap=True)
        result = ui.result_json()
    inputs, outputs = [pages, rules, threshold, cut], [counts, table, removed, result]
    ui.wire([button.click, rules.change, threshold.release, cut.release], on_c4, inputs, outputs)
    ctx.on_load(on_c4, inputs, outputs)
    return {"c4_pages": pages, "c4_language_threshold": threshold, "c4_bad_word_probability": cut}  # tab.py links them
