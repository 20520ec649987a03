"""Pre-training, panel 7: curating the pre-training data. A web-like corpus (or the student's documents) through
exact deduplication, MinHash near-duplicates, heuristic filters, two classifiers (language identification and
offensive language, each on or off) and a perplexity filter, each document's fate and reason in a table; C4's
rules below it (tab_c4)."""

from __future__ import annotations

import gradio as gr
import pandas as pd

from labs.core.models import models
from labs.core.ui import ui
from labs.core.ui.build import Build
from labs.pretraining import classifier_filters as cf
from labs.pretraining import curation as cu
from labs.pretraining import tab_c4

COURSE = ("**Textbook 20.13.1 The Importance of Data Quality:**\n\n"
          + "\n>\n".join(f"> {cu.QUOTES[k]}" for k in ("dedup", "heuristics", "perplexity", "language", "toxicity"))
          + "\n\nBelow, a small web-like corpus written for LM Lab (or your documents) goes through four real steps "
            "in order: exact duplicates (SHA-1 of the text in lower case with spaces collapsed), near-duplicates "
            f"(datasketch's MinHash, {cu.NUM_PERM} permutations of word {cu.SHINGLE_WORDS}-gram shingles, and its "
            f"MinHashLSH), heuristics (fewer than {cu.MIN_WORDS} words, more than {cu.MAX_SYMBOL_RATIO} symbols per "
            f"word, more than {cu.MAX_REPEATED_LINES:.0%} repeated lines: Gopher's kind of rule), two classifiers "
            "when you turn them on, then the model's perplexity on what is left. Language identification is "
            "py3langid (a naive Bayes over byte n-grams, its model shipped in the package; fastText's model is not "
            "here): a document stays when its most likely language is English with probability at least your "
            "threshold (C4 used 0.99 with langdetect: Raffel et al. 2020, §2.2). The offensive-language classifier "
            "is alt-profanity-check (a linear SVM on TF-IDF word features, trained on English): a document goes "
            "when its probability of being offensive reaches your threshold (0.5 is the package's own `predict`). "
            "Both are off at first: see what perplexity does with French, German, Finnish and Polish, then turn "
            "language identification on, and read each document's scores in the table.")
HEADERS = ["#", "kept", "removed by", "why", "perplexity", "language", "p(offensive)", "words",
           "document"]  # the verdict first: phones


def preview(text: str, n: int = 70) -> str:
    flat = " ⏎ ".join(line.strip() for line in text.splitlines() if line.strip())
    return flat if len(flat) <= n else flat[:n - 1] + "…"


def rows(r: dict) -> pd.DataFrame:
    return pd.DataFrame([[d["number"], "✓" if d["kept"] else "✗", d["step"], d["reason"], d["perplexity"],
                          f"{d['language']} {d['language_probability']:.3f}", round(d["offensive_probability"], 3),
                          d["words"], preview(d["text"])] for d in r["documents"]], columns=HEADERS)


def summary(r: dict) -> str:
    steps = "\n".join(f"| {c['step']} | {c['in']} | {c['removed']} | {c['out']} |" for c in r["counts"])
    pairs = "; ".join(f"{p['document']} ≈ {p['of']} (MinHash {p['minhash_jaccard']:.2f}, exact "
                      f"{p['exact_jaccard']:.2f})" for p in r["near_duplicates"]) or "none"
    kept = [d["perplexity"] for d in r["documents"] if d["kept"]]
    spread = f" Perplexity of what is kept: {min(kept):.0f} to {max(kept):.0f}." if kept else ""
    return (f"**{r['kept']} of {len(r['documents'])} documents kept.**{spread} Perplexity by "
            f"{ui.md(r['model'])}.\n\n| step | in | removed | out |\n|---|---|---|---|\n{steps}\n\n"
            f"**Near-duplicates at Jaccard ≥ {r['near_duplicate_threshold']:g}:** {pairs}.")


def on_curate(documents, threshold, limit, floor, model_name, language=False,
              language_threshold=cf.DEFAULT_LANGUAGE_PROBABILITY, offensive=False,
              offensive_threshold=cf.DEFAULT_OFFENSIVE_PROBABILITY):
    loaded = models.load(model_name or cu.default_model(), *cu.FAMILIES)  # once per click
    r = cu.curate(loaded, documents, threshold, limit, floor, language, language_threshold, offensive,
                  offensive_threshold).to_json()
    return summary(r), rows(r), r


def build(ctx: Build) -> dict:
    gr.Markdown("## 7. Curating the pre-training data")
    gr.Markdown(COURSE)
    with gr.Row():
        documents = gr.Textbox("", label=f"Your documents (a blank line between two; empty: the built-in "
                                         f"{len(cu.builtin_corpus())})", lines=5, scale=3,
                               max_length=cu.MAX_ALL_CHARS, placeholder=cu.EXAMPLE)
        with gr.Column(scale=2):
            threshold = gr.Slider(0.3, 0.95, value=cu.DEFAULT_THRESHOLD, step=0.05,
                                  label="Near-duplicate: Jaccard similarity at least")
            with gr.Row():
                limit = gr.Number(cu.DEFAULT_LIMIT, label="Remove perplexity above", minimum=2)
                floor = gr.Number(cu.DEFAULT_FLOOR, label="Remove perplexity below", minimum=0)
            model = ui.model_dropdown(*cu.FAMILIES, label="Scoring model (causal LM)")
            with gr.Row():
                language = gr.Checkbox(False, label="Language identification (py3langid): keep English")
                language_threshold = gr.Slider(0.5, 1.0, value=cf.DEFAULT_LANGUAGE_PROBABILITY, step=0.005,
                                               label="…with probability at least")
            with gr.Row():
                offensive = gr.Checkbox(False, label="Offensive-language classifier (profanity-check)")
                offensive_threshold = gr.Slider(0.05, 1.0, value=cf.DEFAULT_OFFENSIVE_PROBABILITY, step=0.05,
                                                label="Remove p(offensive) at least")
    button = gr.Button("Curate", variant="primary")
    counts = gr.Markdown()
    table = ui.table(HEADERS, label="Every document: kept, or removed and why", wrap=True)
    result = ui.result_json()
    inputs = [documents, threshold, limit, floor, model, language, language_threshold, offensive, offensive_threshold]
    outputs = [counts, table, result]
    ui.wire([button.click, documents.submit, threshold.release, language.change, language_threshold.release,
             offensive.change, offensive_threshold.release], on_curate, inputs, outputs)
    ctx.on_load(on_curate, inputs, outputs)
    c4 = tab_c4.build(ctx)
    return {"curate_documents": documents, "near_duplicate_threshold": threshold, "perplexity_limit": limit,
            "perplexity_floor": floor, "curate_model": model, "language_filter": language,
            "language_threshold": language_threshold, "offensive_filter": offensive,
            "offensive_threshold": offensive_threshold, **c4}
