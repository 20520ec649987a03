"""A chart's text alternative (WCAG 1.1.1): an accessible name, a one-sentence summary of what it shows and a
table of its numbers, written from the figure's own traces (their labels and values).

Every figure gets one without its lab doing anything: plots' builders attach it, and ui.friendly attaches it to
any figure a handler returns without one. A lab that can say it better passes its own summary:
`figure_text.attach(fig, summary="...")` (or `summary=` to a plots builder). The text travels in the figure's
`layout.meta`, which plotly and gr.Plot pass on untouched; assets/js/figure_text.js reads it in the browser:
the chart gets role="figure", the name as its aria-label, the summary as a visually hidden caption it is
described by, and a "Show as table" control under it with the same numbers.

No gradio import here: compute modules may build figures with their text."""

from __future__ import annotations

import html
import math
import re
import threading

import numpy as np
import plotly.graph_objects as go

META_KEY = "lab_text"
NAMED = 3  # values named in the sentence; the table has them all
MAX_ROWS = 100  # rows per table (a long table says how many it leaves out)
MAX_TABLES = 12
_lock = threading.Lock()  # a figure kept for every student's first page may be described by two at once


def plain(text) -> str:
    """Plotly's HTML subset as plain text: tags become spaces, entities characters (`&lt;b&gt;` is `<b>` again)."""
    text = re.sub(r"<br\s*/?>", " ", str(text or ""), flags=re.I)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", text)).split())


def number(value) -> str:
    """A value as the chart prints it: three significant figures, powers of ten spelled out."""
    if value is None or isinstance(value, str):
        return plain(value)
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    value = float(value)
    if math.isnan(value):
        return "none"
    if value.is_integer() and abs(value) < 1e6:
        return str(int(value))
    text = f"{value:.3g}"
    if "e" in text:
        mantissa, power = text.split("e")
        return f"{mantissa} × 10^{int(power)}"
    return text


def _list(values) -> list:
    if values is None:
        return []
    array = np.asarray(values, dtype=object)
    return list(array.ravel()) if array.ndim else [array.item()]


def _axis_title(fig: go.Figure, trace, axis: str) -> str:
    ref = getattr(trace, f"{axis}axis", None) or axis
    layout_axis = fig.layout[f"{axis}axis{ref[1:]}"] if ref[1:] else fig.layout[f"{axis}axis"]
    return plain(layout_axis.title.text) if layout_axis is not None and layout_axis.title else ""


def _panel_titles(fig: go.Figure) -> list[str]:
    """make_subplots' titles (annotations), one per panel."""
    return [plain(a.text) for a in fig.layout.annotations or () if a.text]


def _series_name(fig: go.Figure, trace, index: int, count: int) -> str:
    if trace.name:
        return plain(trace.name)
    panels = _panel_titles(fig)
    if len(panels) == count:
        return panels[index]
    return f"series {index + 1}" if count > 1 else ""


def _bar_parts(trace) -> tuple[list, list]:
    """(categories, values) of a bar trace, in the order the chart shows them."""
    horizontal = trace.orientation == "h"
    values = _list(trace.x if horizontal else trace.y)
    categories = _list(trace.y if horizontal else trace.x) or list(range(1, len(values) + 1))
    return [plain(c) for c in categories], values


def _numbers(values) -> list[float]:
    out = []
    for v in values:
        try:
            f = float(v)
        except (TypeError, ValueError):
            continue
        if not math.isnan(f):
            out.append(f)
    return out


def _listed(pairs: list[tuple[str, object]], unit: str) -> str:
    """"a 0.31, the 0.22, very 0.08, … 20 tokens": the first few, how many there are, and the largest when it
    is not among the first few."""
    shown = ", ".join(f"{label} {number(value)}" for label, value in pairs[:NAMED])
    if len(pairs) <= NAMED:
        return shown
    valued = [(i, v) for i, (_, value) in enumerate(pairs) for v in _numbers([value])]
    top = max(valued, key=lambda p: p[1])[0] if valued else 0
    largest = f"; the largest, {pairs[top][0]} {number(pairs[top][1])}" if top >= NAMED else ""
    return f"{shown}, … {len(pairs)} {unit}{largest}"


def _bars_sentence(fig: go.Figure, bars: list) -> str:
    parts = [_bar_parts(t) for t in bars]
    unit = "bars"
    if len(bars) == 1:
        return _listed(list(zip(*parts[0])), unit)
    names = [_series_name(fig, t, i, len(bars)) for i, t in enumerate(bars)]
    if all(p[0] == parts[0][0] for p in parts):  # grouped bars over the same categories
        rows = [f"{c}: " + ", ".join(f"{n} {number(p[1][j])}" for n, p in zip(names, parts))
                for j, c in enumerate(parts[0][0][:2])]
        more = f"; … {len(parts[0][0])} categories" if len(parts[0][0]) > 2 else ""
        return "; ".join(rows) + more
    return "; ".join(f"{n}: {_listed(list(zip(*p)), unit)}" for n, p in zip(names, parts))


def _heatmap_sentence(fig: go.Figure, maps: list) -> str:
    sentences = []
    for index, trace in enumerate(maps[:2]):
        try:
            z = np.asarray(trace.z, dtype=float)
        except (TypeError, ValueError):
            continue
        if z.ndim != 2 or not z.size or np.isnan(z).all():
            continue
        rows, cols = z.shape
        y, x = _list(trace.y) or list(range(rows)), _list(trace.x) or list(range(cols))
        # A similarity grid (symmetric, the same labels on both axes) is 1 on its diagonal: its news is off it.
        similarity = rows == cols > 1 and x == y and np.allclose(z, z.T, equal_nan=True)
        off = np.where(np.eye(rows, dtype=bool), np.nan, z) if similarity else z
        i, j = np.unravel_index(np.nanargmax(off), z.shape)
        highest = (f"the highest off the diagonal, {number(z[i, j])}, at" if similarity else "the highest at")
        name = _series_name(fig, trace, index, len(maps))
        where = (f"{_axis_title(fig, trace, 'y') or 'rows'} × {_axis_title(fig, trace, 'x') or 'columns'}")
        sentences.append(f"{name + ': ' if name else ''}a {rows} × {cols} grid ({where}), values from "
                         f"{number(np.nanmin(z))} to {number(np.nanmax(z))}, {highest} {plain(y[i])} → "
                         f"{plain(x[j])}")
    more = f"; … {len(maps)} grids" if len(maps) > 2 else ""
    return "; ".join(sentences) + more


def _scatter_sentence(fig: go.Figure, lines: list) -> str:
    sentences = []
    for index, trace in enumerate(lines[:NAMED]):
        x, y = _list(trace.x), _list(trace.y)
        name = _series_name(fig, trace, index, len(lines))
        points = [(a, b) for a, b in zip(x, y) if _numbers([b])]
        if not points:
            continue
        if "lines" in (trace.mode or "lines") and len(points) > 1:
            top = max(points, key=lambda p: float(p[1]))
            sentences.append(f"{name + ': ' if name else ''}{number(points[0][1])} at {number(points[0][0])} to "
                             f"{number(points[-1][1])} at {number(points[-1][0])}, highest {number(top[1])} at "
                             f"{number(top[0])}")
        else:
            labels = [plain(t) for t in _list(trace.text)] or [""] * len(points)
            shown = ", ".join(f"{(label + ' ') if label else ''}({number(a)}, {number(b)})"
                              for label, (a, b) in zip(labels, points[:NAMED]))
            sentences.append(f"{name + ': ' if name else ''}{len(points)} points, {shown}"
                             + (", …" if len(points) > NAMED else ""))
    more = f"; … {len(lines)} series" if len(lines) > NAMED else ""
    return "; ".join(sentences) + more


def name_of(fig: go.Figure) -> str:
    """The figure's title as plain text, or what its axes say it plots."""
    title = plain(fig.layout.title.text) if fig.layout.title else ""
    if title:
        return title
    first = fig.data[0] if fig.data else None
    x = _axis_title(fig, first, "x") if first is not None else ""
    y = _axis_title(fig, first, "y") if first is not None else ""
    return f"Chart of {y} against {x}" if x and y else f"Chart of {x or y}" if x or y else "Chart"


def summary_of(fig: go.Figure) -> str:
    """One sentence written from the traces: what the chart shows, with its first values."""
    kinds: dict[str, list] = {}
    for trace in fig.data:
        if trace.visible in (False, "legendonly"):
            continue
        kinds.setdefault(trace.type, []).append(trace)
    parts = []
    if kinds.get("bar"):
        parts.append(_bars_sentence(fig, kinds.pop("bar")))
    if kinds.get("heatmap"):
        parts.append(_heatmap_sentence(fig, kinds.pop("heatmap")))
    if kinds.get("scatter"):
        parts.append(_scatter_sentence(fig, kinds.pop("scatter")))
    for kind, traces in kinds.items():
        parts.append(f"{len(traces)} {kind} series")
    body = "; ".join(p for p in parts if p)
    return f"{name_of(fig)}: {body}." if body else f"{name_of(fig)}: no data."


def _table(caption: str, headers: list[str], rows: list[list]) -> dict:
    kept = rows[:MAX_ROWS]
    note = f" (the first {MAX_ROWS} of {len(rows)} rows)" if len(rows) > MAX_ROWS else ""
    return {"caption": caption + note, "headers": headers, "rows": [[v if isinstance(v, str) else number(v) for v in row]
                                                              for row in kept]}


def tables_of(fig: go.Figure) -> list[dict]:
    """The figure's numbers as tables: bars over the same categories share one; a grid is a table; lines over
    the same x share one; anything else is a table of its own."""
    traces = [t for t in fig.data if t.visible not in (False, "legendonly")]
    count, tables = len(traces), []
    bars = [t for t in traces if t.type == "bar"]
    parts = [_bar_parts(t) for t in bars]
    names = [_series_name(fig, t, traces.index(t), count)
             or _axis_title(fig, t, "x" if t.orientation == "h" else "y") or "value" for t in bars]
    if bars and all(p[0] == parts[0][0] for p in parts):
        label = _axis_title(fig, bars[0], "y" if bars[0].orientation == "h" else "x") or "label"
        rows = [[c] + [p[1][j] if j < len(p[1]) else None for p in parts] for j, c in enumerate(parts[0][0])]
        tables.append(_table(name_of(fig), [label] + names, rows))
    else:
        for trace, (categories, values), name in zip(bars, parts, names):
            label = _axis_title(fig, trace, "y" if trace.orientation == "h" else "x") or "label"
            tables.append(_table(name, [label, _axis_title(fig, trace, "x" if trace.orientation == "h" else "y")
                                        or "value"], list(map(list, zip(categories, values)))))
    for trace in (t for t in traces if t.type == "heatmap"):
        z = np.asarray(trace.z, dtype=object)
        if z.ndim != 2:
            continue
        x = [plain(v) for v in _list(trace.x)] or [str(j) for j in range(z.shape[1])]
        y = [plain(v) for v in _list(trace.y)] or [str(i) for i in range(z.shape[0])]
        corner = f"{_axis_title(fig, trace, 'y') or 'row'} \\ {_axis_title(fig, trace, 'x') or 'column'}"
        name = _series_name(fig, trace, traces.index(trace), count) or name_of(fig)
        tables.append(_table(name, [corner] + x, [[y[i]] + list(z[i]) for i in range(z.shape[0])]))
    lines = [t for t in traces if t.type == "scatter"]
    xs = [_list(t.x) for t in lines]
    if len(lines) > 1 and all(x == xs[0] for x in xs) and not any(_list(t.text) for t in lines):
        headers = [_axis_title(fig, lines[0], "x") or "x"] + [
            _series_name(fig, t, traces.index(t), count) or "y" for t in lines]
        rows = [[x] + [(_list(t.y) + [None] * len(xs[0]))[j] for t in lines] for j, x in enumerate(xs[0])]
        tables.append(_table(name_of(fig), headers, rows))
    else:
        for trace, x in zip(lines, xs):
            text = [plain(t) for t in _list(trace.text)]
            headers = ([("label")] if text else []) + [_axis_title(fig, trace, "x") or "x",
                                                      _axis_title(fig, trace, "y") or "y"]
            rows = [([text[j] if j < len(text) else ""] if text else []) + [a, b]
                    for j, (a, b) in enumerate(zip(x, _list(trace.y)))]
            tables.append(_table(_series_name(fig, trace, traces.index(trace), count) or name_of(fig), headers, rows))
    return tables[:MAX_TABLES]


def attach(fig: go.Figure, summary: str | None = None, name: str | None = None) -> go.Figure:
    """Give the figure its text alternative: the name (default: its title), the summary (default: written
    from its traces) and its tables. Plain text: the browser shows it as text, never as HTML."""
    text = {"name": plain(name) if name else name_of(fig), "summary": plain(summary) if summary else summary_of(fig),
            "tables": tables_of(fig)}
    with _lock:
        meta = fig.layout.meta if isinstance(fig.layout.meta, dict) else {}
        fig.update_layout(meta={**meta, META_KEY: text})
    return fig


def text_of(fig: go.Figure) -> dict | None:
    meta = fig.layout.meta
    return meta.get(META_KEY) if isinstance(meta, dict) else None


def ensure(fig: go.Figure) -> go.Figure:
    """attach(fig) unless it has its text already (a lab's own summary stays)."""
    return fig if text_of(fig) else attach(fig)


def ensure_in(value, depth: int = 2):
    """A handler's return value with every figure in it given its text: a figure, a gr.update dict's value,
    the items of a tuple or list of outputs, the values of a {component: value} dict. Two levels deep at most
    (outputs, then an update): a JSON output's dicts and lists hold no figure."""
    if isinstance(value, go.Figure):
        ensure(value)
    elif depth and isinstance(value, (tuple, list)):
        for item in value:
            ensure_in(item, depth - 1)
    elif depth and isinstance(value, dict):
        for item in ([value.get("value")] if "__type__" in value else value.values()):
            ensure_in(item, depth - 1)
    return value
