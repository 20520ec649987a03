"""Attention, panel "What attention costs, and long documents": attention's cost against the input length (cost.py),
and a long review read four ways (long_document.py). One forward pass is timed against the input length, one layer's
n² part shown beside its n parts, and what happens past the position limit; the four ways are the ones textbook
20.11.2 lists."""

from __future__ import annotations

import gradio as gr
import plotly.graph_objects as go

from labs.attention import cost, long_document, quotes
from labs.core.models import models
from labs.core.ui import plots, ui
from labs.core.ui.build import Build

HEADING = "## What attention costs, and long documents"
EXPLAINER = ("Every token's query meets every token's key, so one layer's attention matrix has **n × n** entries "
             "per head, while the projections and the feed-forward grow with **n** alone. Below, the real model "
             "is timed at growing lengths (medians of 3 runs on this server's CPU, measured once per model and "
             "then kept: other students' requests add noise), and one layer's parts are timed and weighed.")
COST_COURSE = "\n\n".join(f"**{q.cite}:** “{q.text}”" for q in quotes.COST)
LONG_COURSE = "\n\n".join(f"**{q.cite}:** “{q.text}”" for q in quotes.LONG_DOCUMENTS)
COST_HEADERS = ["tokens n", "whole pass, ms", "one layer: QKᵀ, softmax, ·V (n²), ms", "projections (n), ms",
                "feed-forward (n), ms", "attention weights, KB", "feed-forward activations, KB"]
DOC_HEADERS = ["Strategy", "Tokens read", "Which tokens", "cos to positive", "cos to negative", "Verdict"]
STRATEGY_LEGEND = " ".join(f"**{long_document.STRATEGY_WORDS[s]}:** {long_document.STRATEGY_NOTES[s]}."
                           for s in long_document.STRATEGIES) + (" In the chart, blue spans were judged positive and "
                                                                 "orange-red ones negative.")
VERDICT_COLOURS = {"positive": plots.BLUE, "negative": plots.RED}


def cost_rows(result: dict) -> list[list]:
    return [[p["tokens"], p["forward_ms"], p["attention_ms"], p["projections_ms"], p["ffn_ms"],
             round(p["attention_bytes"] / 1024, 1), round(p["ffn_bytes"] / 1024, 1)] for p in result["points"]]


def lines_figure(result: dict, series: list[tuple[str, str, str]], title: str, y_title: str, log: bool = False):
    """One line per (label, field, dash) against the number of tokens."""
    fig = go.Figure()
    tokens = [p["tokens"] for p in result["points"]]
    for (label, key, dash), colour in zip(series, plots.COLORWAY):
        scale = 1 / 1024 if key.endswith("bytes") else 1
        fig.add_trace(go.Scatter(x=tokens, y=[p[key] * scale for p in result["points"]], name=label,
                                 mode="lines+markers", line=dict(color=colour, dash=dash, width=3)))
    fig.update_xaxes(title="tokens n", type="log" if log else "linear")
    fig.update_yaxes(title=y_title, type="log" if log else "linear")
    return plots.style(fig, plots.safe(title), 400, legend=dict(orientation="h", y=-0.3))


def limit_text(result: dict) -> str:
    limit = result["limit"]
    if limit["error"]:
        return (f"**Past the limit.** {ui.md(limit['note'])} Sent {limit['tried_tokens']:,} tokens, the model "
                f"answered:\n\n```\n{limit['error']}\n```")
    return f"**Past the limit.** {ui.md(limit['note'])}"


def on_cost(model_name):
    result = cost.attention_cost(models.load(model_name, *cost.FAMILIES)).to_json()
    last = result["points"][-1]
    summary = (f"**{ui.md(result['model'])}** ({result['architecture']}, {result['layers']} layers, "
               f"{result['heads']} heads, hidden {result['hidden']}, feed-forward {result['intermediate']}), on "
               f"{ui.md(result['device'])} with {result['threads']} threads. At {last['tokens']} tokens one layer's "
               f"attention weights take **{last['attention_bytes'] / 2**20:.1f} MiB** against the feed-forward's "
               f"**{last['ffn_bytes'] / 2**20:.1f} MiB**. {cost.BYTES_NOTE}")
    parts = [("QKᵀ, softmax, ·V (n²)", "attention_ms", "solid"), ("projections Q, K, V, O (n)", "projections_ms", "dash"),
             ("feed-forward (n)", "ffn_ms", "dot")]
    sizes = [("attention weights (n²)", "attention_bytes", "solid"), ("feed-forward activations (n)", "ffn_bytes", "dot")]
    return (summary, lines_figure(result, [("whole forward pass", "forward_ms", "solid")], "One forward pass",
                                  "milliseconds"),
            lines_figure(result, parts, "One layer, part by part", "milliseconds"),
            lines_figure(result, sizes, "One layer's tensors (log-log)", "KB", log=True),
            cost_rows(result), limit_text(result), result)


def doc_rows(result: dict) -> list[list]:
    rows = []
    for r in result["readings"]:
        spans = ", ".join(f"{a}–{b}" for a, b in r["spans"]) if r["strategy"] != "chunks" else \
            f"{len(r['chunks'])} chunks: " + ", ".join(f"{c['start']}–{c['end']}" for c in r["chunks"])
        v = r["verdict"]
        rows.append([long_document.STRATEGY_WORDS[r["strategy"]], r["tokens_read"], spans, v["cos_positive"],
                     v["cos_negative"], v["label"]])
    return rows


def spans_figure(result: dict):
    """The document as a line of tokens; one row per strategy, the spans it reads coloured by its verdict
    (each chunk by its own)."""
    fig = go.Figure()
    for r in result["readings"]:
        pieces = r["chunks"] or [{"start": a, "end": b, **r["verdict"]} for a, b in r["spans"]]
        for i, c in enumerate(pieces):
            name = long_document.STRATEGY_WORDS[r["strategy"]] + (f", chunk {i + 1}" if r["chunks"] else "")
            fig.add_trace(go.Bar(x=[c["end"] - c["start"]], base=[c["start"]], y=[name], orientation="h",
                                 marker_color=VERDICT_COLOURS[c["label"]], showlegend=False,
                                 hovertemplate=f"tokens {c['start']}–{c['end']}: {c['label']}<extra></extra>"))
    fig.update_xaxes(title="token position in the document", range=[0, result["tokens"]])
    fig.update_yaxes(autorange="reversed", type="category")
    return plots.style(fig, "What each strategy reads", 380, barmode="overlay")


def on_document(text, model_name):
    result = long_document.read(models.load(model_name, *long_document.FAMILIES), text).to_json()
    whole = f"\n\nRead whole, it fails:\n\n```\n{result['whole_error']}\n```" if result["whole_error"] else ""
    verdict = (f" The reviewer's own verdict (the last paragraph): **{result['document_verdict']}**."
               if result["builtin"] else "")
    notes = "".join(f"\n\n{ui.md(n)}" for n in result["notes"])
    summary = (f"The document is **{result['tokens']:,} tokens**; {ui.md(result['model'])} reads at most "
               f"**{result['limit']}** at once, its special tokens included.{verdict}{whole}{notes}\n\n"
               f"**The classifier:** {ui.md(result['classifier']['description'])}\n\n{STRATEGY_LEGEND}")
    return summary, doc_rows(result), spans_figure(result), result


def build(ctx: Build) -> None:
    gr.Markdown(HEADING)
    ui.explainer(EXPLAINER)
    gr.Markdown(COST_COURSE, elem_classes=["lab-secondary"])
    with gr.Row():
        cost_model = ui.model_dropdown(*cost.FAMILIES, label="Model to time", family_order=True)
        measure = gr.Button("Measure (the first time takes a while; then it is kept)", variant="primary")
    cost_summary = gr.Markdown()
    with gr.Row():
        cost_plots = [gr.Plot(min_width=300) for _ in range(3)]
    cost_table = ui.table(COST_HEADERS, "The curve, as measured")
    limit, cost_json = gr.Markdown(), ui.result_json()
    gr.Markdown("### A document longer than the model reads")
    gr.Markdown(LONG_COURSE, elem_classes=["lab-secondary"])
    with gr.Row():
        doc_text = gr.Textbox("", label="Your long document (empty: the built-in review)", lines=3, max_lines=8,
                              max_length=long_document.MAX_CHARS, scale=3,
                              placeholder="Leave empty for the built-in review, or paste a long text.")
        with gr.Column(scale=2):
            doc_model = ui.model_dropdown(*long_document.FAMILIES, label="Encoder")
            classify = gr.Button("Classify four ways", variant="primary")
    with gr.Accordion("Read the built-in review (written for LM Lab)", open=False):
        gr.Markdown(ui.md(long_document.DOCUMENT.read_text()))
    doc_summary = gr.Markdown()
    doc_table = ui.table(DOC_HEADERS, "Each strategy's reading and verdict", wrap=True,
                         column_widths=["150px", "90px", "330px", "110px", "110px", "100px"])
    doc_plot, doc_json = gr.Plot(), ui.result_json()
    ctx.link(__name__, cost_model=cost_model, doc_text=doc_text, doc_model=doc_model)
    ui.wire(measure.click, on_cost, [cost_model], [cost_summary, *cost_plots, cost_table, limit, cost_json],
            concurrency_id="attention_cost", concurrency_limit=1)
    ui.wire([classify.click, doc_text.submit], on_document, [doc_text, doc_model],
            [doc_summary, doc_table, doc_plot, doc_json])
