"""Cost & scale, the calculator: training FLOPs ≈ 6·N·D, then time and money on an accelerator, then
energy and carbon. Every figure it starts from is in presets.py with its source.

    FLOPs       = 6 · N · D                      (2·N per token forward, 4·N backward; Kaplan et al. 2020)
    seconds     = FLOPs / (peak · utilisation · devices)
    device-h    = FLOPs / (peak · utilisation) / 3600
    cost        = device-h · price per device-hour
    kWh         = watts · device-h · PUE / 1000
    kg CO₂e     = kWh · grid g/kWh / 1000
"""

from __future__ import annotations

import math

from labs.core.errors import BadInput, check_choice, check_int, check_number
from labs.cost import measure, presets

MAX_PARAMS = 1e15  # a thousand trillion parameters: far beyond any model, far below float overflow
MAX_TOKENS = 1e17
MAX_DEVICES = 10_000_000
LIMITS = {  # name in messages, low, high
    "price_per_hour": ("The price per device-hour ($)", 0.0, 10_000.0),
    "power_watts": ("The power per device (W)", 1.0, 100_000.0),
    "pue": ("The datacenter PUE", 1.0, 3.0),
    "grid_g_per_kwh": ("The grid intensity (g CO₂e per kWh)", 0.0, 2_000.0),
}


SUFFIXES = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}


def read_count(value):
    """"110M", "1.4T", "300e9", "1,000,000" as a number; anything else unchanged (the check explains)."""
    if not isinstance(value, str):
        return value
    text = value.strip().replace(",", "").replace("_", "").replace(" ", "")
    scale = SUFFIXES.get(text[-1:].lower()) if text[-1:].isalpha() and not text[-2:-1].lower() == "e" else None
    try:
        return float(text[:-1]) * scale if scale else float(text)
    except ValueError:
        return value


def check_params(value) -> float:
    value = read_count(value)
    return check_number(value, "The number of parameters N", 0, MAX_PARAMS, low_open=True,
                        hint=" (for example 110e6 or 110M for BERT-base)")


def check_tokens(value) -> float:
    value = read_count(value)
    return check_number(value, "The number of training tokens D", 0, MAX_TOKENS, low_open=True,
                        hint=" (for example 300e9 or 300B for GPT-3)")


def check_utilisation(value) -> float:
    number = check_number(value, "The utilisation", 0, 100, low_open=True, hint=" (a fraction: 0.4 means 40 %)")
    if number > 1:
        raise BadInput(f"The utilisation is a fraction from 0 to 1: write {number:g} % as {number / 100:g}.")
    return number


def check_device(device, precision) -> tuple[presets.Device, str]:
    device = presets.DEVICES[check_choice(device, presets.DEVICE_CHOICES, "The device")]
    precision = check_choice(precision, presets.PRECISIONS, "The precision")
    if device.peak[precision] is None:
        raise BadInput(f"The {device.name} has no {precision} units; pick fp16 or mixed (fp16 compute with an fp32 "
                       "master copy) or fp32.")
    return device, precision


def peak_flops(device: presets.Device, precision: str, utilisation: float) -> tuple[float, str]:
    """Peak dense FLOP/s of one device in this precision, and where the figure comes from. This server's
    peak is the measured burst's achieved FLOP/s ÷ utilisation once measured (so the estimate runs at
    exactly the measured speed), a nominal figure until then."""
    if device.name == "cpu-here":
        burst = measure.measured()
        if burst is not None:
            return (burst.flops_per_second / utilisation,
                    f"measured here at {burst.measured_at} ({burst.device}): {burst.flops_per_second:.3g} FLOP/s "
                    f"achieved ÷ {utilisation:.0%} utilisation")
    return device.peak[precision], device.source


def training_flops(params: float, tokens: float) -> float:
    """6·N·D: 2·N FLOPs per token forward, 4·N backward."""
    return 6.0 * params * tokens


def comparisons(co2_kg: float) -> list[dict]:
    return [{"what": what, "count": co2_kg / kg} for what, kg in presets.COMPARISONS]


def cost(params: float, tokens: float, device: str = presets.DEFAULT_DEVICE, devices: int = 1,
         utilisation: float = presets.UTILISATION, price_per_hour: float | None = None,
         power_watts: float | None = None, pue: float = presets.PUE,
         grid_g_per_kwh: float = presets.GRIDS[presets.DEFAULT_GRID], precision: str = "mixed") -> dict:
    """Training compute, time, money, energy and carbon for N parameters trained on D tokens.
    price_per_hour and power_watts default to the device's (presets.DEVICES)."""
    n, d = check_params(params), check_tokens(tokens)
    dev, precision = check_device(device, precision)
    count = check_int(devices, "The number of devices", 1, MAX_DEVICES)
    util = check_utilisation(utilisation)
    values = {"price_per_hour": dev.price if price_per_hour is None else price_per_hour,
              "power_watts": dev.watts if power_watts is None else power_watts, "pue": pue,
              "grid_g_per_kwh": grid_g_per_kwh}
    values = {key: check_number(v, *LIMITS[key]) for key, v in values.items()}
    peak, peak_source = peak_flops(dev, precision, util)
    flops = training_flops(n, d)
    device_hours = flops / (peak * util) / 3600
    kwh = values["power_watts"] * device_hours * values["pue"] / 1000
    co2_kg = kwh * values["grid_g_per_kwh"] / 1000
    result = {
        "params": n, "tokens": d, "device": dev.name, "devices": count, "utilisation": util,
        "precision": precision, **values,
        "flops": flops, "flops_formula": f"6 × {n:.4g} × {d:.4g} = {flops:.4g}",
        "inference_flops_per_token": 2 * n, "peak_flops_per_device": peak,
        "achieved_flops": peak * util * count,
        "device_hours": device_hours, "days": device_hours / count / 24,
        "cost": device_hours * values["price_per_hour"],
        "kwh": kwh, "co2_kg": co2_kg, "co2_tonnes": co2_kg / 1000, "comparisons": comparisons(co2_kg),
        "sources": {"peak": peak_source, "price": dev.price_source if price_per_hour is None else "your figure",
                    "power": f"{dev.name}: {dev.watts:g} W (datasheet TDP)" if power_watts is None else "your figure",
                    "utilisation": presets.UTILISATION_SOURCE, "pue": presets.PUE_SOURCE,
                    "grid": presets.GRID_SOURCE, "comparisons": presets.COMPARISON_SOURCE},
    }
    if not all(math.isfinite(v) for v in result.values() if isinstance(v, float)):
        raise BadInput("These numbers are too large to compute with; use a smaller model or fewer tokens.")
    return result


def here_years(preset: str = presets.DEFAULT_MODEL) -> dict | None:
    """How long pre-training a preset would take on this server, at the measured speed (None until measured)."""
    burst = measure.measured()
    if burst is None:
        return None
    model = presets.MODELS[preset]
    seconds = training_flops(model.params, model.tokens) / burst.flops_per_second
    return {"model": preset, "seconds": seconds, "years": seconds / (365.25 * 86400), **burst.to_json()}
