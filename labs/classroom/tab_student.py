"""Ask the class, the student's panel: above the tab bar, phone first (390×844), for a page opened with
?class=CODE (a link or the QR code) or after "Join" in the Class tab. The question, one answer box, Send;
"waiting for the lecturer" until the reveal; then the class's answers and where the student's own stood.
The page looks for changes every few seconds without a Gradio event (assets/js/classroom.js asks
labs/classroom/poll_route.py for the class's version number); only when it changed does it press the panel's
hidden "refresh" button, whose event redraws what changed."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from labs.classroom import answers, sessions, views
from labs.core.errors import LabError
from labs.core.ui import ui
from labs.core.ui.build import Build

# The page's URL keeps the class (a reload stays in it); the body class lets the CSS put the panel first.
IN_CLASS_JS = """(page) => { if (page && page.code) {
  const url = new URL(window.location); url.searchParams.set('class', page.code);
  window.history.replaceState(null, '', url); document.body.classList.add('lab-in-class');
  const panel = document.getElementById('lab-class-student'); if (panel) panel.scrollIntoView(); } }"""
LEAVE_JS = """() => { const url = new URL(window.location); url.searchParams.delete('class');
  window.history.replaceState(null, '', url); document.body.classList.remove('lab-in-class'); }"""


@dataclass
class Panel:
    column: gr.Column
    head: gr.Markdown
    question: gr.HTML
    word: gr.Textbox
    choice: gr.Radio
    sure: gr.Radio  # how sure the student is (optional, one tap)
    send: gr.Button
    status: gr.Markdown
    results: gr.HTML
    page: gr.State  # {"code", "student"} of this page, or None
    seen: gr.State  # the session version this page shows
    refresh: gr.Button  # hidden; classroom.js presses it when the class's version changed

    def view_outputs(self) -> list:
        """What a change of the class redraws, in the order of VIEW (as_list)."""
        return [getattr(self, name) for name in VIEW]


VIEW = ("column", "head", "question", "word", "choice", "sure", "send", "status", "results", "seen")


def as_list(updates: dict) -> list:
    return [updates.get(name, gr.skip()) for name in VIEW]


def status_text(state: dict) -> str:
    question = state["question"]
    if state["closed"]:
        return views.status_html("The class has ended. Thank you! The labs below stay open.")
    if question is None:
        return views.status_html("✓ You are in. Waiting for the lecturer's question…")
    if state["revealed"]:
        return views.status_html("The answers are revealed. Wait for the next question.")
    if question.get("closes_in") == 0:
        mine = f" Your answer “{ui.esc(state['your_answer'])}” is in." if state["your_answer"] else ""
        return views.status_html(f"Time is up: answering is closed.{mine} Wait for the lecturer.")
    if state["your_answer"]:
        return views.status_html(f"✓ Received: “{ui.esc(state['your_answer'])}”{views.sure_words(state)}. You can "
                                 f"change it until the lecturer reveals the answers ({state['answers']} so far).")
    if question.get("round") == 2:  # peer instruction: the same question again, after talking it over
        first = state.get("your_first_answer")
        mine = f" Your first answer: “{ui.esc(first)}”." if first else ""
        return views.status_html(f"Vote again, now that you have discussed it.{mine} Keep it or change it, then "
                                 f"press Send ({state['answers']} answered so far).")
    return views.status_html(f"Type your answer and press Send ({state['answers']} answered so far).")


def view(state: dict, seen, page: dict | None = None) -> dict:
    """The panel for this state of the class; the answer box keeps what the student typed unless the question
    changed. The page's own class and id ride along, hidden, for Send (assets/js/classroom.js posts the answer to
    poll_route's /class/answer, not through a Gradio event)."""
    question = state["question"]
    kind = question["kind"] if question else None
    open_question = (question is not None and not state["revealed"] and not state["closed"]
                     and question.get("closes_in") != 0)
    new_question = not isinstance(seen, dict) or seen.get("question") != (question or {}).get("id")
    updates = {
        "head": f"**Class {ui.md(state['shown_code'])}**" + (f" · {ui.md(state['title'])}" if state["title"] else ""),
        "question": views.question_html(question, waiting="Waiting for the lecturer's question…")
        + views.page_marker(page, question),
        "word": gr.update(visible=open_question and kind != "choice", placeholder=views.ANSWER_HINTS.get(kind, ""),
                          **({"value": ""} if new_question else {})),
        "choice": gr.update(visible=open_question and kind == "choice",
                            choices=question["choices"] if kind == "choice" else [],
                            **({"value": None} if new_question else {})),
        "sure": gr.update(visible=open_question, **({"value": None} if new_question else {})),
        "send": gr.update(visible=open_question),
        "status": status_text(state),
        "results": views.student_results(state["results"], state["your_answer"],
                                                                     state.get("your_confidence")) if state["revealed"] else "",
        "seen": {"version": state["version"], "question": (question or {}).get("id")},
        "column": gr.update(visible=True),
    }
    return updates


def refused(message: str) -> dict:
    return {"column": gr.update(visible=True), "head": "**Ask the class**", "question": "",
            "word": gr.update(visible=False), "choice": gr.update(visible=False), "sure": gr.update(visible=False),
            "send": gr.update(visible=False),
            "status": views.status_html(f"⚠️ {ui.esc(message)}"), "results": ""}


def build_panel(ctx: Build) -> Panel:
    """The panel, hidden until the page is in a class; made once, above the tab bar (the class lab keeps it in
    the build: ctx.student_panel)."""
    hooks = ctx.create_states()
    with gr.Column(visible=False, elem_id="lab-class-student") as column:
        head = gr.Markdown(elem_id="lab-class-head")
        question = gr.HTML(elem_id="lab-class-student-question")
        word = gr.Textbox(label="Your answer", max_lines=1, max_length=answers.MAX_ANSWER_CHARS,
                          elem_id="lab-class-answer", autofocus=False)
        choice = gr.Radio([], label="Your answer", visible=False, elem_id="lab-class-choice")
        sure = gr.Radio(list(answers.CONFIDENCE_LEVELS), label="How sure are you? (optional)",
                        elem_id="lab-class-sure")
        send = gr.Button("Send", variant="primary", elem_id="lab-class-send")
        status = gr.HTML(elem_id="lab-class-status")
        results = gr.HTML(elem_id="lab-class-results")
        leave = gr.Button("Leave the class", size="sm", elem_classes=["lab-secondary"])
        refresh = gr.Button("Refresh the class", visible="hidden", elem_id="lab-class-refresh")
    panel = Panel(column, head, question, word, choice, sure, send, status, results, gr.State(None), gr.State(None),
                  refresh)
    outputs = panel.view_outputs()

    def on_open(membership, request: gr.Request):
        code = (dict(request.query_params) if request is not None else {}).get("class")
        if not code:
            return gr.skip(), gr.skip(), *[gr.skip()] * len(outputs)
        return enter(code, membership, request)

    def on_refresh(page, seen, request: gr.Request):
        if not page:
            return [gr.skip()] * len(outputs)
        snapshot = sessions.snapshot(page["code"])
        if snapshot is not None and isinstance(seen, dict) and snapshot.session.version == seen.get("version"):
            return [gr.skip()] * len(outputs)
        try:
            return as_list(view(sessions.class_state(page["code"], page["student"], request), seen, page))
        except LabError as exc:
            return as_list(refused(str(exc)))

    def on_send(page, seen, word, choice, sure, request: gr.Request):
        if not page:
            return views.status_html("⚠️ Join a class first.")
        snapshot = sessions.snapshot(page["code"])
        kind = snapshot.question.kind if snapshot and snapshot.question else None
        try:
            shown = seen.get("question") if isinstance(seen, dict) else None  # the question this page shows
            sent = sessions.class_answer(page["code"], page["student"], choice if kind == "choice" else word, sure,
                                         shown, request)
        except LabError as exc:
            return views.status_html(f"⚠️ {ui.esc(str(exc))}")
        again = " It replaces your earlier answer." if sent["replaced"] else ""
        return views.status_html(f"✓ Received: “{ui.esc(sent['answer'])}”{views.sure_words(sent)}.{again} You can "
                                 "change it until the lecturer reveals the answers.")

    state_inputs = [hooks.membership]
    ui.wire(ctx.demo.load, on_open, state_inputs, [hooks.membership, panel.page, *outputs], queue=False)
    ui.wire(refresh.click, on_refresh, [panel.page, panel.seen], outputs, queue=False, show_progress="hidden")
    ui.wire([send.click, word.submit], on_send, [panel.page, panel.seen, word, choice, sure], status, queue=False,
            show_progress="minimal")  # a row in the database: no queue (labs/classroom/tab.py)
    ui.wire(leave.click, lambda: (None, gr.update(visible=False)), None, [panel.page, column],
            queue=False).then(None, js=LEAVE_JS)
    return panel


def enter(code, membership, request) -> list:
    """A page joining a class (by its link or a typed code): the browser's ids, the page's place, the panel."""
    try:
        page = sessions_join(code, membership, request)
        state = sessions.class_state(page["code"], page["student"], request)
    except LabError as exc:
        return [gr.skip(), None, *as_list(refused(str(exc)))]
    ids = (membership or {}).get("ids") if isinstance(membership, dict) else None
    membership = {"ids": {**(ids if isinstance(ids, dict) else {}), page["code"]: page["student"]}}
    return [membership, page, *as_list(view(state, None, page))]


def sessions_join(code, membership, request) -> dict:
    """This page's place in the class: the student id this browser already has for it, or a new one."""
    found = sessions.session_of_code(code, request)
    code = found.session.code
    known = ((membership or {}).get("ids") or {}).get(code) if isinstance(membership, dict) else None
    if not (isinstance(known, str) and sessions.STUDENT_ID.match(known)):
        known = sessions.class_join(code, request)["student_id"]
    return {"code": code, "student": known}
