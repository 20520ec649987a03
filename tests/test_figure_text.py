"""A chart's text alternative (labs/core/ui/figure_text.py): its name, a one-sentence summary written from its
own traces, and a table of the same numbers; attached by plots' builders and by ui.friendly to any figure a
handler returns. The browser side (role="figure", aria-label, the caption, "Show as table") is checked on
every lab's page in each view's walk (tests/walks.py's audit: tests/test_keyboard.py for presenter view and the
desktop, tests/test_phone.py)."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest
from conftest import run_async
from plotly.subplots import make_subplots

from labs.core.ui import figure_text, plots


def _cells(table: dict) -> list[list[str]]:
    return [table["headers"], *table["rows"]]


def test_a_bar_chart_names_its_first_bars_and_how_many_there_are():
    labels, probs = [" a", " the", " very", " big", " small"], [0.31, 0.22, 0.08, 0.05, 0.04]
    fig = plots.bar_chart(labels, probs, title="Next-token probabilities")
    text = figure_text.text_of(fig)
    assert text["name"] == "Next-token probabilities"
    assert text["summary"] == "Next-token probabilities: a 0.31, the 0.22, very 0.08, … 5 bars."
    # The table holds every bar, as the chart draws it (plotly's own trace values, 3 significant figures).
    trace = fig.data[0]
    assert text["tables"][0]["rows"] == [[figure_text.plain(y), f"{x:.3g}"] for y, x in zip(trace.y, trace.x)]
    assert text["tables"][0]["headers"] == ["label", "probability"]


def test_the_largest_bar_is_named_when_it_is_not_among_the_first():
    fig = plots.bar_chart(["a", "b", "c", "d"], [0.1, 0.2, 0.05, 0.6])
    assert figure_text.text_of(fig)["summary"].endswith("… 4 bars; the largest, d 0.6.")


def test_a_lab_s_own_summary_is_kept():
    fig = plots.bar_chart(["x"], [1.0], summary="One bar: x is certain.")
    assert figure_text.text_of(fig)["summary"] == "One bar: x is certain."
    assert figure_text.text_of(figure_text.ensure(fig))["summary"] == "One bar: x is certain."


def test_a_heatmap_gives_its_size_range_and_strongest_cell_and_a_grid_table():
    fig = plots.heatmap([[0.9, 0.1], [0.3, 0.7]], ["The", "cat"], title="Layer 0, head 1")
    text = figure_text.text_of(fig)
    assert text["summary"] == ("Layer 0, head 1: a 2 × 2 grid (token (query) × attends to (key)), values from 0.1 to "
                               "0.9, the highest at The → The.")
    assert _cells(text["tables"][0]) == [["token (query) \\ attends to (key)", "The", "cat"],
                                         ["The", "0.9", "0.1"], ["cat", "0.3", "0.7"]]


def test_a_similarity_grid_names_its_most_similar_pair_off_the_diagonal():
    sim = [[1.0, 0.2, 0.8], [0.2, 1.0, 0.3], [0.8, 0.3, 1.0]]
    fig = plots.heatmap(sim, ["s1", "s2", "s3"], title="Sentence similarity", x_title="sentence", y_title="sentence")
    assert "the highest off the diagonal, 0.8, at s1 → s3" in figure_text.text_of(fig)["summary"]


def test_lines_over_the_same_x_share_one_table():
    fig = go.Figure([go.Scatter(x=["static", 0, 1], y=[1.0, 0.9, 0.7], name="same sense"),
                     go.Scatter(x=["static", 0, 1], y=[1.0, 0.8, 0.5], name="different senses")])
    fig.update_layout(title="Where the senses separate", xaxis_title="layer", yaxis_title="cosine")
    text = figure_text.text_of(figure_text.attach(fig))
    assert text["summary"] == ("Where the senses separate: same sense: 1 at static to 0.7 at 1, highest 1 at static; "
                               "different senses: 1 at static to 0.5 at 1, highest 1 at static.")
    assert _cells(text["tables"][0]) == [["layer", "same sense", "different senses"], ["static", "1", "1"],
                                         ["0", "0.9", "0.8"], ["1", "0.7", "0.5"]]


def test_labelled_points_keep_their_labels_and_typed_html_stays_text():
    fig = go.Figure(go.Scatter(x=[0.5, -1.25], y=[2, 3e24], text=[plots.safe("<b>bank</b>"), "river"], mode="markers"))
    text = figure_text.text_of(figure_text.attach(fig))
    assert text["name"] == "Chart"
    assert "<b>bank</b> (0.5, 2)" in text["summary"] and "river (-1.25, 3 × 10^24)" in text["summary"]
    assert _cells(text["tables"][0])[1] == ["<b>bank</b>", "0.5", "2"]


def test_side_by_side_panels_are_named_by_their_own_titles():
    fig = plots.bars_side_by_side([("BERT", ["dog", "cat"], [0.5, 0.25]), ("GPT-2", ["the", "a"], [0.4, 0.1])])
    text = figure_text.text_of(fig)
    assert text["summary"] == "Side by side: BERT, GPT-2: BERT: dog 0.5, cat 0.25; GPT-2: the 0.4, a 0.1."
    assert [t["caption"] for t in text["tables"]] == ["BERT", "GPT-2"]


def test_subplots_without_names_take_their_panel_titles():
    fig = make_subplots(rows=1, cols=2, subplot_titles=["head 0", "head 1"])
    fig.add_trace(go.Heatmap(z=[[1, 0], [0, 1]]), row=1, col=1)
    fig.add_trace(go.Heatmap(z=[[0.5, 0.5], [0.2, 0.8]]), row=1, col=2)
    text = figure_text.text_of(figure_text.attach(fig))
    assert text["summary"].startswith("Chart: head 0: a 2 × 2 grid") and "; head 1: a 2 × 2 grid" in text["summary"]
    assert [t["caption"] for t in text["tables"]] == ["head 0", "head 1"]


def test_a_long_table_says_how_many_rows_it_leaves_out():
    fig = plots.bar_chart([f"t{i}" for i in range(250)], [1 / (i + 1) for i in range(250)])
    table = figure_text.text_of(fig)["tables"][0]
    assert len(table["rows"]) == figure_text.MAX_ROWS and table["caption"].endswith("(the first 100 of 250 rows)")


def _bare() -> go.Figure:
    return go.Figure(go.Bar(x=["a", "b"], y=[3, 1]), layout=dict(title="Counts"))


def test_friendly_gives_every_returned_figure_its_text():
    from labs.core.ui import ui

    one, two, three = _bare(), _bare(), _bare()
    ui.friendly(lambda: (one, {"__type__": "update", "value": two}, "text"))()
    assert figure_text.text_of(one)["summary"] == "Counts: a 3, b 1." and figure_text.text_of(two)

    def stream():
        yield three, None

    list(ui.friendly(stream)())
    assert figure_text.text_of(three)

    async def follow():
        yield [_bare()]

    async def collect():
        return [v async for v in ui.friendly(follow)()]

    assert figure_text.text_of(run_async(collect())[0][0])  # a browser test may hold this thread's loop
    api_side = _bare()
    ui.friendly(lambda: api_side, for_browser=False)()  # an API returns JSON, never a figure: left as it is
    assert figure_text.text_of(api_side) is None


def test_a_stopped_stream_ends_its_handler_at_once():
    from labs.core.ui import ui

    ended = []

    def stream():
        try:
            yield 1
            yield 2
        finally:
            ended.append(True)

    running = ui.friendly(stream)()
    next(running)
    running.close()
    assert ended == [True]


@pytest.mark.parametrize("value, shown", [(0.30999, "0.31"), (12, "12"), (1.3e23, "1.3 × 10^23"), (2e-5, "2 × 10^-5"),
                                          (float("nan"), "none"), (None, ""), ("&lt;b&gt;", "<b>")])
def test_numbers_read_as_the_chart_prints_them(value, shown):
    assert figure_text.number(value) == shown
