"""Cost & scale, the tab: compute, time and money, energy and carbon (this module), then the panels in
tab_measure.py (measured here), tab_memory.py (memory, LoRA) and tab_scaling.py (scaling laws, Part B's
carbon exercise, the course's figures checked)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import gradio as gr

from labs.core.errors import check_choice, check_number
from labs.core.ui import ui
from labs.core.ui.build import Build
from labs.cost import compute, presets, tab_measure, tab_memory, tab_scaling
from labs.cost.figures import compute_figure, count, devices_figure, duration, money, sci

TITLE = "Cost & scale"
ID = "cost"  # the ?tab= link and the folder
EXPLAINER = """**What does it cost to pre-train or fine-tune a language model, and where do the course's numbers
come from?** Pick a published model (its N parameters and D training tokens) and an accelerator: training
takes about 6·N·D FLOPs, which becomes days, dollars, kWh and tonnes of CO₂e. Below: this server's own
measured speed, the memory training needs (full vs LoRA), Chinchilla's scaling law and Part B's carbon exercise."""
TRY_THIS = (
    "B6 (LoRA): in the memory panel, pick LLaMA-2 7B and compare full fine-tuning with LoRA r = 8 on query, value. "
    "Which parts of the memory shrink, and which do not?",
    "B6 (carbon): answer Part B's exercise by hand (GPT-3: 1,287 MWh, 552 t, $4.6M; fine-tune: 10 MWh), then check "
    "with the calculator. Which assumption does each answer rest on?",
    "GPT-3 175B on V100s: how many V100-years at 40 % utilisation? At Lambda Labs' 28 TFLOP/s and $1.50/h, do you "
    "get the quoted $4.6M?",
    "Move the grid from Poland to France for the same run: how many tonnes of CO₂e does the choice of region save?",
    "Measure this server, then pick \"cpu-here\": how many years would BERT-base's pre-training take here?",
    "Chinchilla: for GPT-3's compute (3.15e23), what N and D are compute-optimal? Was GPT-3 over- or under-sized?")
PRECISION_CHOICES = [("mixed (16-bit + fp32 master)", "mixed"), ("fp32", "fp32"), ("fp16", "fp16"),
                     ("bf16", "bf16")]


def on_preset(preset) -> tuple:
    """A preset's published N and D, and where they come from."""
    model = presets.MODELS[check_choice(preset, tuple(presets.MODELS), "The preset")]
    note = f"**{model.name}.** {model.source}" + (f"  \n**Measured:** {model.published}" if model.published else "")
    return count(model.params), count(model.tokens), note


def on_device(device) -> tuple:
    dev = presets.DEVICES[check_choice(device, presets.DEVICE_CHOICES, "The device")]
    return dev.price, dev.watts, f"**{dev.name}.** {dev.source}  \n**Price:** {dev.price_source}"


def on_grid(region):
    return presets.GRIDS.get(region, presets.GRIDS[presets.DEFAULT_GRID])


def preset_of(result: dict) -> str | None:
    return next((m.name for m in presets.MODELS.values()  # the boxes show 3 digits: 2⁴⁰ tokens reads "1.1T"
                 if math.isclose(m.params, result["params"], rel_tol=5e-3)
                 and math.isclose(m.tokens, result["tokens"], rel_tol=5e-3)), None)


def summary(r: dict) -> str:
    """The calculation spelled out, step by step, with the answers in bold."""
    flights = r["comparisons"][0]["count"]
    nominal = r["device"] == "cpu-here" and "measured" not in r["sources"]["peak"]
    peak_note = " (nominal until measured)" if nominal else ""
    return f"""## {duration(r['days'])} · {money(r['cost'])} · {r['co2_tonnes']:,.3g} t CO₂e
### 1. Compute
**6 · N · D = 6 × {sci(r['params'])} × {sci(r['tokens'])} = {sci(r['flops'])} FLOPs** (2·N per token forward, 4·N
backward). Inference: 2·N = {sci(r['inference_flops_per_token'])} FLOPs per token.

### 2. Time and money
One {r['device']} in {r['precision']}: {sci(r['peak_flops_per_device'] / 1e12)} TFLOP/s peak{peak_note} ×
{r['utilisation']:.0%} utilisation × {r['devices']:,} device(s) = {sci(r['achieved_flops'] / 1e12)} TFLOP/s sustained.
- **{duration(r['days'])}** of wall-clock time
- **{r['device_hours']:,.0f} device-hours**
- **{money(r['cost'])}** at ${r['price_per_hour']:,.2f} per device-hour

### 3. Energy and carbon
{r['power_watts']:,.0f} W × {r['device_hours']:,.0f} h × PUE {r['pue']:g} ÷ 1000 = **{r['kwh']:,.0f} kWh**;
× {r['grid_g_per_kwh']:,.0f} g/kWh ÷ 1000 = **{r['co2_kg']:,.0f} kg CO₂e** ({r['co2_tonnes']:,.3g} t)
≈ **{flights:,.3g}** passenger round trips New York ↔ San Francisco, or {r['comparisons'][1]['count']:,.3g} years of
an average person's emissions."""


def sources_text(r: dict) -> str:
    model = presets.MODELS.get(preset_of(r) or "")
    lines = [f"- **{key.capitalize()}**: {ui.md(text)}" for key, text in r["sources"].items()]
    if model and model.published:
        lines.insert(0, f"- **Published ({model.name})**: {model.published}")
    return "#### Where each number comes from\n" + "\n".join(lines)


def on_cost(params, tokens, device, devices, utilisation_percent, price, power, pue, grid, precision):
    """Compute, time and money, energy and carbon; the slider gives utilisation in %."""
    util = check_number(utilisation_percent, "The utilisation (%)", 0, 100, low_open=True) / 100
    r = compute.cost(params, tokens, device, devices, util, price, power, pue, grid, precision)
    return summary(r), sources_text(r), compute_figure(r), devices_figure(r), r


def on_open(preset, device, devices, utilisation_percent, pue, region, precision):
    """The first page: a preset's figures on a device, with every default filled in."""
    params, tokens, preset_note = on_preset(preset)
    price, power, device_note = on_device(device)
    grid = on_grid(region)
    shown = on_cost(params, tokens, device, devices, utilisation_percent, price, power, pue, grid, precision)
    return (params, tokens, price, power, grid, preset_note, device_note, *shown)


def inputs_section() -> SimpleNamespace:
    with gr.Row():
        preset = gr.Dropdown(list(presets.MODELS), value=presets.DEFAULT_MODEL, label="Published model (preset)")
        params = gr.Textbox(count(presets.MODELS[presets.DEFAULT_MODEL].params), label="N: parameters (110M, 7B, 7e9)")
        tokens = gr.Textbox(count(presets.MODELS[presets.DEFAULT_MODEL].tokens), label="D: training tokens (300B, 2T)")
    preset_note = gr.Markdown(elem_classes=["lab-phone-fold"])  # its sources: folded on a phone
    with gr.Row():
        device = gr.Dropdown(list(presets.DEVICE_CHOICES), value=presets.DEFAULT_DEVICE, label="Accelerator")
        precision = gr.Dropdown(PRECISION_CHOICES, value="mixed", label="Precision")
        devices = gr.Number(1, label="Number of devices", precision=0)
        utilisation = gr.Slider(1, 100, value=presets.UTILISATION * 100, step=1, label="Utilisation (% of peak)")
    with gr.Row():
        price = gr.Number(presets.DEVICES[presets.DEFAULT_DEVICE].price, label="$ per device-hour")
        power = gr.Number(presets.DEVICES[presets.DEFAULT_DEVICE].watts, label="Power per device (W)")
        pue = gr.Number(presets.PUE, label="Datacenter PUE")
        region = gr.Dropdown(list(presets.GRIDS), value=presets.DEFAULT_GRID, label="Grid region")
        grid = gr.Number(presets.GRIDS[presets.DEFAULT_GRID], label="Grid g CO₂e per kWh")
    device_note = gr.Markdown(elem_classes=["lab-phone-fold"])
    return SimpleNamespace(preset=preset, params=params, tokens=tokens, preset_note=preset_note, device=device,
                           precision=precision, devices=devices, utilisation=utilisation, price=price, power=power,
                           pue=pue, region=region, grid=grid, device_note=device_note)


def build(ctx: Build) -> None:
    ui.explainer(EXPLAINER)
    x = inputs_section()
    run = gr.Button("Compute the cost", variant="primary")
    with gr.Row():
        result = gr.Markdown(elem_classes=["lab-cost-result"])
        with gr.Column():
            compute_plot = gr.Plot(label="Compute of each preset")
            devices_plot = gr.Plot(label="Device-hours on each accelerator")
    with gr.Accordion("Where each number comes from", open=False):
        sources = gr.Markdown()
    result_json = ui.result_json()
    measure_panel = tab_measure.build()
    memory_panel = tab_memory.build()
    scaling_panel = tab_scaling.build()
    ui.course_links(("bert_cost", "BERT's cost"), ("bert_hardware", "BERT's TPUs"), ("gpt3_time", "GPT-3's training time"), ("chinchilla", "N ≈ 20 × D"), ("mixed_precision", "“halves memory”"))
    ui.try_this(*TRY_THIS)
    ctx.link(__name__, preset=x.preset, device=x.device, precision=x.precision, utilisation=x.utilisation,
            devices=x.devices)

    cost_inputs = [x.params, x.tokens, x.device, x.devices, x.utilisation, x.price, x.power, x.pue, x.grid,
                   x.precision]
    cost_outputs = [result, sources, compute_plot, devices_plot, result_json]
    numbers = [x.params, x.tokens, x.devices, x.price, x.power, x.pue, x.grid]
    ui.wire([run.click, x.utilisation.release, x.precision.input, *(n.submit for n in numbers)], on_cost,
            cost_inputs, cost_outputs)
    for source, handler, filled in ((x.preset, on_preset, [x.params, x.tokens, x.preset_note]),
                                    (x.device, on_device, [x.price, x.power, x.device_note]),
                                    (x.region, on_grid, [x.grid])):  # fill the defaults, then compute
        ui.wire(source.input, handler, source, filled).then(ui.friendly(on_cost), cost_inputs, cost_outputs,
                                                            api_visibility="private")
    ctx.on_load(on_open, [x.preset, x.device, x.devices, x.utilisation, x.pue, x.region, x.precision],
               [x.params, x.tokens, x.price, x.power, x.grid, x.preset_note, x.device_note, *cost_outputs])
    tab_measure.wire(measure_panel)
    tab_memory.wire(ctx, memory_panel)
    tab_scaling.wire(ctx, scaling_panel)
