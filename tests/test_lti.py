"""LM Lab in a course's LMS (LTI 1.3, labs/core/serving/lti_*.py) against a real platform: tests/lti_platform.py, an
LMS built on lti1p3platform, served over HTTP beside the app's server. Registration by hand, the lecturer's deep
link, students' launches and checks, the grade book's scores equal to the workbook's verdicts and to the answers
computed by hand, a platform failing posts, "send scores again", key rotation, and every hostile token refused with
nothing stored."""

from __future__ import annotations

import math
import re
import time

import httpx
import pytest
import sqlalchemy as sa
from lti_platform import INSTRUCTOR, LEARNER, Platform, form_fields

from labs.core.serving import lti_routes, lti_store
from labs.part_b import facts, workbook

QUESTIONS = ["B1.2", "B2.1", "B2.2a"]  # two marked (masks counted, softmax by hand), one open (pending)
PATIENCE_S = 60


def softmax_by_hand() -> dict[str, str]:
    exps = [math.exp(x) for x in facts.B2_LOGITS]
    return {w: f"{e / sum(exps):.3f}" for w, e in zip(facts.B2_WORDS, exps)}


RIGHT = {"B1.2": {"n": "4", "bert": str(4 * 4), "gpt": str(4 * 5 // 2)}, "B2.1": softmax_by_hand(),
         "B2.2a": {"answer": "greedy picks the most probable token each step"}}
WRONG = {"B1.2": {"n": "4", "bert": "10", "gpt": "16"}, "B2.1": {"sat": "0.25", "ran": "0.25", "jumped": "0.25",
                                                                   "slept": "0.25"}}
HALF = {"B1.2": RIGHT["B1.2"], "B2.2a": {"answer": "I am not sure"}}  # one right, one not answered, the open one


@pytest.fixture(scope="module")
def lms(app_server):
    """The platform, serving; LM Lab registered in it and it in LM Lab (by hand, as docs/lms.md says)."""
    from labs.classroom import store as class_store

    lti_routes.configure(lambda: class_store.get().engine, class_store.data_dir())
    tool = app_server["url"].rstrip("/")
    with Platform(tool) as platform:
        e = platform.endpoints()
        lti_store.add_platform(e["issuer"], e["client_id"], e["auth_login_url"], e["auth_token_url"],
                               e["key_set_url"], e["deployment_ids"], name="test LMS")
        platform.tool = tool
        yield platform


def client() -> httpx.Client:
    return httpx.Client(timeout=PATIENCE_S)


def launch(browser_like: httpx.Client, url: str) -> httpx.Response:
    """What a browser does from the LMS's link: LM Lab's login, the platform's sign-in, the form posted back."""
    form = browser_like.get(url, follow_redirects=True)
    assert form.status_code == 200, form.text[:300]
    action, fields = form_fields(form.text)
    return browser_like.post(action, data=fields)


def session_in(page: str) -> str:
    return re.search(r"(?:name=session|id=lti-session) value='([^']+)'", page).group(1)


@pytest.fixture(scope="module")
def activity(lms):
    """The lecturer's deep link: three workbook questions, graded; the LMS made it an activity with a line item."""
    lecturer = client()
    chooser = launch(lecturer, lms.login_url("teacher-1", roles=(INSTRUCTOR,), deep_link=True))
    assert chooser.status_code == 200 and "Add LM Lab to your course" in chooser.text
    back = lecturer.post(f"{lms.tool}/lti/deep_link", data={"session": session_in(chooser.text), "kind": "workbook",
                                                           "title": "Masks and softmax", "question": QUESTIONS})
    action, fields = form_fields(back.text)
    assert action == f"{lms.url}/deep_link_return"
    added = lecturer.post(action, data=fields)
    assert added.status_code == 200 and "Masks and softmax" in added.text
    item = lms.activities[-1]
    assert item["lineItem"]["scoreMaximum"] == 2 and item["lineItem"]["label"] == "Masks and softmax"
    assert item["custom"] == {"lmlab_kind": "workbook", "lmlab_questions": ",".join(QUESTIONS)}
    return item


def open_activity(lms, item, user: str, roles=(LEARNER,)) -> tuple[httpx.Client, str, httpx.Response]:
    student = client()
    opened = launch(student, lms.login_url(user, roles=roles, activity=lms.activity_launch(item)))
    assert opened.status_code == 303, opened.text[:300]
    page = student.get(f"{lms.tool}/lti/{opened.headers['location']}")
    return student, session_in(page.text), page


def wait_for_scores(lms, lineitem: str, count: int) -> list[dict]:
    deadline = time.monotonic() + PATIENCE_S
    while len(lms.scores.get(lineitem, [])) < count:
        assert time.monotonic() < deadline, f"the grade book has {lms.scores.get(lineitem)}"
        time.sleep(0.05)
    return lms.scores[lineitem]


def rows(table: sa.Table) -> int:
    with lti_store.engine().connect() as c:
        return c.execute(sa.select(sa.func.count()).select_from(table)).scalar()


def pages_open() -> int:
    with lti_store.engine().connect() as c:
        return c.execute(sa.select(sa.func.count()).select_from(lti_store.values)
                         .where(lti_store.values.c.key.like("%page-%"))).scalar()


def test_three_students_scores_in_the_grade_book_equal_the_workbooks_verdicts(lms, activity):
    lineitem = activity["lineitem_url"]
    expected = {}
    for user, answers in (("s-right", RIGHT), ("s-wrong", WRONG), ("s-half", HALF)):
        student, session, page = open_activity(lms, activity, user)
        assert [q for q in QUESTIONS if f"data-id='{q}'" in page.text] == QUESTIONS
        assert "B3.1" not in page.text and "Ada Student" not in page.text  # only the activity; no name shown
        answer = student.post(f"{lms.tool}/lti/check", json={"session": session, "answers": answers})
        assert answer.status_code == 200, answer.text
        verdicts = {r["id"]: r["verdict"] for r in workbook.check_part_b(answers)["results"]}  # the workbook's own
        expected[user] = sum(v == "right" for q, v in verdicts.items() if q != "B2.2a")
        assert answer.json()["score"]["score_given"] == expected[user]
    assert expected == {"s-right": 2, "s-wrong": 0, "s-half": 1}  # the answers computed by hand above
    wait_for_scores(lms, lineitem, 3)
    book = lms.gradebook(lineitem)
    assert {user: book[user]["scoreGiven"] for user in expected} == expected
    assert all(book[u]["scoreMaximum"] == 2 and book[u]["gradingProgress"] == "PendingManual" for u in expected)
    assert book["s-half"]["activityProgress"] == "InProgress" and book["s-right"]["activityProgress"] == "Completed"
    assert "B1.2: right" in book["s-right"]["comment"] and "B2.2a: pending" in book["s-right"]["comment"]
    assert "n² = 16" in book["s-right"]["comment"]  # the evidence: the model's (here the masks') numbers
    with lti_store.engine().connect() as c:  # what is kept of a student: the opaque id and the score
        kept = " ".join(str(v) for row in c.execute(sa.select(lti_store.values)).all() for v in row)
    assert "Ada" not in kept and "ada@example.edu" not in kept and "s-right" in kept


def test_a_recheck_replaces_the_score_and_a_failing_platform_gets_it_after_retries(lms, activity):
    lineitem = activity["lineitem_url"]
    student, session, _ = open_activity(lms, activity, "s-retry")
    student.post(f"{lms.tool}/lti/check", json={"session": session, "answers": WRONG})
    before = len(wait_for_scores(lms, lineitem, len(lms.scores.get(lineitem, [])) + 1))
    lms.fail_next_posts = 2  # the grade book is down for two posts
    student.post(f"{lms.tool}/lti/check", json={"session": session, "answers": RIGHT})
    wait_for_scores(lms, lineitem, before + 1)
    assert lms.gradebook(lineitem)["s-retry"]["scoreGiven"] == 2 and lms.fail_next_posts == 0
    assert [s["userId"] for s in lms.scores[lineitem]].count("s-retry") == 2  # once per check, none lost or doubled


def test_the_lecturer_sends_scores_again_and_a_student_cannot(lms, activity):
    lineitem = activity["lineitem_url"]
    student, session, _ = open_activity(lms, activity, "s-sneaky")
    refused = student.post(f"{lms.tool}/lti/send_again", json={"session": session})
    assert refused.status_code == 403 and "lecturer" in refused.json()["error"]
    lecturer, lecturer_session, page = open_activity(lms, activity, "teacher-1", roles=(INSTRUCTOR,))
    assert "Send scores again" in page.text and "s-right"[:12] in page.text
    stored = len(lti_store.scores_of(lineitem))
    before = len(lms.scores[lineitem])
    sent = lecturer.post(f"{lms.tool}/lti/send_again", json={"session": lecturer_session}).json()
    assert sent == {"scores": stored, "sent": stored, "failed": 0}
    assert len(lms.scores[lineitem]) == before + stored


def test_a_student_cannot_add_activities(lms):
    page = launch(client(), lms.login_url("s-dl", roles=(LEARNER,), deep_link=True))
    assert page.status_code == 403 and "Only a lecturer" in page.text


@pytest.mark.parametrize("hostile, message", [
    ({"expired": True}, "expired"), ({"audience": "another-tool"}, "Registration not found"),
    ({"deployment": "deployment-unknown"}, "not recognised"), ({"forged": True}, "Signature verification failed"),
    ({"tampered": True}, "Signature verification failed")])
def test_hostile_tokens_are_refused_and_nothing_is_stored(lms, activity, hostile, message):
    stored = (pages_open(), rows(lti_store.scores), rows(lti_store.line_items))
    page = launch(client(), lms.login_url("s-attacker", activity=lms.activity_launch(activity), **hostile))
    assert page.status_code == 403 and "This launch was refused" in page.text and message in page.text
    assert (pages_open(), rows(lti_store.scores), rows(lti_store.line_items)) == stored


def test_a_replayed_launch_is_refused(lms, activity):
    browser_like = client()
    form = browser_like.get(lms.login_url("s-replay", activity=lms.activity_launch(activity)), follow_redirects=True)
    action, fields = form_fields(form.text)
    assert browser_like.post(action, data=fields).status_code == 303
    stored = pages_open()
    again = browser_like.post(action, data=fields)
    assert again.status_code == 403 and "Invalid Nonce" in again.text and pages_open() == stored
    stranger = client().post(action, data=fields)  # the same token from another browser: no state cookie either
    assert stranger.status_code == 403


def test_keys_rotate_and_both_verify(lms, activity):
    from labs.core.serving import lti_keys

    before = httpx.get(f"{lms.tool}/lti/jwks").json()["keys"]
    new_kid = lti_keys.rotate()  # the data folder is shared with the server: it signs with the new key at once
    after = httpx.get(f"{lms.tool}/lti/jwks").json()["keys"]
    assert after[0]["kid"] == new_kid and before[0]["kid"] in [k["kid"] for k in after]
    assert all("d" not in key for key in after)  # public keys only
    chooser = launch(client(), lms.login_url("teacher-2", roles=(INSTRUCTOR,), deep_link=True))
    back = httpx.post(f"{lms.tool}/lti/deep_link", data={"session": session_in(chooser.text), "kind": "lab",
                                                         "lab": "tokens", "params": "text=The cat sat"},
                      timeout=PATIENCE_S)
    action, fields = form_fields(back.text)
    assert httpx.post(action, data=fields).status_code == 200  # the platform verified the new key's signature
    item = lms.activities[-1]
    assert item["custom"] == {"lmlab_kind": "lab", "lmlab_lab": "tokens", "lmlab_params": "text=The+cat+sat"}
    opened = launch(client(), lms.login_url("s-lab", activity=lms.activity_launch(item)))
    assert opened.status_code == 303 and opened.headers["location"] == "../?text=The+cat+sat&tab=tokens"
    assert httpx.get(f"{lms.tool}/lti/{opened.headers['location']}", timeout=PATIENCE_S).url.path == "/"  # the app


def test_the_browser_follows_a_launch_to_the_students_page(lms, activity, browser):
    from conftest import screenshot
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1000, "height": 1400})
    page = context.new_page()
    page.goto(lms.login_url("teacher-4", roles=(INSTRUCTOR,), deep_link=True))  # the lecturer's "add an activity"
    expect(page.get_by_role("heading", name="Add LM Lab to your course")).to_be_visible()
    page.get_by_label("The whole Part B").check()
    expect(page.locator("input[name=question][value='B6.2']")).to_be_checked()
    screenshot(page, "lti-deep-linking-choice")
    page.goto(lms.login_url("s-browser", activity=lms.activity_launch(activity)))  # the LMS's link
    expect(page.locator("h1")).to_have_text("Masks and softmax")
    for field, value in RIGHT["B1.2"].items():
        page.locator(f"#B1\\.2-{field}").fill(value)
    page.get_by_role("button", name="Check my answers").click()
    expect(page.locator("#verdict-B1\\.2")).to_contain_text("right")
    expect(page.locator("#lti-score")).to_contain_text("1 of 2 right, sent to your course's grade book")
    screenshot(page, "lti-student-page")
    wait_for_scores(lms, activity["lineitem_url"], 1)
    deadline = time.monotonic() + PATIENCE_S
    while "s-browser" not in lms.gradebook(activity["lineitem_url"]):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert lms.gradebook(activity["lineitem_url"])["s-browser"]["scoreGiven"] == 1
    context.close()


def test_dynamic_registration_registers_a_platform_that_then_launches(lms):
    from labs.core.serving import lti_keys

    with Platform(lms.tool, client_id="dynamic-client", deployment_id="dyn-7") as other:
        query = {"openid_configuration": f"{other.url}/.well-known/openid-configuration",
                 "registration_token": other.registration_token}
        wrong = httpx.get(f"{lms.tool}/lti/register/not-the-secret", params=query, timeout=PATIENCE_S)
        assert wrong.status_code == 403 and other.tool_registration is None
        assert lti_store.platform(other.url) is None
        done = httpx.get(f"{lms.tool}/lti/register/{lti_keys.registration_secret()}", params=query,
                         timeout=PATIENCE_S)
        assert done.status_code == 200 and "org.imsglobal.lti.close" in done.text
        sent = other.tool_registration
        assert sent["jwks_uri"] == f"{lms.tool}/lti/jwks" and sent["initiate_login_uri"] == f"{lms.tool}/lti/login"
        stored = lti_store.platform(other.url)
        assert stored.client_id == "dynamic-client" and lti_store.has_deployment(stored.id, "dyn-7")
        chooser = launch(client(), other.login_url("teacher-3", roles=(INSTRUCTOR,), deep_link=True))
        assert chooser.status_code == 200 and "Add LM Lab to your course" in chooser.text


def test_an_unregistered_platform_cannot_sign_in_and_a_class_launch_joins_the_class(lms):
    with Platform(lms.tool, client_id="nobody-registered-me") as stranger:
        refused = client().get(stranger.login_url("s-x"), follow_redirects=True)
        assert refused.status_code == 403 and "Could not find registration details" in refused.text
    lms.activities.append({"title": "Class", "custom": {"lmlab_kind": "class", "lmlab_class": "K7Q2XW"}})
    opened = launch(client(), lms.login_url("s-class", activity=lms.activity_launch(lms.activities[-1])))
    assert opened.status_code == 303 and opened.headers["location"] == "../?class=K7Q2XW"
