"""Cost & scale, the memory panel: bytes per parameter for training, activations for a batch × length,
inference, and full fine-tuning vs LoRA for a chosen model."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from labs.core.errors import check_choice
from labs.core.ui import ui
from labs.core.ui.build import Build
from labs.cost import memory, presets
from labs.cost.figures import count, gigabytes, memory_figure

ROWS = (("weights", "weights"), ("gradients", "gradients"), ("master_copy", "fp32 master copy"),
        ("optimizer", "optimizer states"), ("activations", "activations"), ("total", "**total**"))


def on_model(model) -> str:
    return count(memory.architecture_params(check_choice(model, tuple(presets.ARCHITECTURES), "The model")))


def memory_table(r: dict) -> str:
    lora = r["lora"]
    head = "| part | bytes/param | full training |" + (f" LoRA r = {lora['rank']} |" if lora else "")
    lines = [head, "|---|---|---|" + ("---|" if lora else "")]
    for key, label in ROWS:
        per = r["bytes_per_param"].get(key, "")
        cell = f"**{gigabytes(r['training'][key])}**" if key == "total" else gigabytes(r["training"][key])
        lora_cell = f" {gigabytes(lora['bytes'][key])} |" if lora else ""
        lines.append(f"| {label} | {per} | {cell} |{lora_cell}")
    return "\n".join(lines)


def memory_text(r: dict) -> str:
    per = r["bytes_per_param"]
    text = (f"**{r['precision']} + {r['optimizer']}: {per['weights']} + {per['gradients']} + {per['master_copy']} + "
            f"{per['optimizer']} = {per['total']} bytes per parameter** (weights + gradients + master copy + "
            f"optimizer states), × {r['params']:,.0f} parameters.\n\n{memory_table(r)}\n\n"
            f"**Inference:** weights {gigabytes(r['inference']['weights'])} + KV cache for {r['batch']} × "
            f"{r['length']} tokens {gigabytes(r['inference']['kv_cache'])} = "
            f"**{gigabytes(r['inference']['total'])}**.")
    if r["lora"]:
        lora = r["lora"]
        shapes = ", ".join(f"{m['name']} {m['d_in']}→{m['d_out']}" for m in lora["matrices"])
        text += (f"\n\n**LoRA r = {lora['rank']} on {lora['targets']}:** r·(d_in + d_out) per matrix ({shapes}); "
                 f"{lora['formula']} trainable parameters = **{lora['trainable_fraction']:.3%}** of the model. "
                 "Gradients and optimizer states shrink to the adapters'; the frozen weights and the activations "
                 "do not.")
    return text


def on_memory(model, params, precision, optimizer, rank, targets, batch, length):
    r = memory.memory(params, precision, optimizer, rank, batch, length, model, targets)
    return memory_text(r), memory_figure(r), r


def build() -> SimpleNamespace:
    gr.Markdown("## 5. Memory: training vs inference, full fine-tuning vs LoRA")
    with gr.Row():
        model = gr.Dropdown(list(presets.ARCHITECTURES), value=presets.DEFAULT_ARCHITECTURE, label="Model (shape)")
        params = gr.Textbox(count(memory.architecture_params(presets.DEFAULT_ARCHITECTURE)), label="N: parameters")
        precision = gr.Dropdown(list(presets.PRECISIONS), value="mixed", label="Precision")
        optimizer = gr.Radio(list(memory.OPTIMIZERS), value="adam", label="Optimizer")
    with gr.Row():
        rank = gr.Slider(0, 256, value=8, step=1, label="LoRA rank r (0 = full fine-tuning only)")
        targets = gr.Dropdown(list(presets.LORA_TARGETS), value="query, value", label="LoRA adapts")
        batch = gr.Number(8, label="Batch size", precision=0)
        length = gr.Number(512, label="Sequence length", precision=0)
    run = gr.Button("Compute the memory")
    with gr.Row():
        text = gr.Markdown()
        plot = gr.Plot(label="Memory by part")
    with gr.Accordion("The memory result as JSON", open=False):
        box = gr.JSON()
    return SimpleNamespace(model=model, params=params, precision=precision, optimizer=optimizer, rank=rank,
                           targets=targets, batch=batch, length=length, run=run, outputs=[text, plot, box])


def wire(ctx: Build, p: SimpleNamespace) -> None:
    inputs = [p.model, p.params, p.precision, p.optimizer, p.rank, p.targets, p.batch, p.length]
    triggers = [p.run.click, p.precision.input, p.optimizer.input, p.rank.release, p.targets.input,
                p.params.submit, p.batch.submit, p.length.submit]
    ui.wire(triggers, on_memory, inputs, p.outputs)
    ui.wire(p.model.input, on_model, p.model, p.params).then(ui.friendly(on_memory), inputs, p.outputs,
                                                             api_visibility="private")
    ctx.on_load(on_memory, inputs, p.outputs)
