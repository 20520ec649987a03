"""Plotly figures shared by the labs, in one house style that reads from the back of a lecture hall.

Plotly renders a subset of HTML in titles, tick labels and hover text, so every text that comes
from a student or a model goes through `safe` (or `unique_labels`) first."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from labs.core.ui import figure_text

FONT = dict(size=16, color="#111827")  # 17:1 on white
# Colours that stay apart for red-green colour blindness and in greyscale (Okabe & Ito's palette, darkened
# where a colour carries text): "RED" is a vermilion and "GREEN" a bluish green, which deuteranopes and
# protanopes still tell apart (a red and a pure green they do not), and they differ in lightness too. A chart
# that tells two series apart by colour should still give them different dashes or markers.
BLUE, GREEN, GREY, RED, PURPLE = "#1d4ed8", "#009e73", "#d1d5db", "#c2410c", "#7c3aed"
ORANGE, SKY = "#e69f00", "#56b4e9"
COLORWAY = [BLUE, RED, GREEN, PURPLE, ORANGE, SKY, "#4b5563"]
GRID = "#EBF0F8"
AXIS = "#4b5563"  # axis lines: 3:1 and more on white (WCAG 1.4.11)
# Sequential scales that get darker as the value grows (readable in greyscale, no red-green); the
# diverging one runs blue to orange through white.
SEQUENTIAL = "Blues"
DIVERGING = [[0, "#1d4ed8"], [0.5, "#f8fafc"], [1, "#c2410c"]]

# The look of plotly_white in a template a tenth of its size: every figure copies and checks its
# template, and with plotly_white that was two thirds of the cost of drawing a heatmap (29 -> 11 ms),
# paid for every chart on every student's first page.
pio.templates["lm_lab"] = go.layout.Template(layout=dict(
    paper_bgcolor="white", plot_bgcolor="white", font=FONT, colorway=COLORWAY,
    colorscale=dict(sequential=SEQUENTIAL, diverging=DIVERGING),
    hoverlabel=dict(bgcolor="white", bordercolor="#374151", font=dict(size=15, color="#111827")),
    legend=dict(font=dict(size=15, color="#111827")),
    xaxis=dict(gridcolor=GRID, linecolor=AXIS, zerolinecolor=GRID, automargin=True, tickfont=dict(color="#111827"),
               title=dict(font=dict(size=16, color="#111827"))),
    yaxis=dict(gridcolor=GRID, linecolor=AXIS, zerolinecolor=GRID, automargin=True, tickfont=dict(color="#111827"),
               title=dict(font=dict(size=16, color="#111827")))))
pio.templates.default = "lm_lab"


def safe(text) -> str:
    """Text as plotly shows it literally: `<b>` stays `<b>` instead of turning bold."""
    return html.escape(str(text), quote=False)


def style(fig: go.Figure, title: str = "", height: int | None = None, **layout) -> go.Figure:
    """The house style: large type, white background, a title that reads from the back row.
    `title` must already be safe (see `safe`)."""
    fig.update_layout(margin=layout.pop("margin", dict(l=10, r=10, t=60, b=10)), **layout)
    if title:
        fig.update_layout(title=dict(text=title, font=dict(size=20)))
    if height:
        fig.update_layout(height=height)
    return fig


def unique_labels(tokens: list[str]) -> list[str]:
    """Labels for a categorical axis, made safe. Plotly merges equal category labels ("the" twice),
    so repeats are numbered invisibly to students."""
    seen: dict[str, int] = {}
    labels = []
    for token in tokens:
        seen[token] = seen.get(token, 0) + 1
        labels.append(safe(token if seen[token] == 1 else f"{token} ({seen[token]})"))
    return labels


def heatmap(matrix, x_tokens: list[str], y_tokens: list[str] | None = None, *, title: str = "",
            colorscale="Blues", zmin: float | None = 0, zmax: float | None = None,
            text_format: str | None = None, highlight_row: int | None = None, height: int | None = None,
            x_title: str = "attends to (key)", y_title: str = "token (query)", summary: str | None = None) -> go.Figure:
    """A token × token heatmap with the query on the y axis (top to bottom) and the key on x. Its text
    alternative (figure_text) is written from its cells unless the lab gives a summary."""
    matrix = np.asarray(matrix, dtype=float)
    y_tokens = x_tokens if y_tokens is None else y_tokens
    title = title or safe(f"{y_title.capitalize()} × {x_title}")  # every chart says what it shows
    x, y = unique_labels(x_tokens), unique_labels(y_tokens)
    trace = go.Heatmap(z=matrix, x=x, y=y, colorscale=colorscale, zmin=zmin, zmax=zmax, xgap=1, ygap=1,
                       hovertemplate="from %{y} to %{x}: %{z}<extra></extra>")
    if text_format and matrix.size <= 400:
        trace.update(texttemplate=text_format, textfont=dict(size=14))
    n_rows, n_cols = matrix.shape
    fig = style(go.Figure(trace), title, height or max(320, min(900, 140 + 34 * n_rows)))
    fig.update_yaxes(autorange="reversed", title=y_title, tickfont=dict(size=15), type="category")
    fig.update_xaxes(side="bottom", title=x_title, tickangle=-45, tickfont=dict(size=15), type="category")
    if highlight_row is not None and 0 <= highlight_row < n_rows:
        fig.add_shape(type="rect", x0=-0.5, x1=n_cols - 0.5, y0=highlight_row - 0.5, y1=highlight_row + 0.5,
                      line=dict(color=RED, width=4))
    return figure_text.attach(fig, summary)


def bar_chart(labels: list[str], values: list[float], *, title: str = "", colors=None,
              hover: list[str] | None = None, x_title: str = "probability", height: int | None = None,
              summary: str | None = None) -> go.Figure:
    """Horizontal bars, most likely at the top, values printed on the bars. Without a title, the chart is
    titled after its values (every chart says what it shows); without a summary, its text alternative names
    the first bars and their values."""
    title = title or safe(f"{x_title.capitalize()} of each of the {len(labels)} options")
    fig = go.Figure(go.Bar(x=values, y=unique_labels(labels), orientation="h", marker_color=colors or BLUE,
                           text=[f"{v:.3g}" for v in values], textposition="auto",
                           hovertext=[safe(h) for h in hover] if hover else None, textfont=dict(size=15)))
    style(fig, title, height or max(260, 80 + 34 * len(labels)))
    fig.update_yaxes(autorange="reversed", type="category", tickfont=dict(size=16))
    fig.update_xaxes(title=x_title)
    return figure_text.attach(fig, summary)


def bars_side_by_side(panels: list[tuple[str, list[str], list[float]]], colour: str = BLUE,
                      title: str = "", summary: str | None = None) -> go.Figure:
    """One horizontal bar chart per panel (title, labels, values), side by side. `title` (already safe)
    says what they show; without one, the chart is titled after its panels."""
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=[safe(t) for t, _, _ in panels],
                        horizontal_spacing=0.08)
    for i, (name, labels, values) in enumerate(panels):
        fig.add_trace(go.Bar(x=values, y=unique_labels(labels), orientation="h", marker_color=colour, name=safe(name),
                             text=[f"{v:.3g}" for v in values], textposition="auto", textfont=dict(size=15),
                             showlegend=False), row=1, col=i + 1)
        fig.update_yaxes(autorange="reversed", type="category", tickfont=dict(size=16), row=1, col=i + 1)
    longest = max((len(labels) for _, labels, _ in panels), default=1)
    title = title or safe("Side by side: " + ", ".join(t for t, _, _ in panels))
    # The panels' own titles sit under the chart's title.
    fig.update_annotations(yshift=4, font=dict(size=17, color="#111827"))
    style(fig, title, height=max(340, 130 + 36 * longest), margin=dict(l=10, r=10, t=100, b=10))
    return figure_text.attach(fig, summary)
