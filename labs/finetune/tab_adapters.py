"""Fine-tune, panel "Adapters and LoRA at inference": bottleneck adapters and LoRA learn the same task; then the
parameters each trains, LoRA merged into the weights (the same predictions), the time per prediction and the bytes
stored per task. One shared job."""

from __future__ import annotations

import gradio as gr
import pandas as pd

from labs.core.ui import ui
from labs.core.ui.build import Build
from labs.finetune import adapters_lora as al
from labs.finetune import tab_long_run
from labs.finetune.training import RunResult, Step

TITLE = "Adapters and LoRA at inference: merged weights, time per prediction, storage per task"
BUTTON = "Train both and measure"
HEADERS = ["method", "trains (parameters)", "validation accuracy", "ms per prediction", "stored per task"]
LIBRARY_NOTE = ("**Which library.** LoRA is peft's (`LoraConfig`, `merge_and_unload`). Bottleneck adapters come from "
                "no library here: peft 0.21.2 has none, and AdapterHub's `adapters` 1.3.0 requires transformers "
                "~=4.57.6 and does not import beside transformers 5.23 (it imports `HfFolder`, which huggingface_hub "
                "1.x removed). So LM Lab inserts Houlsby's adapter itself (`labs/finetune/bottleneck.py`, about 20 "
                "lines: h + W_up·GELU(W_down·h) after each sub-layer's output projection, W_up starting at zero); its "
                "counts are LM Lab's, checked against 2·L·(2·d·m + d + m).")


def course_markdown() -> str:
    return "<br>".join(f"**{where}, “{title}”:** “{ui.md(quote)}”" for where, title, quote in al.COURSE)


def size(n: int) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 1e6 else f"{n / 1e3:.1f} kB"


def rows(r: dict) -> pd.DataFrame:
    a, lo = r["adapter"], r["lora"]
    total = lo["total_params"]
    return pd.DataFrame([
        [f"bottleneck adapters (m = {a['size']})", f"{a['adapter_params']:,} adapters + {a['head_params']:,} head "
         f"({100 * a['trainable_params'] / a['total_params']:.2f} %)", f"{a['accuracy']:.1%}",
         f"{a['ms_per_prediction']:.1f}", size(a["task_bytes"])],
        [f"LoRA r = {lo['strategy'][6:]}, unmerged", f"{lo['lora_params']:,} A·B + head = {lo['trainable_params']:,} "
         f"({100 * lo['trainable_params'] / total:.2f} %, peft's count)", f"{lo['accuracy_unmerged']:.1%}",
         f"{lo['ms_unmerged']:.1f}", f"{size(lo['adapter_file_bytes'])} (peft's adapter file)"],
        ["LoRA merged (merge_and_unload)", "— (W + B·A, no extra weights)", f"{lo['accuracy_merged']:.1%}",
         f"{lo['ms_merged']:.1f}", f"{size(lo['full_model_bytes'])} (the whole model)"]], columns=HEADERS)


def summary(r: dict) -> str:
    lo, a, base = r["lora"], r["adapter"], r["bert_base"]
    return (f"**Merged, LoRA gives the same predictions on {lo['same_predictions']} of {lo['validation']} validation "
            f"reviews** (largest logit difference {lo['max_logit_difference']:.1e}, float rounding), and the merged "
            f"model is the plain architecture again ({lo['merged_params']:,} parameters, {lo['lora_modules_left']} LoRA "
            f"modules left). Time per prediction is the median of {r['timing_repeats']} one-sentence passes on this "
            f"busy server: a rough figure (`python -m tests.benchmarks lora_merge` measures it carefully). "
            f"**Storage per task:** LoRA's A and B alone are {size(lo['lora_matrix_bytes'])} "
            f"({100 * lo['lora_matrix_bytes'] / lo['full_model_bytes']:.2f} % of the model's file); peft's file also "
            f"keeps the trained head. **Adapters' share:** {a['adapter_params']:,} = 2·{a['layers']}·(2·{a['hidden']}·"
            f"{a['size']} + {a['hidden']} + {a['size']}) = {a['percent']:.2f} % of {ui.md(r['model'])}; on BERT-Base's "
            f"architecture at m = {base['size']}, {base['adapter_params']:,} of {base['base_params']:,} = "
            f"**{base['percent']:.2f} %** (counted on the architecture: BERT-Base's weights are not needed, and its "
            "accuracy is not measured here), where the textbook says about 3.6 %.")


async def on_measure(model, adapter_size, lora_rank, epochs, seed, request: gr.Request = None):
    plan = al.check_plan(model, adapter_size, lora_rank, epochs, seed)
    follow = ui.Follow(al.ticket(plan, owner=getattr(request, "session_hash", None), page=True), step_words)
    async for line in follow:
        yield {"progress": line}
    result = next((e for e in follow.events if isinstance(e, dict)), None)
    if follow.gone or result is None:
        yield {"progress": follow.gone_html() if follow.gone else ui.progress_html(None, "Stopped.")}
        return
    yield {"progress": ui.DONE, "table": rows(result), "words": summary(result), "result": result}


def step_words(step: Step, events: list) -> tuple[float, str]:
    """The progress line: which method trains (adapters, then LoRA) and its step."""
    runs = sum(isinstance(e, RunResult) for e in events)
    return runs / 2, f"{('adapters', 'LoRA')[min(runs, 1)]}: step {step.step} of {step.total_steps}"


def build(ctx: Build, model) -> dict:
    with gr.Accordion(TITLE, open=False, elem_id="ft-adapters"):
        gr.Markdown(f"Bottleneck adapters and LoRA (peft) learn the built-in sentiment task ({al.TRAIN_EXAMPLES} "
                    f"reviews, learning rate {al.ADAPTER_RATE:g}); then LoRA is merged into the weights and both are "
                    "measured as a deployed model would be used.")
        gr.Markdown(course_markdown(), elem_classes=["lab-secondary"])
        with gr.Row():
            adapter_size = gr.Slider(1, 256, value=al.ADAPTER_SIZE, step=1, label="Adapter bottleneck size m")
            lora_rank = gr.Slider(1, 64, value=al.LORA_RANK, step=1, label="LoRA rank r")
            epochs = gr.Slider(1, 10, value=al.EPOCHS, step=1, label="Epochs")
            seed = gr.Number(0, label="Seed", precision=0, minimum=0)
        controls = tab_long_run.buttons(BUTTON)
        progress = gr.HTML()
        table, words = ui.table(HEADERS, "Each method after training", wrap=True), gr.Markdown()
        gr.Markdown(LIBRARY_NOTE, elem_classes=["lab-secondary"])
        result = ui.result_json()
    outputs = dict(progress=progress, table=table, words=words, result=result)
    tab_long_run.wire(controls, on_measure, [model, adapter_size, lora_rank, epochs, seed], outputs, [table])
    return {"adapter_size": adapter_size, "lora_rank": lora_rank, "adapter_epochs": epochs}
