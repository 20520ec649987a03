"""Ask the class's API endpoints, one per action of a class session (labs.core.work.endpoints: app.py registers
them, docs/api.md is written from them)."""

from __future__ import annotations

from labs.classroom import plans, records, report, second_vote, sessions, timer
from labs.core.work.endpoints import Endpoint

# A class's own actions are a database row or two (a few ms): they skip Gradio's queue, whose bookkeeping per event
# costs more than the action (measured: tests/loadtest_class.py); the reveal runs the model, so it is queued.
QUEUED = {"class_reveal", "class_plan"}  # the class actions that run a model (a plan's word questions are read)

_ENDPOINTS = (
    (sessions.class_start, "class_start", "class_start(title) -> {code, shown_code, title, join_url, lecturer_key, "
     "lecturer_url}: a new class session (the key is in this answer only)"),
    (sessions.class_join, "class_join", "class_join(code) -> {code, shown_code, title, student_id}"),
    (sessions.class_ask, "class_ask", "class_ask(lecturer_key, kind, text, model, choices, correct, top_k) -> "
     "{question_id, kind, text, model, settings, choices, correct}; kind: fill_mask | next_token | choice | number"),
    (sessions.class_answer, "class_answer", "class_answer(code, student_id, answer, confidence, question_id) -> "
     "{question_id, replaced, answer, confidence}: stored before this returns; a second answer replaces the first; "
     "confidence (optional) 1 guessing … 4 sure; question_id (optional) the question the page shows"),
    (sessions.class_state, "class_state", "class_state(code, student_id) -> {question, answers, revealed, results, "
     "your_answer, closed, version}: results only after the reveal"),
    (second_vote.class_round, "class_round", "class_round(lecturer_key) -> {question_id, round: 2, first_round, kind, "
     "text, ...}: peer instruction's second vote on the current question, its answers kept apart from the first's"),
    (timer.class_timer, "class_timer", "class_timer(lecturer_key, seconds, action) -> {question_id, closes_in}: "
     "action start | add | stop; at zero answering closes"),
    (plans.class_plan, "class_plan", "class_plan(lecturer_key, plan, format, export) -> {questions, next, left, "
     "filename, file}: the lecture's questions prepared ahead (CSV, GIFT, Moodle XML, JSON or \"handout\")"),
    (sessions.class_reveal, "class_reveal", "class_reveal(lecturer_key) -> {class: [{answer, count, share, "
     "model_prob, model_rank, grouped}], other, model_top: [{answer, prob, class_share}], agreement: {...}}"),
    (sessions.class_hide, "class_hide", "class_hide(lecturer_key, answer, hide) -> {hidden}"),
    (sessions.class_min_count, "class_min_count", "class_min_count(lecturer_key, min_count) -> the overview"),
    (plans.class_next, "class_next", "class_next(lecturer_key) -> the next prepared question asked, or "
     "{question: null}: between questions"),
    (sessions.class_overview, "class_overview", "class_overview(lecturer_key) -> {code, current: {question, "
     "answers, results}, history, workbook}"),
    (sessions.class_count, "class_count", "class_count(lecturer_key) -> {question_id, answers, version}"),
    (records.class_export, "class_export", "class_export(lecturer_key) -> {filename, csv}: question, kind, "
     "model, answer, count, model probability, model rank, time revealed, vote (1, or 2 for a second vote)"),
    (report.class_report, "class_report", "class_report(lecturer_key, format) -> {filename, format, text}: the "
     "lecture's record, every question and vote with confidence and the model's figures, as html or csv"),
    (sessions.class_close, "class_close", "class_close(lecturer_key) -> {closed}"),
    (sessions.class_delete, "class_delete", "class_delete(lecturer_key) -> {deleted}: every answer, now"),
    (records.class_share_workbook, "class_share_workbook", "class_share_workbook(code, student_id, answers) -> "
     "{shared, verdicts}: the workbook's verdicts per question, never its answers"),
)
ENDPOINTS = tuple(Endpoint(name, fn, description, queue=name in QUEUED) for fn, name, description in _ENDPOINTS)
