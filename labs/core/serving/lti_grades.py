"""Grades back to the LMS (LTI Assignment and Grade Services): a launched student's workbook verdicts as a score,
kept in the class database and posted to the activity's line item, with retries for a platform that fails a post.

The score is the right answers over the activity's marked questions; its open questions (never marked) are reported
as pending (gradingProgress PendingManual), and the comment carries each verdict with its evidence, the model's
numbers. A re-check replaces the score (same line item, later timestamp). Posts leave the student's request: a
small pool sends them, so a check is no slower with an LMS than without; the pool sends the latest stored score,
so two quick checks never arrive out of order."""

from __future__ import annotations

import datetime
import json
import logging
import re
import time
from concurrent.futures import Future, ThreadPoolExecutor

from pylti1p3.assignments_grades import AssignmentsGradesService
from pylti1p3.exception import LtiException
from pylti1p3.grade import Grade
from pylti1p3.lineitem import LineItem

from labs.core.serving import lti_adapter, lti_store

log = logging.getLogger(__name__)

MARKED = "check"  # the workbook's kind of question that is judged right or wrong
RETRY_DELAYS_S = (0.5, 2.0, 5.0)  # after the first post fails: three more tries, then "Send scores again"
COMMENT_LIMIT = 4000  # platforms cut long comments; each verdict's evidence is cut to fit
_pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="lti grades")


def score_of(questions: list[dict], results: list[dict]) -> dict:
    """The activity's score from the workbook's verdicts: questions = the activity's entries (part_b_questions),
    results = check_part_b's results for the answered ones."""
    by_id = {r["id"]: r for r in results}
    marked = [q for q in questions if q["kind"] == MARKED]
    right = sum(1 for q in marked if by_id.get(q["id"], {}).get("verdict") == "right")
    answered = sum(1 for q in marked if q["id"] in by_id)
    pending = [q["id"] for q in questions if q["kind"] != MARKED]
    lines = []
    for q in questions:
        result = by_id.get(q["id"])
        verdict = "pending (not marked)" if q["kind"] != MARKED else (result or {}).get("verdict", "not answered")
        evidence = " ".join(re.sub(r"[*`]|\|---", "", str((result or {}).get("evidence", ""))).split())
        lines.append(f"{q['id']}: {verdict}" + (f". {evidence[:300]}" if evidence else ""))
    comment = "\n".join(lines)
    return {"score_given": float(right), "score_maximum": float(len(marked)),
            "activity_progress": "Completed" if answered == len(marked) else "InProgress",
            "grading_progress": "PendingManual" if pending else "FullyGraded",
            "comment": comment[:COMMENT_LIMIT],
            "verdicts": {q["id"]: by_id.get(q["id"], {}).get("verdict", "not answered") if q["kind"] == MARKED
                         else "pending" for q in questions}}


def _grade(row) -> Grade:
    checked = datetime.datetime.fromtimestamp(row.checked_at, tz=datetime.timezone.utc)
    return (Grade().set_score_given(row.score_given).set_score_maximum(row.score_maximum)
            .set_activity_progress(row.activity_progress).set_grading_progress(row.grading_progress)
            .set_timestamp(checked.isoformat()).set_user_id(row.user_id).set_comment(row.comment))


def send_now(lineitem: str, user_id: str, delays=RETRY_DELAYS_S) -> bool:
    """Post the stored score of this student on this line item, retrying; True when the platform took it."""
    item = lti_store.line_item(lineitem)
    platform = lti_store.platform_by_id(item.platform_id) if item is not None else None
    if platform is None:
        return False
    ags = json.loads(item.ags)
    error = ""
    for attempt, delay in enumerate((0.0, *delays), start=1):
        if delay:
            time.sleep(delay)
        row = next((r for r in lti_store.scores_of(lineitem) if r.user_id == user_id), None)
        if row is None:
            return False
        try:
            connector = lti_adapter.CachedTokens(lti_adapter.registration_of(platform))
            service = AssignmentsGradesService(connector, ags)
            service.put_grade(_grade(row), LineItem({"id": lineitem}))
            lti_store.mark_sent(lineitem, user_id, attempt)
            return True
        except (LtiException, OSError) as exc:
            error = str(exc)
            response = getattr(exc, "response", None)
            if response is not None and getattr(response, "status_code", 0) == 401:
                lti_adapter.CachedTokens.forget()  # the platform no longer takes our token: ask for a new one
            log.warning("score for %s not taken by the platform (try %d): %s", lineitem, attempt, error[:200])
    lti_store.mark_sent(lineitem, user_id, len(delays) + 1, error or "not sent")
    return False


def send_later(lineitem: str, user_id: str) -> Future:
    return _pool.submit(send_now, lineitem, user_id)


def send_again(lineitem: str) -> dict:
    """The lecturer's "Send scores again": every stored score of the activity, posted now (in the pool)."""
    rows = lti_store.scores_of(lineitem)
    futures = [send_later(lineitem, row.user_id) for row in rows]
    sent = sum(1 for f in futures if f.result())
    return {"scores": len(rows), "sent": sent, "failed": len(rows) - sent}
