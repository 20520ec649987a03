"""Ask the class, the lecturer's buttons that are more than one endpoint call: files to download (the class as
CSV, the lecture's report, the prepared questions), a question added to the prepared ones, the timer's buttons.
tab.py wires them; each checks the lecturer key through the endpoint it calls."""

from __future__ import annotations

import json

import gradio as gr

from labs.classroom import plans, presets, records, report, sessions, timer


def download(filename: str, kind: str, text: str) -> str:
    """What the page's hidden box hands to tab_projector.DOWNLOAD_JS: a file to save."""
    return json.dumps({"filename": filename, "type": kind, "text": text})


def on_export(state, request: gr.Request):
    exported = records.class_export((state or {}).get("key"), request)
    return download(exported["filename"], "text/csv", exported["csv"])


def on_report(form: str):
    def handler(state, request: gr.Request):
        made = report.class_report((state or {}).get("key"), form, request)
        return download(made["filename"], "text/html" if form == "html" else "text/csv", made["text"])
    return handler


def on_plan_export(state, form, request: gr.Request):
    made = plans.class_plan((state or {}).get("key"), export=form, request=request)
    return download(made["filename"], "application/xml" if form == "xml" else "text/plain", made["file"])


def add_to_plan(key, kind, text, model, choices, correct, top_k, request=None) -> dict:
    """The question in the form, after the prepared ones (the lecture goes on where it was)."""
    plan = sessions.class_overview(key, request)["plan"]["questions"]
    question = {"kind": kind, "text": text, "model": model, "choices": choices, "correct": correct, "top_k": top_k}
    added = plans.class_plan(key, [*plan, question], request=request)
    gr.Info(f"Prepared: question {len(added['questions'])} of the lecture. “Next” asks the prepared ones in order.")
    return added


def timer_action(action: str, seconds: int | None = None):
    """A timer button: start with its seconds (or the typed ones), add 30 s, or take the timer off."""
    def act(key, *typed, request=None):
        return timer.class_timer(key, typed[0] if typed else seconds, action, request=request)
    return act


def use_handout(key, request=None) -> dict:
    """The handout's Part A as the lecture's prepared questions, and how many of them this server can ask."""
    loaded = plans.class_plan(key, plans.HANDOUT, request=request)
    total = len(presets.PRESETS)
    kept = len(loaded["questions"])
    gr.Info(f"Prepared: the handout's {kept} questions." if kept == total else
            f"Prepared: {kept} of the handout's {total} questions; its fill-in-the-blank ones need a masked LM "
            "(BERT), which is not offered here.")
    return loaded
