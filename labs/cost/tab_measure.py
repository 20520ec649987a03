"""Cost & scale, the "Measured here" panel: a short real training burst on this server, once per process
(on a button, never on page load), turned into "pre-training BERT-base here would take … years"."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from labs.core.ui import ui
from labs.cost import compute, measure, presets
from labs.cost.figures import duration, sci

NOT_YET = ("Not measured yet on this server. Press the button: a few real training steps of all-MiniLM-L6-v2 "
           "(22.7M parameters), timed. The first press in this server's life runs them; later presses show the same "
           "result.")


def when(burst: measure.Burst) -> str:
    """2026-11-23T09:28:51+00:00 as 2026-11-23 09:28:51 UTC."""
    return burst.measured_at.replace("T", " ").replace("+00:00", " UTC")


def measured_text(burst: measure.Burst) -> str:
    bert = compute.here_years("BERT-base")
    s = presets.STRUBELL_BERT
    a100 = presets.DEVICES["A100"].peak["mixed"] * presets.UTILISATION
    return f"""**Measured {when(burst)} on {burst.device}**, with {burst.model}
({burst.params:,} parameters): {burst.steps} AdamW training steps on a fixed batch of {burst.batch} × {burst.length}
tokens after one warm-up step, {burst.seconds_per_step:.2f} s per step.

- **{burst.tokens_per_second:,.0f} tokens/s** trained
- **{sci(burst.flops_per_second / 1e9)} GFLOP/s achieved** = 6 × {burst.params:,} × {burst.tokens_per_second:,.0f}
  tokens/s (the 6·N rule; N counts every parameter, embeddings too)

**Pre-training BERT-base here would take {duration(bert['years'] * 365.25)}** (6·N·D = {sci(bert['seconds'] *
burst.flops_per_second)} FLOPs at this speed). The published run: {s['gpus']} V100s for {s['hours']} hours
(Strubell et al. 2019). One A100 at 40 % ({sci(a100 / 1e12)} TFLOP/s) is **{a100 / burst.flops_per_second:,.0f}×**
this server's speed. Other work on this server at the same moment slows the burst down: measure on a quiet machine.
Pick **cpu-here** above to price runs at this measured speed."""


def on_measure() -> tuple[str, dict]:
    burst = measure.measure()  # once per process; everyone else waits for the first and shares it
    return measured_text(burst), {**burst.to_json(), "bert_base_years_here": compute.here_years("BERT-base")["years"]}


def build() -> SimpleNamespace:
    gr.Markdown("## 4. Measured here: this server's own training speed")
    button = gr.Button("Measure this server (a few seconds of real training)", variant="secondary")
    text = gr.Markdown(NOT_YET)
    with gr.Accordion("The measurement as JSON", open=False):
        box = gr.JSON()
    return SimpleNamespace(button=button, text=text, box=box)


def wire(panel: SimpleNamespace) -> None:
    ui.wire(panel.button.click, on_measure, None, [panel.text, panel.box], concurrency_limit=1,
            concurrency_id="cost-measure")
