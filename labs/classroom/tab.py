"""Ask the class, the tab: students join with a code; the lecturer starts a class, asks (here, from the handout,
or from Fill in the blank and Next token), watches the count, reveals the class beside the model. The
student's own panel sits above the tab bar (tab_student); the labs' "Ask the class" buttons and the
workbook's "Share my results" are wired here once every tab exists (connect)."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr
from gradio.context import LocalContext

from labs.classroom import plans, records, second_vote, sessions, tab_lecturer, tab_projector, tab_student, timer, views
from labs.classroom.tab_actions import add_to_plan, on_export, on_plan_export, on_report, timer_action, use_handout
from labs.core.errors import LabError
from labs.core.ui import ui
from labs.core.ui.build import Build

TITLE = "Ask the class"
ID = "classroom"
EXPLAINER = """**The class is a language model too.** The lecturer asks, everyone answers from their phone (a code,
a link or a QR code; no account, no name), and the answers stay hidden until the lecturer reveals them beside
the real model's: its probability of each word the class gave, its own top guesses, and how much the class and
the model agree (the model's rank of the class's favourite, its perplexity on the class)."""
TRY_THIS = (
    "Before the lecture (Part A, A2): ask “The cat sat on the ____” and reveal: does the class agree with BERT?",
    "A3: ask “Once upon a” as a next-word question: is the class's favourite the model's favourite?",
    "Ask a word the model splits into pieces: how is its probability computed (see the note under the chart)?",
    "Students: after the workbook (Handout tab), press “Share my results with the class”: the lecturer sees how "
    "many got each question right, never your answers.")
# On a lecturer's page every lab shows its "Ask the class" button (assets/lab.css: body.lab-lecturing).
LECTURING_JS = "(s) => { document.body.classList.toggle('lab-lecturing', !!(s && s.key)); }"
# The lecturer link's key was moved out of the address bar before the page drew (assets/js/classroom.js).
READ_LINK_KEY_JS = """(unused, state) => { const key = sessionStorage.getItem('lm-lab-lecturer-link') || '';
  sessionStorage.removeItem('lm-lab-lecturer-link'); return [key, state]; }"""
OPEN_CLASS_TAB_JS = "() => { const tab = document.getElementById('lab-group-class-button'); if (tab) tab.click(); }"
VIEW = ("start_box", "lecturing", "join_row", "card", "question", "count", "reveal", "again", "next", "timer_row",
        "ask_box", "min_count", "hide_choice", "agreement", "class_plot", "details", "model_plot", "note", "history",
        "workbook", "plan_table", "timer", "seen")


def as_list(updates: dict) -> list:
    return [updates.get(name, gr.skip()) for name in VIEW]


def views_of(state: dict | None, overview: dict | None) -> list:
    lecturing = overview is not None
    updates = {"start_box": gr.update(visible=not lecturing), "lecturing": gr.update(visible=lecturing),
               "join_row": gr.update(visible=not lecturing),
               "card": card(state, overview), **tab_projector.projector_updates(overview)}
    return as_list(updates)


def card(state: dict | None, overview: dict | None) -> str:
    """The join card, folded to one line once the current question has answers (the room looks at the question)."""
    if overview is None or not state:
        return ""
    answered = (overview["current"] or {}).get("answers", 0) > 0
    return views.join_line(state) if answered else tab_lecturer.card_html(state)


def overview_for(state, request) -> list:
    """[lecturer state, *views]: the class this page lectures, or none (a key that stopped working is forgotten)."""
    key = state.get("key") if isinstance(state, dict) else None
    if not key:  # a page that lectures nothing keeps the tab as it was built (every student's page open)
        return [gr.skip()] * (len(VIEW) + 1)
    try:
        overview = sessions.class_overview(key, request)
    except LabError:
        return [{}, *views_of(None, None)]
    return [gr.skip(), *views_of(state, overview)]


def on_page_open(link_key, state, request: gr.Request):
    """A lecturer link (its key read from the page, never shown) or the key this browser kept."""
    if link_key:
        try:
            overview = sessions.class_overview(link_key, request)
        except LabError as exc:
            gr.Warning(ui.esc(str(exc)))
            return overview_for(state, request)
        base = sessions.public_url(request)
        state = {"key": link_key, "code": overview["code"], "shown_code": overview["shown_code"],
                 "title": overview["title"], "join_url": sessions.join_url(base, overview["code"]),
                 "lecturer_url": sessions.lecturer_url(base, link_key)}
        return [state, *views_of(state, overview)]
    return overview_for(state, request)


def acting(action):
    """A lecturer's button: action(key, *values, request) with the key this page keeps, then the projector."""
    def handler(state, *values):
        request = LocalContext.request.get(None)  # Gradio hands no gr.Request to a function taking *values
        key = state.get("key") if isinstance(state, dict) else None
        action(key, *values, request=request)
        return overview_for(state, request)
    return handler


def on_start(title, request: gr.Request):
    state = tab_lecturer.start_state(sessions.class_start(title, request))
    return [state, *views_of(state, sessions.class_overview(state["key"], request))]


def on_tick(state, seen, request: gr.Request):
    """The live count: one cached look a second; the whole projector only when the class changed."""
    key = state.get("key") if isinstance(state, dict) else None
    if not key:
        return [gr.skip()] * (len(VIEW) + 1)
    now = sessions.class_count(key, request)
    seen = seen if isinstance(seen, dict) else {}
    if now["version"] != seen.get("version"):
        return overview_for(state, request)
    if now["answers"] == seen.get("answers"):
        return [gr.skip()] * (len(VIEW) + 1)
    updates = {"count": views.count_html(now["answers"], seen.get("revealed", False)),
               "seen": {**seen, "answers": now["answers"]}}
    if not seen.get("answers") and now["answers"]:  # the first answers: the join card folds to one line
        updates["card"] = views.join_line(state)
    return [gr.skip(), *as_list(updates)]


def on_plan_file(state, data, request: gr.Request):
    """A prepared lecture's file imported, or refused with the line that is wrong: either way the box is emptied
    for the next file."""
    try:
        plans.class_plan((state or {}).get("key"), data, request=request)
    except LabError as exc:
        gr.Warning(ui.esc(str(exc)))
    return [None, *overview_for(state, request)]


def on_delete(state, request: gr.Request):
    sessions.class_delete((state or {}).get("key"), request)
    return [{}, *views_of(None, None)]


def build_student_panel(ctx: Build) -> None:
    """The student's panel, above the tab bar (app.py builds it before the tabs: their buttons use its states);
    kept in the build (ctx.student_panel) for the Class tab's "Join" and the workbook's "Share"."""
    ctx.student_panel = tab_student.build_panel(ctx)


def on_join(code, membership, request: gr.Request):
    return tab_student.enter(code, membership, request)


def layout() -> SimpleNamespace:
    """The tab: a student's join box; a lecturer's start, then the projector (the question and its count beside
    the join card, the results), the form that asks, and what the lecturer needs now and then."""
    parts = SimpleNamespace()
    with gr.Row(elem_id="lab-class-join-row") as parts.join_row:
        parts.code = gr.Textbox(label="Student: join a class with its code", placeholder="KX7-M2Q", max_length=12,
                                scale=3)
        parts.join = gr.Button("Join", variant="primary", scale=1)
    parts.start_box, parts.title, parts.start = tab_lecturer.build_start()
    with gr.Column(visible=False, elem_id="lab-class-lecturing") as parts.lecturing:
        with gr.Row():
            with gr.Column(scale=3):
                parts.question, parts.count, parts.reveal, parts.again, parts.next = tab_projector.build_live()
                (parts.timer_row, parts.timer_presets, parts.seconds, parts.timer_typed, parts.timer_more,
                 parts.timer_stop) = tab_projector.build_timer()
            with gr.Column(scale=2, min_width=300):
                parts.card, parts.copy, parts.end = tab_lecturer.build_card()
        parts.agreement, parts.class_plot, parts.details, parts.model_plot, parts.note = tab_projector.build_results()
        (parts.ask_box, parts.preset, parts.source, parts.kind, parts.text, parts.model, parts.choices, parts.correct,
         parts.top_k, parts.ask, parts.prepare) = tab_lecturer.build_ask()
        (parts.plan_box, parts.plan_table, parts.plan_upload, parts.plan_handout, parts.plan_format,
         parts.plan_export) = tab_lecturer.build_plan()
        (parts.min_count, parts.hide_choice, parts.hide, parts.history, parts.export, parts.report_html,
         parts.report_csv, parts.export_text, parts.delete, parts.workbook) = tab_projector.build_more()
    parts.timer, parts.seen = gr.Timer(tab_projector.POLL_SECONDS, active=False), gr.State(None)
    return parts


def build(ctx: Build) -> None:
    hooks = ctx.class_hooks
    ui.explainer(EXPLAINER, "lab-class-explainer")  # folded while this page lectures (assets/lab.css)
    parts = layout()
    ui.try_this(*TRY_THIS)
    tab_lecturer.wire(parts)
    redrawn = [hooks.lecturer, *(getattr(parts, name) for name in VIEW)]
    link_key = gr.Textbox(visible=False)
    lecturing = dict(fn=None, inputs=hooks.lecturer, outputs=None, js=LECTURING_JS, api_visibility="private")
    ui.wire(ctx.demo.load, on_page_open, [link_key, hooks.lecturer], redrawn, js=READ_LINK_KEY_JS).then(**lecturing)
    ui.wire(parts.start.click, on_start, parts.title, redrawn).then(**lecturing)
    ask_inputs = [parts.kind, parts.text, parts.model, parts.choices, parts.correct, parts.top_k]
    ui.wire(parts.ask.click, acting(sessions.class_ask), [hooks.lecturer, *ask_inputs], redrawn)
    ui.wire(parts.prepare.click, acting(add_to_plan), [hooks.lecturer, *ask_inputs], redrawn)
    buttons = [(parts.reveal, sessions.class_reveal), (parts.again, second_vote.class_round),
               (parts.next, plans.class_next), (parts.end, sessions.class_close),
               (parts.plan_handout, use_handout),
               (parts.timer_more, timer_action("add", 30)), (parts.timer_stop, timer_action("stop"))]
    buttons += [(b, timer_action("start", n)) for b, n in zip(parts.timer_presets, timer.PRESET_SECONDS)]
    for button, action in buttons:
        ui.wire(button.click, acting(action), hooks.lecturer, redrawn)
    ui.wire(parts.timer_typed.click, acting(timer_action("start")), [hooks.lecturer, parts.seconds], redrawn)
    ui.wire(parts.plan_upload.upload, on_plan_file, [hooks.lecturer, parts.plan_upload], [parts.plan_upload, *redrawn])
    ui.wire(parts.min_count.release, acting(sessions.class_min_count), [hooks.lecturer, parts.min_count], redrawn)
    ui.wire(parts.hide.click, acting(sessions.class_hide), [hooks.lecturer, parts.hide_choice], redrawn)
    ui.wire(parts.timer.tick, on_tick, [hooks.lecturer, parts.seen], redrawn, queue=False, show_progress="hidden")
    for button, handler, inputs in ((parts.export, on_export, hooks.lecturer),
                                    (parts.report_html, on_report("html"), hooks.lecturer),
                                    (parts.report_csv, on_report("csv"), hooks.lecturer),
                                    (parts.plan_export, on_plan_export, [hooks.lecturer, parts.plan_format])):
        ui.wire(button.click, handler, inputs, parts.export_text).then(None, parts.export_text, None,
                                                                       js=tab_projector.DOWNLOAD_JS)
    ui.wire(parts.delete.click, on_delete, hooks.lecturer, redrawn).then(**lecturing)
    parts.copy.click(None, hooks.lecturer, None, js=tab_lecturer.COPY_LECTURER_LINK_JS, api_visibility="private")
    panel = ctx.student_panel
    ui.wire([parts.join.click, parts.code.submit], on_join, [parts.code, hooks.membership],
            [hooks.membership, panel.page, *panel.view_outputs()]).then(None, panel.page, None,
                                                                        js=tab_student.IN_CLASS_JS)
    ctx.lecturer_views = redrawn  # for connect: the labs' "Ask the class" buttons redraw them


def connect(ctx: Build) -> None:
    """The labs' "Ask the class" buttons and the workbook's "Share my results", recorded in this build while
    their tabs were built (ctx.class_hooks), wired now to this lab's functions and views."""
    hooks = ctx.class_hooks
    for button, kind, inputs in hooks.asks:
        names = list(inputs)

        def ask_from_lab(state, *values, kind=kind, names=names):
            request = LocalContext.request.get(None)
            given = dict(zip(names, values))
            key = state.get("key") if isinstance(state, dict) else None
            sessions.class_ask(key, kind, given.get("text", ""), given.get("model", ""),
                               top_k=given.get("top_k", sessions.DEFAULT_TOP_K), request=request)
            gr.Info("Asked: the class sees it now. Reveal it in the Class tab.")
            return overview_for(state, request)

        ui.wire(button.click, ask_from_lab, [hooks.lecturer, *inputs.values()], ctx.lecturer_views).then(
            None, js=OPEN_CLASS_TAB_JS)
    page = ctx.student_panel.page
    for button, workbook, note in hooks.shares:
        ui.wire(button.click, on_share, [page, workbook], note)


def on_share(page, workbook, request: gr.Request):
    if not page:
        return ui.notice("Join the class first (the lecturer's code or link); then share.")
    answers = workbook.get("answers", {}) if isinstance(workbook, dict) else {}
    shared = records.class_share_workbook(page["code"], page["student"], answers, request)
    if not shared["shared"]:
        return "Nothing to share yet: answer a question of the workbook, then share (only right or wrong is shared)."
    return (f"✓ Shared with the class: {shared['shared']} verdict(s) (right, wrong or open). Your answers stay in "
            "your browser; share again after more questions.")

