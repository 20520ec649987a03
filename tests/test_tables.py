"""Read-only tables (labs/core/ui/table.py): what a lab's handler returns (a DataFrame, rows, or a dict with cell
colours) becomes an HTML table whose header and cells, read back by Python's own HTML parser, are the values
pandas holds, every cell escaped. In the browser: tests/test_keyboard.py and tests/test_phone.py audit every
lab's tables with axe, tests/test_lecture.py downloads one as CSV, tests/test_attention.py opens a head by a
click on its cell."""

from __future__ import annotations

from html.parser import HTMLParser

import numpy as np
import pandas as pd

from labs.core.ui.table import ReadOnlyTable, table_html


class TableReader(HTMLParser):
    """The caption, the header cells and the body's rows of cells (text, attributes), as a browser reads them."""

    def __init__(self):
        super().__init__()
        self.caption, self.head, self.rows, self.where, self.cell = "", [], [], None, None
        self.region = {}

    def handle_starttag(self, tag, attrs):
        if tag == "div" and not self.region:
            self.region = dict(attrs)
        elif tag in ("thead", "tbody", "caption"):
            self.where = tag
        elif tag == "tr" and self.where == "tbody":
            self.rows.append([])
        elif tag in ("th", "td"):
            self.cell = ["", dict(attrs)]

    def handle_endtag(self, tag):
        if tag in ("th", "td"):
            (self.head if self.where == "thead" else self.rows[-1]).append(tuple(self.cell))
            self.cell = None
        elif tag == "caption":
            self.where = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell[0] += data
        elif self.where == "caption":
            self.caption += data


def read(markup: str) -> TableReader:
    reader = TableReader()
    reader.feed(markup)
    return reader


def test_a_dataframe_becomes_a_table_of_its_own_headers_and_cells():
    frame = pd.DataFrame({"word": ["low", "lower"], "count": np.array([5, 2], dtype=np.int64),
                          "p": np.array([0.25, np.nan], dtype=np.float32)})
    table = read(ReadOnlyTable(["ignored"], "The corpus now").postprocess(frame))
    assert table.caption == "The corpus now" and table.region["aria-label"] == "The corpus now"
    assert [text for text, _ in table.head] == list(frame.columns)
    assert all(attrs["scope"] == "col" for _, attrs in table.head)
    assert [[text for text, _ in row] for row in table.rows] == [["low", "5", "0.25"], ["lower", "2", ""]]
    # Numbers sit right (a class), words do not.
    assert [attrs.get("class") for _, attrs in table.rows[0]] == [None, "lab-num", "lab-num"]


def test_rows_take_the_tables_headers_and_a_dict_colours_its_cells():
    rows = [["L0", "prev 0.0"], ["L1", "first 2.4"]]
    table = read(ReadOnlyTable(["layer", "H0"], "Map").postprocess(rows))
    assert [text for text, _ in table.head] == ["layer", "H0"] and len(table.rows) == 2
    coloured = read(ReadOnlyTable([], "Map").postprocess(
        {"headers": ["layer", "H0"], "data": rows, "colours": [["#fff", "#bfdbfe"], ["#fff", "#fecaca"]]}))
    assert [[attrs["style"] for _, attrs in row] for row in coloured.rows] == [
        ["background-color: #fff", "background-color: #bfdbfe"], ["background-color: #fff", "background-color: #fecaca"]]
    assert [[text for text, _ in row] for row in coloured.rows] == rows


def test_every_header_cell_and_caption_is_escaped():
    hostile = '<img src=x onerror="alert(1)">'
    markup = table_html([hostile], [[hostile]], caption=hostile)
    assert "<img" not in markup
    table = read(markup)
    assert table.caption == hostile and table.head[0][0] == hostile and table.rows[0][0][0] == hostile


def test_no_value_is_an_empty_table_under_its_headers():
    table = read(ReadOnlyTable(["blank", "rank"], "Predictions").postprocess(None))
    assert [text for text, _ in table.head] == ["blank", "rank"] and table.rows == []
