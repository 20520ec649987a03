"""Plotly figures shared by the labs, styled to read from the back of a lecture hall."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

FONT = dict(size=16, color="#111827")


def unique_labels(tokens: list[str]) -> list[str]:
    """Plotly merges equal category labels ("the" twice), so number repeats invisibly to students."""
    seen: dict[str, int] = {}
    labels = []
    for token in tokens:
        seen[token] = seen.get(token, 0) + 1
        labels.append(token if seen[token] == 1 else f"{token} ({seen[token]})")
    return labels


def heatmap(matrix, x_tokens: list[str], y_tokens: list[str] | None = None, *, title: str = "",
            colorscale: str = "Blues", zmin: float | None = 0, zmax: float | None = None,
            text_format: str | None = None, highlight_row: int | None = None, height: int | None = None,
            x_title: str = "attends to (key)", y_title: str = "token (query)") -> go.Figure:
    """A token × token heatmap with the query on the y axis (top to bottom) and the key on x."""
    matrix = np.asarray(matrix, dtype=float)
    y_tokens = x_tokens if y_tokens is None else y_tokens
    x, y = unique_labels(x_tokens), unique_labels(y_tokens)
    trace = go.Heatmap(z=matrix, x=x, y=y, colorscale=colorscale, zmin=zmin, zmax=zmax, xgap=1, ygap=1,
                       hovertemplate="from %{y} to %{x}: %{z}<extra></extra>")
    if text_format and matrix.size <= 400:
        trace.update(texttemplate=text_format, textfont=dict(size=14))
    fig = go.Figure(trace)
    n_rows, n_cols = matrix.shape
    fig.update_layout(title=dict(text=title, font=dict(size=20)), font=FONT, template="plotly_white",
                      height=height or max(320, min(900, 140 + 34 * n_rows)), margin=dict(l=10, r=10, t=60, b=10))
    fig.update_yaxes(autorange="reversed", title=y_title, tickfont=dict(size=15), type="category")
    fig.update_xaxes(side="bottom", title=x_title, tickangle=-45, tickfont=dict(size=15), type="category")
    if highlight_row is not None and 0 <= highlight_row < n_rows:
        fig.add_shape(type="rect", x0=-0.5, x1=n_cols - 0.5, y0=highlight_row - 0.5, y1=highlight_row + 0.5,
                      line=dict(color="#dc2626", width=4))
    return fig


def bar_chart(labels: list[str], values: list[float], *, title: str = "", colors: list[str] | None = None,
              hover: list[str] | None = None, x_title: str = "probability", height: int | None = None) -> go.Figure:
    """Horizontal bars, most likely at the top, values printed on the bars."""
    fig = go.Figure(go.Bar(x=values, y=unique_labels(labels), orientation="h", marker_color=colors or "#1d4ed8",
                           text=[f"{v:.3g}" for v in values], textposition="auto", hovertext=hover,
                           textfont=dict(size=15)))
    fig.update_layout(title=dict(text=title, font=dict(size=20)), font=FONT, template="plotly_white",
                      height=height or max(260, 80 + 34 * len(labels)), margin=dict(l=10, r=10, t=60, b=10))
    fig.update_yaxes(autorange="reversed", type="category", tickfont=dict(size=16))
    fig.update_xaxes(title=x_title)
    return fig
