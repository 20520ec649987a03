"""Escaping what a student typed (or a model wrote) before it reaches the page: no gradio here, so that
compute modules that write Markdown (the Part B workbook's evidence) can use it too."""

from __future__ import annotations

import html
import re

MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()#+\-.!|>~])")


def esc(text) -> str:
    """Escape anything user-typed (or model-produced) before it becomes HTML."""
    return html.escape(str(text), quote=True)


def md(text) -> str:
    """Text as gr.Markdown must receive it to show it literally: no tag, and no Markdown either
    (a sentence with **stars** or [a](link) stays as typed)."""
    return MARKDOWN_PUNCTUATION.sub(r"\\\1", html.escape(str(text), quote=False))
