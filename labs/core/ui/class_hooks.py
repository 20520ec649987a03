"""What every lab's tab may use of a class session, without importing the class lab: the browser's copies of
the student's and the lecturer's place in a class, a lab's "Ask the class" button and the workbook's "Share
my results" button. The buttons are recorded in the app build's Hooks (labs.core.ui.build: Build.class_hooks)
while the tabs are built; the class lab wires them once every tab exists (labs/classroom/tab.py: connect),
with its own outputs.

The copies are gr.BrowserState (the browser's localStorage). Gradio encrypts them with a secret that the
page itself carries, so it protects nothing; a fixed one keeps a student's id and a lecturer's key across a
server restart and across front-ends (a random secret per process would forget them)."""

from __future__ import annotations

from dataclasses import dataclass, field

import gradio as gr

BROWSER_SECRET = "lm-lab-browser-state"
# A lab's ask button shows only on a lecturer's page (body.lab-lecturing, set by the class lab: assets/lab.css).
ASK_CLASS = "lab-ask-class"


@dataclass
class Hooks:
    """One app build's class hooks (labs.core.ui.build.Build.class_hooks): a second build starts afresh."""
    membership: gr.BrowserState | None = None  # {"ids": {code: student id}}: one id per class, kept
    lecturer: gr.BrowserState | None = None  # {"key", "code", "shown_code", "title", "join_url", "lecturer_url"}
    asks: list[tuple[gr.Button, str, dict]] = field(default_factory=list)  # (button, kind, {name: input})
    shares: list[tuple[gr.Button, gr.components.Component, gr.Markdown]] = field(default_factory=list)

    def create_states(self) -> Hooks:
        """The two browser copies; the app makes them once, before the tabs (their buttons take them as inputs)."""
        self.membership = gr.BrowserState({"ids": {}}, storage_key="lm-lab-class", secret=BROWSER_SECRET)
        self.lecturer = gr.BrowserState({}, storage_key="lm-lab-lecturer", secret=BROWSER_SECRET)
        return self

    def ask_button(self, kind: str, label: str, **inputs: gr.components.Component) -> gr.Button:
        """A lab's "Ask the class" button: the lab's current inputs (text, model, top_k) become the class's
        question of this kind (fill_mask, next_token). Shown on a lecturer's page only."""
        button = gr.Button(label, size="sm", elem_classes=[ASK_CLASS], scale=0, min_width=260)
        self.asks.append((button, kind, inputs))
        return button

    def share_button(self, workbook: gr.components.Component) -> gr.Button:
        """The workbook's "Share my results with the class (anonymous)": its verdicts reach the lecturer."""
        button = gr.Button("Share my results with the class (anonymous)", size="sm", scale=0, min_width=300,
                           elem_classes=["lab-share-class"])
        note = gr.Markdown(elem_classes=["lab-share-note"])
        self.shares.append((button, workbook, note))
        return button
