"""Fine-tune, panel: gradient accumulation (textbook 20.11.4). B labelled examples, once as one batch and once as k
micro-batches of B/k with the loss / k: the two gradients, the weights after one AdamW step, and each forward
pass's saved activations and time, measured on the lab's encoder."""

from __future__ import annotations

import gradio as gr
import pandas as pd

from labs.core.ui import ui
from labs.core.ui.build import Build
from labs.finetune import accumulation as acc
from labs.finetune import tasks

TITLE = "Gradient accumulation: k small batches, one big step"
BUTTON = "Compare one batch with k micro-batches"
HEADERS = ["forward + backward pass", "rows", "padded length", "padding tokens", "loss", "loss used",
           "saved activations", "time (s)"]
SENTENCE_TASKS = [(tasks.TASKS[t].split(" (")[0], t) for t in acc.TASKS]
INTRO = ("The gradient of a batch's mean loss is the mean of its examples' gradients, so it can be built in parts: "
         "**k micro-batches of B/k**, each loss divided by k, `loss.backward()` k times (PyTorch *adds* into "
         "`.grad`), then one optimizer step. Only one micro-batch's activations are kept at a time. Below, the lab's "
         "encoder with a new classification head does both on the same B training examples (dropout off, so both "
         "see the same network), and the memory is measured: every tensor the forward pass saves for the backward "
         "pass (`torch.autograd.graph.saved_tensors_hooks`), the weights left out.")


def course_markdown() -> str:
    # The course's fixed text (never typed by a student): its code lines go in code spans as they are.
    lines = "<br>".join(f"`{line}`" if i else ui.md(line) for i, line in enumerate(acc.COURSE_LINES))
    return f"**{ui.md(acc.WHERE)}:**<blockquote>{lines}</blockquote>"


def megabytes(n: int) -> str:
    return f"{n / 2**20:.1f} MB"


def rows(r: dict) -> pd.DataFrame:
    k = r["micro_batches"]
    passes = [("one batch of B", r["full_batch"], "loss")] + [
        (f"micro-batch {i} of {k}", p, f"loss / {k}") for i, p in enumerate(r["micro"], 1)]
    return pd.DataFrame([[name, p["rows"], p["padded_length"], p["pad_tokens"], f"{p['loss']:.6f}", used,
                          megabytes(p["saved_bytes"]), f"{p['seconds']:.2f}"] for name, p, used in passes],
                        columns=HEADERS)


def summary(r: dict) -> str:
    g, step, mem, sec = r["gradient"], r["adamw"], r["memory"], r["seconds"]
    b, k, m = r["batch_size"], r["micro_batches"], r["micro_batch_size"]
    return (f"**B = {b} as {k} micro-batch{'es' if k > 1 else ''} of {m}** on {ui.md(r['model'])} "
            f"({r['parameters']:,} parameters).\n\n- **Gradients:** max |difference| {g['max_abs_difference']:.2e} "
            f"(the largest gradient entry is {g['max_abs_value']:.2e}), cosine similarity {g['cosine']:.10f}: the same "
            f"gradient, up to float rounding (sums added in another order).\n- **After one AdamW step** "
            f"(lr {r['learning_rate']:g}): the weights differ by at most {step['max_abs_difference']:.2e}, the step "
            f"itself moves them by up to {step['max_abs_step']:.2e} (Adam divides by |gradient|, so where a gradient "
            f"is near 0 its rounding shows most).\n- **Saved activations:** {megabytes(mem['micro_batch_bytes'])} per "
            f"micro-batch against {megabytes(mem['full_batch_bytes'])} for the whole batch "
            f"({mem['ratio']:.0%}).\n- **Time** (this machine, now): {sec['full_batch']:.2f} s for the one batch, "
            f"{sec['accumulated']:.2f} s for the {k} micro-batches.\n- **Padding:** {ui.md(r['padding'])}")


def on_compare(model, task, batch_size, micro_batches, seed):
    r = acc.gradient_accumulation(model, task, batch_size, micro_batches, seed)
    return summary(r), rows(r), r


def build(ctx: Build, model) -> dict:
    """The panel (the model is the lab's encoder dropdown); returns the inputs a link may set."""
    d, limits = acc.DEFAULTS, acc.LIMITS
    with gr.Accordion(TITLE, open=False, elem_id="ft-accumulation"):
        gr.Markdown(INTRO)
        gr.Markdown(course_markdown(), elem_classes=["lab-secondary"])
        with gr.Row():
            task = gr.Dropdown(SENTENCE_TASKS, value=d["task"], label="Task (its built-in training examples)")
            batch = gr.Slider(*limits["batch_size"], value=d["batch_size"], step=1, label="Batch size B")
            micro = gr.Slider(*limits["micro_batches"], value=d["micro_batches"], step=1,
                              label="Micro-batches k (k divides B)")
            seed = gr.Number(d["seed"], label="Seed (examples, new head)", precision=0, minimum=0)
        button = gr.Button(BUTTON, variant="primary")
        words = gr.Markdown(elem_id="ft-accumulation-summary")
        table = ui.table(HEADERS, "Each forward and backward pass", wrap=True)
        result = ui.result_json()
    ui.wire(button.click, on_compare, [model, task, batch, micro, seed], [words, table, result],
            show_progress="minimal")
    return {"acc_task": task, "acc_batch": batch, "acc_micro": micro, "acc_seed": seed}
