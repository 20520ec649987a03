"""LM Lab's theme: Gradio's Default (orange, blue, zinc; large text) with every text colour at WCAG 2.1 AA
contrast (4.5:1, 3:1 for large text) on the background it sits on, so that it reads for students with low
vision and on a projector that washes out light grey.

Gradio's Default puts info text and labels in light grey (#bbbbc2 on white: 1.9:1) and white on the
orange primary button (#f97316: 2.8:1). Here the subdued text is zinc 600, the labels zinc 700, the
primary button orange 700 (white on it: 5.2:1) and visited links blue 700. `CONTRAST_PAIRS` lists the
pairs and tests/test_accessibility.py checks them with WCAG's formula; axe-core checks the page."""

from __future__ import annotations

import gradio as gr
from gradio.themes import colors

WHITE = "#ffffff"
PAGE = colors.zinc.c50  # Gradio's page background (background_fill_secondary)
TEXT = colors.zinc.c800  # #27272a, body text
SUBDUED = colors.zinc.c600  # #52525b, info text, placeholders, the status line
LABEL = colors.zinc.c700  # #3f3f46, block labels and titles
PRIMARY = colors.orange.c700  # #c2410c, primary buttons (white text), the accent of checkboxes and sliders
PRIMARY_HOVER = colors.orange.c800  # #9a3412
LINK = colors.blue.c700  # #1d4ed8
LINK_HOVER = colors.blue.c800  # #1e40af
SECONDARY_BUTTON = colors.zinc.c200  # #e4e4e7 with black text
CHIP_TEXT = "#111827"  # lab.css: .lab-chip and .lab-piece text on their light hue backgrounds
CHIP_LIGHTEST_DARK = "#d1d5db"  # the darkest background a chip may have (plots.GREY): 12:1 with CHIP_TEXT

# name: (foreground, background, the contrast WCAG 2.1 AA asks for)
CONTRAST_PAIRS = {
    "body text": (TEXT, WHITE, 4.5),
    "body text on the page": (TEXT, PAGE, 4.5),
    "info text": (SUBDUED, WHITE, 4.5),
    "info text on the page": (SUBDUED, PAGE, 4.5),
    "labels": (LABEL, WHITE, 4.5),
    "primary button": (WHITE, PRIMARY, 4.5),
    "primary button, hover": (WHITE, PRIMARY_HOVER, 4.5),
    "secondary button": ("#000000", SECONDARY_BUTTON, 4.5),
    "links": (LINK, WHITE, 4.5),
    "links, hover": (LINK_HOVER, WHITE, 4.5),
    "links, visited": (colors.purple.c700, WHITE, 4.5),
    "stop button": (WHITE, colors.red.c700, 4.5),
    "error text": (colors.red.c700, WHITE, 4.5),
    "chips": (CHIP_TEXT, CHIP_LIGHTEST_DARK, 4.5),
    "presenter view text": ("#000000", WHITE, 4.5),
    "checkbox and slider accent (non-text, 3:1)": (PRIMARY, WHITE, 3.0),
}


def _luminance(hex_colour: str) -> float:
    value = hex_colour.lstrip("#")
    channels = [int(value[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    r, g, b = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(foreground: str, background: str) -> float:
    """WCAG 2.x contrast ratio of two opaque #rrggbb colours (1 to 21)."""
    light, dark = sorted((_luminance(foreground), _luminance(background)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def lab_theme() -> gr.themes.Base:
    """The theme app.py launches with. Dark mode keeps Gradio's own dark colours (already light on dark)."""
    return gr.themes.Default(text_size="lg").set(
        body_text_color=TEXT,
        body_text_color_subdued=SUBDUED,
        block_info_text_color=SUBDUED,
        block_label_text_color=LABEL,
        block_title_text_color=LABEL,
        input_placeholder_color=SUBDUED,
        button_primary_background_fill=PRIMARY,
        button_primary_background_fill_hover=PRIMARY_HOVER,
        button_primary_border_color=PRIMARY,
        button_primary_border_color_hover=PRIMARY_HOVER,
        button_primary_text_color=WHITE,
        button_primary_text_color_hover=WHITE,
        button_secondary_text_color="#000000",
        button_secondary_text_color_hover="#000000",
        button_cancel_background_fill=colors.red.c700,
        button_cancel_background_fill_hover=colors.red.c800,
        button_cancel_text_color=WHITE,
        color_accent=PRIMARY,
        link_text_color=LINK,
        link_text_color_active=LINK,
        link_text_color_hover=LINK_HOVER,
        link_text_color_visited=colors.purple.c700,
        error_text_color=colors.red.c700,
    )
