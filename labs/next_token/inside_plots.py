"""The figures for "Inside a prediction": a sentence's per-token surprise, the logit-lens grid and
curve, and the beam tree. Plotly only (no gradio), every model or student text made safe."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from labs.core.ui import plots
from labs.next_token.beam_tree import Tree
from labs.next_token.inside import Lens, Score

ORANGE = "#ea580c"


def surprise_figure(named: list[tuple[str, Score]]) -> go.Figure:
    """−log P(token | before) per token, one panel per sentence (the first token has no bar)."""
    panels = [(f"{name}: perplexity {s.perplexity:,.1f}", s.tokens[1:], [-lp for lp in s.logprobs[1:]])
              for name, s in named]
    fig = plots.bars_side_by_side(panels, colour=plots.RED)
    fig.update_xaxes(title="−log P(token | everything before it)")
    return fig


def lens_grid(lens: Lens) -> go.Figure:
    """Layers (rows, 0 = embeddings at the bottom) × rank: the token each layer would predict."""
    z = [[p for _, _, p in layer.top] for layer in lens.layers]
    text = [[plots.safe(t) for _, t, _ in layer.top] for layer in lens.layers]
    final = lens.final_token
    hover = [[f"layer {layer.layer}, rank {r + 1}: {plots.safe(t)} (p = {p:.3f})"
              for r, (_, t, p) in enumerate(layer.top)] for layer in lens.layers]
    trace = go.Heatmap(z=z, text=text, texttemplate="%{text}", hovertext=hover, hoverinfo="text", colorscale="Blues",
                       zmin=0, zmax=1, xgap=2, ygap=2, textfont=dict(size=14), colorbar=dict(title="p"),
                       x=[f"#{r + 1}" for r in range(len(z[0]))], y=[str(layer.layer) for layer in lens.layers])
    fig = plots.style(go.Figure(trace), plots.safe(f"What each layer would predict (final answer: “{final}”)"),
                      max(360, 120 + 26 * len(z)))
    fig.update_yaxes(title="layer (0 = embeddings)", type="category")
    fig.update_xaxes(side="top", type="category")  # the columns read #1, #2, …: no axis title over the title
    return fig


def lens_curve(lens: Lens) -> go.Figure:
    """The final answer's probability (left axis) and rank (right axis, log scale) at every layer."""
    layers = [x.layer for x in lens.layers]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=layers, y=[x.final_token_prob for x in lens.layers], name="probability",
                             line=dict(color=plots.BLUE, width=4)))
    fig.add_trace(go.Scatter(x=layers, y=[x.final_token_rank for x in lens.layers], name="rank (right axis)",
                             yaxis="y2", line=dict(color=ORANGE, width=3, dash="dot")))
    fig.update_layout(yaxis2=dict(overlaying="y", side="right", type="log", autorange="reversed", title="rank"),
                      legend=dict(x=0.01, y=0.98, bgcolor="rgba(255,255,255,0.8)"))
    plots.style(fig, plots.safe(f"“{lens.final_token}” across the layers"), 380)
    fig.update_xaxes(title="layer")
    fig.update_layout(yaxis=dict(title="probability", range=[0, 1.02]))
    return fig


def tree_layout(tree: Tree) -> dict[int, float]:
    """A y position per node: each step's nodes in their parents' order, best first under a parent,
    so that edges rarely cross."""
    y = {0: 0.0}
    children: dict[int, list] = {}
    for node in tree.nodes[1:]:
        children.setdefault(node.parent, []).append(node)
    frontier = [tree.nodes[0]]
    while frontier:
        ordered = [c for parent in frontier for c in sorted(children.get(parent.id, []), key=lambda n: -n.logprob)]
        for i, node in enumerate(ordered):
            y[node.id] = (len(ordered) - 1) / 2 - i
        frontier = ordered
    return y


STYLE = {"kept": (plots.BLUE, 16, "circle"), "finished": (plots.GREEN, 20, "star"), "pruned": ("#9ca3af", 10, "circle")}


def tree_figure(tree: Tree) -> go.Figure:
    y = tree_layout(tree)
    best = {b.node for b in tree.beams}
    fig = go.Figure()
    for greedy_edge in (False, True):  # grey edges first, the greedy path on top
        xs, ys = [], []
        for n in tree.nodes[1:]:
            if n.greedy == greedy_edge:
                xs += [n.step - 1, n.step, None]
                ys += [y[n.parent], y[n.id], None]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", hoverinfo="skip", showlegend=greedy_edge,
                                 name="greedy path", line=dict(color=ORANGE if greedy_edge else "#d1d5db",
                                                               width=5 if greedy_edge else 1.5)))
    for status, (colour, size, symbol) in STYLE.items():
        group = [n for n in tree.nodes if n.status == status]
        fig.add_trace(go.Scatter(
            x=[n.step for n in group], y=[y[n.id] for n in group], mode="markers+text", name=status,
            text=[plots.safe(n.token if n.step else "prompt") for n in group], textposition="middle right",
            textfont=dict(size=14 if status != "pruned" else 11, color="#111827" if status != "pruned" else "#6b7280"),
            marker=dict(color=colour, size=size, symbol=symbol,
                        line=dict(color="#111827", width=[3 if n.id in best else 0 for n in group])),
            hovertext=[plots.safe(f"step {n.step}: “{n.token}”, log P(token) = {n.token_logprob:.3f}, "
                                  f"total log P = {n.logprob:.3f}") for n in group], hoverinfo="text"))
    steps = max(n.step for n in tree.nodes)
    rows = max(sum(1 for n in tree.nodes if n.step == s) for s in range(steps + 1))
    plots.style(fig, "Beam search as a tree (outlined: the final beams)", max(420, 60 + 30 * rows),
                legend=dict(orientation="h", y=-0.08))
    fig.update_xaxes(title="step (new token)", dtick=1, range=[-0.3, steps + 0.9])
    fig.update_yaxes(visible=False)
    return fig


SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def exp_readable(log_value: float) -> str:
    """exp(log_value) written so that tiny or huge numbers stay readable (10⁻⁴⁰ does not underflow)."""
    exponent = log_value / math.log(10)
    if -3 <= exponent < 4:
        return f"{math.exp(log_value):,.3g}"
    whole = math.floor(exponent)
    return f"{10 ** (exponent - whole):.2f} × 10{str(whole).translate(SUPERSCRIPT)}"
