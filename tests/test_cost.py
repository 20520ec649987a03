"""Cost & scale: every formula against hand-computed values, bad input, the LoRA count against peft on a
real model, the measured burst (real, once), the API and the tab in a browser."""

from __future__ import annotations

import math

import pytest
from conftest import open_tab, screenshot
from gradio_client.exceptions import AppError

from labs.core.errors import BadInput
from labs.core.models import models
from labs.cost import compute, course, measure, memory, presets, scaling
from labs.cost import tab as cost_tab

# ------------------------------------------------------------ compute, time, money, energy


def test_six_n_d_exactly():
    assert compute.training_flops(110e6, 131e9) == 6 * 110e6 * 131e9
    assert compute.cost(1000, 2000)["flops"] == 12_000_000
    assert compute.cost(1000, 2000)["inference_flops_per_token"] == 2000


def test_gpt3_and_chinchilla_compute():
    gpt3 = compute.cost(175e9, 300e9)["flops"]
    assert gpt3 == pytest.approx(3.15e23, rel=0.01)
    assert gpt3 == pytest.approx(3.14e23, rel=0.01)  # Brown et al. 2020, table D.1
    chinchilla = presets.MODELS["Chinchilla 70B"]
    assert (chinchilla.params, chinchilla.tokens) == (70e9, 1.4e12)
    assert compute.training_flops(chinchilla.params, chinchilla.tokens) == pytest.approx(5.88e23)
    assert compute.training_flops(chinchilla.params, chinchilla.tokens) == pytest.approx(5.76e23, rel=0.03)


def test_time_money_energy_carbon_by_hand():
    # 6 × 1e9 × 1e10 = 6e19 FLOPs; one V100 at 125e12 × 0.5 = 62.5e12 FLOP/s → 960,000 s = 266.67 h.
    r = compute.cost(1e9, 1e10, "V100", devices=4, utilisation=0.5, price_per_hour=2.0, power_watts=300, pue=1.5,
                     grid_g_per_kwh=400, precision="fp16")
    hours = 6e19 / (125e12 * 0.5) / 3600
    assert r["device_hours"] == pytest.approx(hours) == pytest.approx(266.6667, rel=1e-6)
    assert r["days"] == pytest.approx(hours / 4 / 24)  # four devices share the work
    assert r["cost"] == pytest.approx(hours * 2.0)
    assert r["kwh"] == pytest.approx(300 * hours * 1.5 / 1000)  # kWh = W × h × PUE / 1000 = 120 kWh
    assert r["kwh"] == pytest.approx(120.0)
    assert r["co2_kg"] == pytest.approx(120.0 * 400 / 1000)  # kg = kWh × g/kWh / 1000 = 48 kg
    assert r["comparisons"][0]["count"] == pytest.approx(48 / (1984 * 0.4536))


def test_device_defaults_and_precisions():
    r = compute.cost(1e9, 1e10, "A100")
    assert (r["price_per_hour"], r["power_watts"], r["peak_flops_per_device"]) == (3.0, 400, 312e12)
    assert compute.cost(1e9, 1e10, "A100", precision="fp32")["peak_flops_per_device"] == 19.5e12
    assert compute.cost(1e9, 1e10, "H100", precision="bf16")["peak_flops_per_device"] == 989e12
    assert compute.cost(1e9, 1e10, "T4", precision="fp16")["peak_flops_per_device"] == 65e12
    with pytest.raises(BadInput, match="no bf16"):
        compute.cost(1e9, 1e10, "T4", precision="bf16")


@pytest.mark.parametrize("args, match", [
    ((0, 1e9), "parameters N must be a number above 0"),
    ((-5, 1e9), "parameters N"),
    ((math.nan, 1e9), "parameters N"),
    ((1e9, math.inf), "training tokens D"),
    (("lots", 1e9), "parameters N"),
    ((1e300, 1e300), "parameters N"),
    ((1e9, 1e9, "TPU"), "The device must be one of"),
    ((1e9, 1e9, "A100", 0), "number of devices"),
    ((1e9, 1e9, "A100", 2.5), "number of devices"),
    ((1e9, 1e9, "A100", 1, 40), "write 40 % as 0.4"),
    ((1e9, 1e9, "A100", 1, 0), "utilisation"),
    ((1e9, 1e9, "A100", 1, 0.4, -1), "price per device-hour"),
    ((1e9, 1e9, "A100", 1, 0.4, None, "many"), "power per device"),
    ((1e9, 1e9, "A100", 1, 0.4, None, None, 0.5), "PUE"),
    ((1e9, 1e9, "A100", 1, 0.4, None, None, 1.1, 1e9), "grid intensity"),
    ((1e9, 1e9, "A100", 1, 0.4, None, None, 1.1, 400, "int8"), "precision must be one of"),
])
def test_bad_input_gives_a_sentence(args, match):
    with pytest.raises(BadInput, match=match):
        compute.cost(*args)


def test_the_largest_inputs_stay_finite():
    r = compute.cost(compute.MAX_PARAMS, compute.MAX_TOKENS, "cpu-here", 1, 0.01, 10_000, 100_000, 3, 2000)
    assert all(math.isfinite(v) for v in r.values() if isinstance(v, float))


# ------------------------------------------------------------ scaling laws and the course's figures


def test_chinchilla_split():
    r = scaling.chinchilla(3.15e23)
    assert r["tokens"] / r["params"] == pytest.approx(20)
    assert 6 * r["params"] * r["tokens"] == pytest.approx(3.15e23)
    assert r["params"] == pytest.approx(math.sqrt(3.15e23 / 120))
    # Hoffmann et al. table 3: 1B parameters → 20.2B tokens, within 1 %.
    params, tokens = scaling.optimal_split(6 * 1e9 * 20.2e9)
    assert tokens == pytest.approx(20.2e9, rel=0.01) and params == pytest.approx(1e9, rel=0.01)
    with pytest.raises(BadInput, match="compute budget"):
        scaling.chinchilla("a lot")
    with pytest.raises(BadInput, match="compute budget"):
        scaling.chinchilla(1e300)


def test_carbon_exercise_by_hand():
    r = course.carbon_exercise()
    assert r["finetune_tonnes"] == pytest.approx(10 * 552 / 1287) == pytest.approx(4.289, abs=1e-3)
    assert r["finetune_cost"] == pytest.approx(10 * 4.6e6 / 1287) == pytest.approx(35742, abs=1)
    assert r["saving_percent"] == pytest.approx(100 * (1 - 10 / 1287)) == pytest.approx(99.22, abs=0.01)
    assert any("Assumption" in step for step in r["steps"])
    with pytest.raises(BadInput, match="pre-training energy"):
        course.carbon_exercise(0)


def test_course_figures_name_their_disagreements():
    from labs.core.ui import course_quotes

    rows = {r["figure"]: r for r in course.course_figures()}
    assert len(rows) >= 6 and all(r["estimate"] and r["note"] for r in rows.values())
    assert "Inverted" in next(r["note"] for f, r in rows.items() if "N ≈ 20 D" in f)
    assert "$4.69M" in rows["GPT-3's cost"]["estimate"]  # Lambda's 28 TFLOP/s, $1.50/h
    energy = rows["GPT-3's energy and CO₂"]
    assert energy["quotes"] == ["- Energy: 1,287 MWh", "- CO2: 552 tons"]  # the handout's words, not a paraphrase
    assert "1,289 MWh, 553 t" in energy["estimate"]  # Patterson's hardware reproduces the published figures
    # Every quoted figure is a course_quotes entry (checked verbatim there); a figure in no document says so.
    texts = {q.text for q in course_quotes.QUOTES}
    for r in rows.values():
        assert all(q in texts for q in r["quotes"])
        assert bool(r["quotes"]) == (r["source"] != course.NOT_IN_THE_COURSE)
        assert not r["note"].startswith("Agrees") or r["quotes"]
        assert len(r["quote_sources"]) == len(r["quotes"])


def test_every_figure_the_course_gives_for_bert_stands_beside_the_others():
    """Errata 17 and 18 whole: the lecture's three cost figures, the textbook's and Appendix E's, and the three
    hardware counts (the lecture's, the textbook's and Appendix A's "TPU pods"), each with its own place."""
    from labs.core.ui import course_quotes

    rows = {r["figure"]: r for r in course.course_figures()}
    cost, hardware = rows["BERT's pre-training cost"], rows["BERT's hardware"]
    assert "BERT-large\t\\$25K" in cost["quotes"] and "$7,000--$12,000" in " ".join(cost["quotes"])
    assert "Appendix E: Training Cost Analysis" in " ".join(cost["quote_sources"])
    assert course_quotes.text("cost_tpu_pods") in hardware["quotes"] and "64 TPU chips" in hardware["estimate"]
    assert hardware["note"].startswith("Differs") and "not pods" in hardware["note"]
    from labs.cost import tab_scaling
    table = tab_scaling.course_table()
    assert "Appendix A: BERT Architecture Specifications" in table and "16 TPU pods · 64 TPU pods" in table


def test_the_memory_row_follows_errata_14():
    """The textbook's "halves" against the calculator: 16 bytes per parameter either way, activations halve."""
    from labs.cost.memory import memory

    row = next(r for r in course.course_figures() if r["figure"] == "Training memory with mixed precision")
    assert row["quotes"] == ["Mixed precision approximately halves memory usage"] and row["note"].startswith("Differs")
    m, f = (memory(110e6, p)["training"] for p in ("mixed", "fp32"))
    assert m["total"] - m["activations"] == f["total"] - f["activations"]
    assert m["activations"] * 2 == f["activations"]
    flops = next(r for r in course.course_figures() if r["figure"] == "GPT-3's training compute")
    assert flops["source"] == course.NOT_IN_THE_COURSE and "Agrees" not in flops["note"]


def test_every_preset_has_a_source():
    for table in (presets.MODELS, presets.DEVICES, presets.ARCHITECTURES):
        assert all(item.source for item in table.values())
    assert all(d.price_source for d in presets.DEVICES.values())
    assert presets.DEVICES["A100"].peak["bf16"] == 312e12 and presets.DEVICES["V100"].peak["fp32"] == 15.7e12


# ------------------------------------------------------------ memory and LoRA


def test_mixed_precision_adam_is_16_bytes_per_parameter():
    assert memory.bytes_per_param("mixed", "adam")["total"] == 16
    assert memory.bytes_per_param("fp32", "adam")["total"] == 16
    assert memory.bytes_per_param("fp32", "sgd")["total"] == 8
    r = memory.memory(1e9, "mixed", "adam", 0, 1, 1, "BERT-base")
    parts = r["training"]
    assert parts["weights"] + parts["gradients"] + parts["master_copy"] + parts["optimizer"] == 16e9
    assert r["inference"]["weights"] == 2e9 and r["lora"] is None


def test_activations_follow_korthikanti():
    arch = presets.ARCHITECTURES["BERT-base"]
    s, b, h, a, layers = 512, 8, 768, 12, 12
    assert memory.activation_bytes(arch, b, s, "mixed") == layers * s * b * h * (34 + 5 * a * s / h)
    assert memory.activation_bytes(arch, b, s, "fp32") == 2 * memory.activation_bytes(arch, b, s, "mixed")


def test_lora_closed_formula_by_hand():
    arch = presets.ARCHITECTURES["BERT-base"]
    assert memory.lora_params(arch, 8, "query, value") == 12 * 2 * 8 * (768 + 768)
    small = presets.ARCHITECTURES["SmolLM2-135M"]  # grouped-query attention: V is 576 → 192
    assert memory.lora_params(small, 4, "query, value") == 30 * 4 * ((576 + 576) + (576 + 192))
    with pytest.raises(BadInput, match="LoRA rank"):
        memory.memory(110e6, lora_rank=-1)
    with pytest.raises(BadInput, match="more than the model"):
        memory.memory(1000, lora_rank=8)
    with pytest.raises(BadInput, match="optimizer must be one of"):
        memory.memory(110e6, optimizer="lion")


@pytest.mark.parametrize("targets, peft_targets", [
    ("query, value", ["query", "value"]),
    ("all linear", r".*encoder\.layer\.\d+\.(attention\.self\.(query|key|value)|attention\.output\.dense|"
                   r"intermediate\.dense|output\.dense)"),
])
def test_lora_count_equals_peft_on_minilm(targets, peft_targets):
    from peft import LoraConfig, get_peft_model

    model, _ = models.load_for_task(models.MINILM_NAME, "sequence_classification", num_labels=2)
    arch = presets.ARCHITECTURES["all-MiniLM-L6-v2"]
    assert (model.config.num_hidden_layers, model.config.hidden_size, model.config.intermediate_size) == (
        arch.layers, arch.hidden, arch.ffn)
    peft_model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=peft_targets))
    trainable, total = peft_model.get_nb_trainable_parameters()
    assert memory.lora_params(arch, 8, targets) == trainable
    assert total == pytest.approx(presets.ARCHITECTURE_PARAMS["all-MiniLM-L6-v2"] + trainable, rel=0.01)


# ------------------------------------------------------------ measured here


def test_the_burst_is_real_and_runs_once():
    first = measure.measure()
    assert measure.runs == 1
    assert first.params == sum(p.numel() for p in models.load_for_task(
        models.MINILM_NAME, "sequence_classification", num_labels=2)[0].parameters())
    assert first.tokens_per_second == pytest.approx(first.batch * first.length / first.seconds_per_step)
    assert first.flops_per_second == pytest.approx(6 * first.params * first.tokens_per_second)
    assert first.measured_at and first.device
    assert measure.measure() is first and measure.runs == 1  # the second call does not re-measure
    # cpu-here now runs at exactly the measured speed, whatever the utilisation
    r = compute.cost(110e6, 131e9, "cpu-here", utilisation=0.3)
    assert r["peak_flops_per_device"] * 0.3 == pytest.approx(first.flops_per_second)
    assert "measured here" in r["sources"]["peak"]
    text, box = cost_tab.tab_measure.on_measure()
    assert cost_tab.tab_measure.when(first) in text and "would take" in text and box["measured_at"] == first.measured_at


# ------------------------------------------------------------ handlers, API, browser


def test_handlers_return_values():
    params, tokens = cost_tab.on_open("GPT-3 175B", "V100", 1, 40, 1.1, presets.DEFAULT_GRID, "mixed")[:2]
    assert (params, tokens) == ("175B", "300B")
    assert compute.check_params("1.4T") == 1.4e12 and compute.check_tokens("2,000,000") == 2e6
    with pytest.raises(BadInput, match="110M"):
        compute.check_params("a lot")
    shown = cost_tab.on_cost(175e9, 300e9, "V100", 1, 40, 2.48, 300, 1.1, 480, "mixed")
    assert "3.15 × 10²³ FLOPs" in shown[0] and shown[-1]["device_hours"] == pytest.approx(1.75e6)
    with pytest.raises(BadInput):
        cost_tab.on_cost(175e9, 300e9, "V100", 1, 0, 2.48, 300, 1.1, 480, "mixed")


def test_cost_api(client):
    r = client.predict(175e9, 300e9, api_name="/cost")
    assert r["flops"] == pytest.approx(3.15e23) and r["device"] == "A100" and r["cost"] > 0
    assert {"flops", "device_hours", "days", "cost", "kwh", "co2_kg"} <= set(r)
    r = client.predict(1e9, 1e10, "V100", 4, 0.5, 2.0, 300, 1.5, 400, "fp16", api_name="/cost")
    assert r["kwh"] == pytest.approx(120.0) and r["co2_kg"] == pytest.approx(48.0)


def test_memory_and_chinchilla_api(client):
    r = client.predict(110e6, "mixed", "adam", 8, 8, 512, "BERT-base", api_name="/memory")
    assert r["bytes_per_param"]["total"] == 16 and r["lora"]["trainable_params"] == 294_912
    r = client.predict(3.15e23, api_name="/chinchilla")
    assert r["tokens"] / r["params"] == pytest.approx(20)


@pytest.mark.parametrize("args, api, match", [
    ((0, 1e9), "/cost", "above 0"),
    (("ten", 1e9), "/cost", "parameters N"),
    ((1e9, 1e9, "TPU"), "/cost", "device must be one of"),
    ((-1.0,), "/memory", "parameters N"),
    ((1e308,), "/chinchilla", "compute budget"),
])
def test_api_bad_input(client, args, api, match):
    with pytest.raises(AppError, match=match):
        client.predict(*args, api_name=api)


def test_cost_tab_in_the_browser(page):
    open_tab(page, "Cost & scale")
    page.get_by_text("6 · N · D = 6 × 1.1 × 10⁸").first.wait_for(timeout=60000)
    plots = page.locator(".js-plotly-plot:visible")
    plots.nth(3).wait_for(timeout=60000)  # compute, devices, memory, scaling
    assert plots.count() >= 4
    page.get_by_text("Inverted").filter(visible=True).first.wait_for()  # the course's figures, checked
    page.get_by_label("Published model (preset)").click()
    page.get_by_role("option", name="GPT-3 175B").click()
    page.get_by_text("3.15 × 10²³ FLOPs").first.wait_for(timeout=30000)
    screenshot(page, "cost")
    assert page.outside_requests == []
