"""Choosing a model, panel: prompting without training. The prompt exactly as the model reads it and
its two label probabilities (on page load: one forward pass), and on a button the accuracy curve against
the number of examples in the prompt, natural labels beside arbitrary ones."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr
import plotly.graph_objects as go

from labs.choosing import few_shot
from labs.core.models import models
from labs.core.ui import plots, ui
from labs.core.ui.build import Build

LABEL_CHOICES = [("natural: positive / negative", "natural"), ("arbitrary: apple / banana", "arbitrary")]
COLOURS = {"natural": plots.BLUE, "arbitrary": plots.RED}


def example_text(r: dict) -> str:
    ex = r["example"]
    probs = " · ".join(f"P(“{ui.md(w)}”) = **{p:.3f}**" for w, p in ex["probs"].items())
    verdict = "right ✅" if ex["predicted"] == ex["gold"] else "wrong ❌"
    return (f"**{ex['shots']} example(s), order {ex['seed']}: {ex['tokens']} tokens.** {probs} → the model says "
            f"**{ui.md(ex['predicted'])}** ({verdict}; the answer is {ui.md(ex['gold'])}). The label is the one whose "
            "first token is more probable right after “Sentiment:”.")


def on_prompt(model_name, labels, shots):
    """The prompt of the first evaluation review with `shots` examples, and the two label probabilities."""
    loaded = models.load(model_name, *few_shot.FAMILIES)
    r = few_shot.few_shot(loaded, [shots], labels, [0], curve=False).to_json()
    return r["example"]["prompt"], example_text(r) + "\n\n" + ui.model_badge(loaded)


def curve_figure(curves: dict) -> go.Figure:
    fig = go.Figure()
    for kind, r in curves.items():
        xs = [c["shots"] for c in r["curve"]]
        fig.add_trace(go.Scatter(x=xs, y=[100 * c["accuracy"] for c in r["curve"]], mode="lines+markers",
                                 name=f"{kind}: {' / '.join(r['labels'].values())}", line=dict(width=4, color=COLOURS[kind]),
                                 marker=dict(size=12), error_y=dict(
                                     type="data", symmetric=False,
                                     array=[100 * (c["max"] - c["accuracy"]) for c in r["curve"]],
                                     arrayminus=[100 * (c["accuracy"] - c["min"]) for c in r["curve"]])))
    fig.add_hline(y=50, line_dash="dot", annotation_text="chance (50 %)")
    plots.style(fig, "Accuracy against the number of examples in the prompt", 440,
                legend=dict(orientation="h", y=-0.25))
    fig.update_xaxes(title="examples in the prompt (shots)", type="category")
    fig.update_yaxes(title="accuracy on 40 reviews (%)", range=[0, 100])
    return fig


def curve_text(curves: dict) -> str:
    lines = []
    for kind, r in curves.items():
        points = ", ".join(f"{c['shots']}: **{100 * c['accuracy']:.0f} %**" for c in r["curve"])
        lines.append(f"- **{kind}** ({ui.md(' / '.join(r['labels'].values()))}): {points}")
    seeds = len(next(iter(curves.values()))["seeds"])
    return ("Mean over " + f"{seeds} random orders of the examples (the bars span the worst and best order):\n"
            + "\n".join(lines))


def on_curve(model_name):
    """Both curves (natural, then arbitrary labels), shown as each finishes."""
    loaded = models.load(model_name, *few_shot.FAMILIES)  # once per click
    curves = {}
    for kind in ("natural", "arbitrary"):
        yield ui.progress_html(None, f"Scoring 5 × 3 prompts × 40 reviews with {kind} labels…"), \
            curve_figure(curves) if curves else gr.update(), curve_text(curves) if curves else "", gr.update()
        curves[kind] = few_shot.few_shot(loaded, few_shot.SHOTS, kind, few_shot.SEEDS).to_json()
    yield ui.DONE, curve_figure(curves), curve_text(curves), curves


def build() -> SimpleNamespace:
    gr.Markdown("## 2. Prompting without training: zero-, one- and few-shot")
    with gr.Row():
        model = ui.model_dropdown(*few_shot.FAMILIES, label="Causal LM")
        labels = gr.Radio(LABEL_CHOICES, value="natural", label="Label words")
        shots = gr.Slider(0, few_shot.MAX_SHOTS, value=4, step=1, label="Examples in the prompt")
    with gr.Row():
        prompt = gr.Textbox(label="The prompt, exactly as the model reads it", lines=12, max_lines=40,
                            interactive=False, buttons=["copy"], elem_classes=["lab-prompt"])
        answer = gr.Markdown()
    run = gr.Button("Draw the curves: 0, 1, 2, 4, 8 examples × 3 orders × 40 reviews (natural and arbitrary labels)",
                    variant="primary")
    progress = gr.HTML(ui.progress_html(None, "Not drawn yet: press the button (about 10 s per label set on 2 free "
                                        "cores; students who press it together share one computation)."))
    with gr.Row():
        plot, text = gr.Plot(label="Few-shot accuracy"), gr.Markdown()
    with gr.Accordion("The curves as JSON (as /few_shot returns them)", open=False):
        box = gr.JSON()
    return SimpleNamespace(model=model, labels=labels, shots=shots, prompt=prompt, answer=answer, run=run,
                           progress=progress, plot=plot, text=text, box=box)


def wire(ctx: Build, p: SimpleNamespace) -> None:
    inputs, outputs = [p.model, p.labels, p.shots], [p.prompt, p.answer]
    ctx.on_load(on_prompt, inputs, outputs)
    ui.wire([p.labels.change, p.shots.release, p.model.change], on_prompt, inputs, outputs)
    ui.wire(p.run.click, on_curve, p.model, [p.progress, p.plot, p.text, p.box])
