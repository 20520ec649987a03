"""What a class hands on: the session as CSV for the lecturer (`/class_export`), and a student's Part A & B
verdicts shared with the class (`/class_share_workbook`), never their answers."""

from __future__ import annotations

import csv
import io
import json
import time

from labs.classroom import sessions
from labs.core.errors import BadInput
from labs.core.work import services

PART_B_VERDICTS = ("right", "wrong", "open", "not measured here")


EXPORT_HEADERS = ["question", "kind", "model", "answer", "count", "model probability", "model rank", "time revealed",
                  "vote"]  # vote: 1, or 2 for peer instruction's second vote on the same question


def class_export(lecturer_key: str, request=None) -> dict:
    """`/class_export(lecturer_key)`: the session as CSV (one row per question and answer)."""
    session = sessions.session_of_key(lecturer_key, request)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(EXPORT_HEADERS)
    for q in sessions.db().questions_of(session.id):
        stored = json.loads(q.results) if q.results else {"answers": [{"answer": f, "count": n, "key": k}
                                                                      for k, f, n in sessions.db().tally(q.id)]}
        revealed = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(q.revealed_at)) + " UTC" if q.revealed_at else ""
        for a in stored["answers"] or [{"answer": "", "count": 0}]:
            prob = a.get("model_prob")
            writer.writerow([q.text, q.kind, q.model, csv_safe(a["answer"]), a["count"],
                             "" if prob is None else f"{prob:.6g}", a.get("model_rank") or "", revealed, q.vote_round])
    return {"code": session.code, "filename": f"lm-lab-class-{session.code}.csv", "csv": buffer.getvalue()}


def csv_safe(text: str) -> str:
    """A student's answer as a spreadsheet shows it: never a formula (=, +, -, @ would run in Excel)."""
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def class_share_workbook(code: str, student_id: str, workbook: dict, request=None) -> dict:
    """`/class_share_workbook(code, student_id, answers)`: a student's Part A & B answers checked (the workbook's
    own `/check_part_b`); only each question's verdict reaches the class, never the answers."""
    found = sessions.session_of_code(code, request)
    student_id = sessions.check_student(student_id)
    try:
        checked = services.get("check_part_b")(workbook)["results"]
    except BadInput:  # nothing answered yet: every question "not tried"
        checked = []
    verdicts = {r["id"]: r["verdict"] for r in checked if r["verdict"] in PART_B_VERDICTS}
    sessions.db().put_verdicts(found.session.id, student_id, verdicts, sessions.now())
    return {"shared": len(verdicts), "verdicts": verdicts}
