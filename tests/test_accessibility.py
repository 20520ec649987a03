"""Accessibility (WCAG 2.1 A and AA): the theme's colours and the charts' titles. axe-core, through
axe-playwright-python, audits every lab's page once its first result is drawn, in each view's walk: presenter view
on a 1280×720 projector and then the desktop on the same page (tests/test_keyboard.py), and the phone
(tests/test_phone.py). The rules (no allow-list) and the chart-text-alternative rule are in tests/walks.py
("axe-core")."""

from __future__ import annotations


def test_the_theme_reaches_aa_contrast():
    """The colours the theme sets, checked with WCAG's formula (axe checks what it sees on the page)."""
    from labs.core.ui import theme

    for name, (fg, bg, needed) in theme.CONTRAST_PAIRS.items():
        assert theme.contrast(fg, bg) >= needed, (name, fg, bg, theme.contrast(fg, bg))


def test_every_chart_helper_gives_a_title():
    from labs.core.ui import plots

    fig = plots.bar_chart(["a", "b"], [0.6, 0.4])
    assert fig.layout.title.text, "bar_chart needs a title that says what it shows"
    fig = plots.heatmap([[1, 0], [0.5, 0.5]], ["a", "b"])
    assert fig.layout.title.text
    fig = plots.bars_side_by_side([("one", ["a"], [1.0]), ("two", ["b"], [0.5])])
    assert fig.layout.title.text
