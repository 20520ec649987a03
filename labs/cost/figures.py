"""Cost & scale, the plots (plotly, the house style of labs/core/ui/plots.py) and number formatting for people:
3.15 × 10²³, $4.34M, 73,000 days, 4.6 GB."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from labs.core.ui import plots
from labs.cost import presets
from labs.cost.compute import training_flops
from labs.cost.scaling import optimal_split

SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def sci(x: float, digits: int = 3) -> str:
    """3.15e23 as "3.15 × 10²³" (plain below 10,000)."""
    if x == 0 or 1e-3 <= abs(x) < 1e4:
        return f"{x:,.{digits}g}"
    exponent = math.floor(math.log10(abs(x)))
    mantissa = x / 10 ** exponent
    return f"{mantissa:.{digits}g} × 10{str(exponent).translate(SUPERSCRIPT)}"


def money(x: float) -> str:
    for size, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if x >= size:
            return f"${x / size:,.3g}{unit}"
    return f"${x:,.2f}" if x < 100 else f"${x:,.0f}"


def count(x: float) -> str:
    """A large count in words: 110M, 1.4T (parameters, tokens)."""
    for size, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if x >= size:
            return f"{x / size:,.3g}{unit}"
    return f"{x:,.3g}"


def duration(days: float) -> str:
    hours = days * 24
    if hours < 1:
        return f"{hours * 60:,.1f} minutes"
    if days < 2:
        return f"{hours:,.1f} hours"
    if days < 730:
        return f"{days:,.1f} days"
    return f"{days / 365.25:,.3g} years"


def gigabytes(n_bytes: float) -> str:
    return f"{n_bytes / 1e9:,.3g} GB" if n_bytes >= 1e8 else f"{n_bytes / 1e6:,.3g} MB"


def compute_figure(result: dict) -> go.Figure:
    """Training FLOPs (6·N·D) of every preset, log scale: the chosen one in red (or the student's own N
    and D as one more bar)."""
    names = list(presets.MODELS)
    values = [training_flops(m.params, m.tokens) for m in presets.MODELS.values()]
    mine = [m.name for m in presets.MODELS.values() if math.isclose(m.params, result["params"], rel_tol=5e-3)
            and math.isclose(m.tokens, result["tokens"], rel_tol=5e-3)]
    if not mine:
        names, values, mine = names + ["your N and D"], values + [result["flops"]], ["your N and D"]
    fig = go.Figure(go.Bar(x=values, y=[plots.safe(n) for n in names], orientation="h",
                           marker_color=[plots.RED if n in mine else plots.BLUE for n in names],
                           text=[sci(v) for v in values], textposition="outside", textfont=dict(size=15),
                           cliponaxis=False, hovertemplate="%{y}: %{x:.3g} FLOPs<extra></extra>"))
    plots.style(fig, "Training compute 6·N·D (log scale)", 420)
    low, high = math.log10(min(values)), math.log10(max(values))
    fig.update_xaxes(type="log", title="FLOPs", range=[math.floor(low) - 0.5, high + 1.2])
    fig.update_yaxes(autorange="reversed", tickfont=dict(size=16))
    return fig


def devices_figure(result: dict) -> go.Figure:
    """Device-hours for this N and D on every accelerator at the chosen utilisation (mixed precision;
    fp32 where the device has no 16-bit units)."""
    flops, util = result["flops"], result["utilisation"]
    rows = []
    for device in presets.DEVICES.values():
        peak = result["peak_flops_per_device"] if device.name == result["device"] else device.peak["mixed"]
        rows.append((device.name, flops / (peak * util) / 3600))
    fig = go.Figure(go.Bar(x=[h for _, h in rows], y=[n for n, _ in rows], orientation="h",
                           marker_color=[plots.RED if n == result["device"] else plots.BLUE for n, _ in rows],
                           text=[f"{sci(h)} h" for _, h in rows], textposition="outside", cliponaxis=False,
                           textfont=dict(size=15)))
    plots.style(fig, f"Device-hours at {util:.0%} utilisation (log scale)", 360)
    hours = [h for _, h in rows]
    fig.update_xaxes(type="log", title="device-hours",
                     range=[math.log10(min(hours)) - 0.5, math.log10(max(hours)) + 1.2])
    fig.update_yaxes(autorange="reversed", tickfont=dict(size=16))
    return fig


LABEL_SIDE = {"BERT-base": "middle left", "GPT-2 (1.5B)": "middle left", "GPT-3 175B": "middle left",
              "Chinchilla 70B": "bottom right", "LLaMA-2 7B": "bottom right"}


def scaling_figure(result: dict) -> go.Figure:
    """Compute-optimal N against compute C (D = 20·N), every preset placed at its own (C, N)."""
    lo, hi = 1e17, 1e26
    grid = [lo * (hi / lo) ** (i / 60) for i in range(61)]
    fig = go.Figure(go.Scatter(x=grid, y=[optimal_split(c)[0] for c in grid], mode="lines", name="compute-optimal "
                               "N (D = 20·N)", line=dict(color=plots.GREEN, width=4)))
    models = result["models"]
    big = {"GPT-3 175B", "Chinchilla 70B"}
    for group, colour, size in ((big, plots.RED, 18), (set(presets.MODELS) - big, plots.BLUE, 12)):
        shown = [m for m in models if m["model"] in group]
        fig.add_trace(go.Scatter(
            x=[m["compute"] for m in shown], y=[m["params"] for m in shown], mode="markers+text",
            text=[plots.safe(m["model"]) for m in shown], textfont=dict(size=15, color=colour),
            textposition=[LABEL_SIDE.get(m["model"], "middle right") for m in shown],
            hovertext=[f"{m['tokens_per_param']:,.0f} tokens per parameter" for m in shown],
            marker=dict(size=size, color=colour), name="published models" if size == 12 else "GPT-3 and Chinchilla"))
    fig.add_trace(go.Scatter(x=[result["compute"]], y=[result["params"]], mode="markers", name="your budget",
                             marker=dict(size=20, symbol="star", color=plots.PURPLE)))
    plots.style(fig, "Chinchilla: the compute-optimal model size for a budget C", 560,
                legend=dict(orientation="h", y=-0.3, font=dict(size=15)), margin=dict(l=10, r=10, t=60, b=120))
    fig.update_xaxes(type="log", title="training compute C (FLOPs)", range=[17, 26.3])
    fig.update_yaxes(type="log", title="parameters N")
    return fig


def memory_figure(result: dict) -> go.Figure:
    """Stacked bars, GB by part: full training, LoRA training (if any), inference."""
    rows = [("full training", result["training"])]
    if result["lora"]:
        rows.append((f"LoRA r = {result['lora']['rank']}", result["lora"]["bytes"]))
    rows.append(("inference", {"weights": result["inference"]["weights"], "KV cache": result["inference"]["kv_cache"]}))
    parts = ("weights", "gradients", "master_copy", "optimizer", "activations", "KV cache")
    colours = (plots.BLUE, plots.GREEN, "#f59e0b", plots.PURPLE, "#6b7280", plots.RED)
    fig = go.Figure()
    for part, colour in zip(parts, colours):
        values = [r.get(part, 0) / 1e9 for _, r in rows]
        if any(values):
            fig.add_trace(go.Bar(x=values, y=[label for label, _ in rows], orientation="h",
                                 name=part.replace("_", " "), marker_color=colour))
    plots.style(fig, f"Memory in GB: {plots.safe(result['model'])} shape, batch {result['batch']} × "
                     f"{result['length']} tokens", 340, barmode="stack",
                legend=dict(orientation="h", y=-0.45, font=dict(size=15)), margin=dict(l=10, r=10, t=60, b=90))
    fig.update_yaxes(autorange="reversed", tickfont=dict(size=16))
    return fig
