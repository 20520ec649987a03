"""A read-only table drawn as an HTML <table>: a caption, column headers a screen reader announces with each cell,
and a tab stop on its box when the box scrolls (assets/js/fold.js). Gradio's Dataframe draws a virtual grid
instead (role=grid, rows drawn only while on screen, no row roles), which axe-core flags and a screen reader
cannot read row by row. A lab's handler returns the same values as before (a pandas DataFrame, a list of rows,
or {"headers", "data"} with an optional "colours"); this component turns them into the table's HTML, every cell
escaped, with a "⬇ CSV" button under it. The button is part of the table's HTML, not a Gradio button with an
event of its own: assets/js/tables.js downloads the rows it finds beside it, so that a page of 39 tables does not
wire 39 more events (Gradio's frontend walks every component for every event when a page opens)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import gradio as gr

from labs.core.ui.escape import esc

# A click on a cell sends Gradio's select event with the cell's (row, column), as a Dataframe's click does; the
# keyboard reaches the same choice through the lab's own controls (Attention's layer and head sliders).
CLICK_JS = """element.addEventListener('click', (event) => {
  const cell = event.target.closest('td, th[scope=row]');
  if (!cell || !element.contains(cell) || !cell.parentElement.closest('tbody')) return;
  trigger('select', {index: [cell.parentElement.sectionRowIndex, cell.cellIndex], value: cell.textContent,
                     selected: true});
});"""


def cell_text(value: Any) -> str:
    """A cell as the page shows it: as str() writes it, an empty or missing value blank."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def is_number(value: Any) -> bool:
    return isinstance(value, numbers.Number) and not isinstance(value, bool)  # numpy's bool_ is no Number


def table_parts(value: Any, headers: Sequence[str]) -> tuple[list[str], list[list[Any]], list[list[str]]]:
    """(headers, rows, cell colours) of what a handler returned: a DataFrame names its own columns, rows take the
    table's; a dict may colour its cells ({"headers", "data", "colours"}: one CSS colour per cell)."""
    if value is None:
        return list(headers), [], []
    if hasattr(value, "columns") and hasattr(value, "astype"):  # a pandas DataFrame
        return [str(c) for c in value.columns], value.astype(object).values.tolist(), []
    if isinstance(value, dict):
        return (list(value.get("headers") or headers), [list(row) for row in value.get("data") or []],
                value.get("colours") or [])
    return list(headers), [list(row) for row in value], []


CSV_BUTTON = '<div class="lab-table-actions"><button type="button" class="lab-csv">⬇ CSV</button></div>'


def cell_html(value: Any, colour: str = "") -> str:
    attributes = (' class="lab-num"' if is_number(value) else "") + (
        f' style="background-color: {esc(colour)}"' if colour else "")
    return f"<td{attributes}>{esc(cell_text(value))}</td>"


def table_html(headers: Sequence[str], rows: Sequence[Sequence[Any]], caption: str = "", wrap: bool = False,
               column_widths: Sequence[str] = (), colours: Sequence[Sequence[str]] = ()) -> str:
    """The table's HTML, every header and cell escaped; numbers right-aligned; cells coloured when asked."""
    name = esc(caption or "Table")
    cols = "".join(f'<col style="width: {esc(w)}">' for w in column_widths)
    head = "".join(f'<th scope="col">{esc(h)}</th>' for h in headers)
    body = "".join("<tr>" + "".join(cell_html(c, colours[i][j] if i < len(colours) and j < len(colours[i]) else "")
                                    for j, c in enumerate(row)) + "</tr>" for i, row in enumerate(rows))
    style = " lab-table-wrap" if wrap else ""
    caption_html = f"<caption>{esc(caption)}</caption>" if caption else ""
    return (f'<div class="lab-table-scroll" role="region" aria-label="{name}">'
            f'<table class="lab-table{style}">{caption_html}'
            f'{f"<colgroup>{cols}</colgroup>" if cols else ""}<thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


class ReadOnlyTable(gr.HTML):
    """gr.HTML whose value is a table's data (see table_parts), drawn by table_html."""

    def __init__(self, headers: Sequence[str], label: str = "", *, wrap: bool = False,
                 column_widths: Sequence[str] = (), value: Any = None, clickable: bool = False,
                 elem_classes: list[str] | None = None, **kwargs):
        self.headers, self.caption, self.wrap = list(headers), label, wrap
        self.column_widths = list(column_widths)
        super().__init__(value=value, label=label or None, js_on_load=CLICK_JS if clickable else None,
                         elem_classes=["lab-table-block", *(elem_classes or [])], **kwargs)

    def postprocess(self, value: Any) -> str:
        if isinstance(value, str):  # a value that is already this table's HTML
            return value
        headers, rows, colours = table_parts(value, self.headers)
        return table_html(headers, rows, self.caption, self.wrap, self.column_widths, colours) + CSV_BUTTON
