"""Ask the class through the API, as a lecturer's script and a class of students would use it: the reveal equal
to the labs' own `/fill_mask` and `/next_token`, a hostile client that never acts as the lecturer, a server
killed mid-question that loses no answer, and two front-ends sharing one PostgreSQL database."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import ROOT, WORK, api_client, free_port
from gradio_client.exceptions import AppError


def start_class(client) -> dict:
    return client.predict("Week 6 <script>alert(1)</script>", api_name="/class_start")


def ask(client, key, kind, text, model="", choices=None, correct="", top_k=10) -> dict:
    return client.predict(lecturer_key=key, kind=kind, text=text, model=model, choices=choices, correct=correct,
                          top_k=top_k, api_name="/class_ask")


def answer(client, code, student, word) -> dict:
    return client.predict(code=code, student_id=student, answer=word, api_name="/class_answer")


def test_the_reveal_equals_the_labs_own_computation(client, tiny_models):
    start = start_class(client)
    key, code = start["lecturer_key"], start["code"]
    text = "The [MASK] sat on the mat."
    ask(client, key, "fill_mask", text, tiny_models["masked"])
    given = ["cat"] * 5 + ["dog"] * 3 + ["embeddings", "mat", "<b>cat</b>"]
    for i, word in enumerate(given):
        answer(client, code, f"api-student-{i:03d}", word)
    revealed = client.predict(key, api_name="/class_reveal")
    lab = client.predict(text, tiny_models["masked"], 20, api_name="/fill_mask")["masks"][0]["predictions"]
    rows = {r["answer"]: r for r in revealed["class"]}
    assert rows["cat"]["count"] == 5 and rows["<b>cat</b>"]["count"] == 1  # stored as typed, shown escaped
    for p in lab:
        if p["token"] in rows:
            assert rows[p["token"]]["model_prob"] == pytest.approx(p["prob"], rel=1e-5)
    assert [t["prob"] for t in revealed["model_top"]] == pytest.approx([p["prob"] for p in lab[:10]], rel=1e-6)
    assert len(rows["embeddings"]["pieces"]) > 1 and 0 < rows["embeddings"]["model_prob"] < 1

    prompt = "The cat sat on the"
    ask(client, key, "next_token", prompt, tiny_models["causal"], top_k=5)
    for i, word in enumerate(["mat", "mat", "floor", "attention"]):
        answer(client, code, f"api-student-{i:03d}", word)
    revealed = client.predict(key, api_name="/class_reveal")
    lab = client.predict(prompt, tiny_models["causal"], 1.0, 0, 1.0, api_name="/next_token")["distribution"]
    by_id = {e["token_id"]: e["prob"] for e in lab}
    for row in revealed["class"]:
        if len(row["pieces"]) == 1:
            first = next((i for i, e in enumerate(lab) if e["token"].strip() == row["answer"]), None)
            if first is not None:
                assert row["model_prob"] == pytest.approx(lab[first]["prob"], rel=1e-5)
    assert all(0 < r["model_prob"] <= max(by_id.values()) + 1e-9 or len(r["pieces"]) > 1 for r in revealed["class"])
    assert revealed["agreement"]["answers"] == 4 and math.isfinite(revealed["agreement"]["perplexity"])
    exported = client.predict(key, api_name="/class_export")
    assert exported["csv"].count("\n") >= 8 and "embeddings" in exported["csv"]


def test_a_hostile_client_never_acts_as_the_lecturer(client, app_server, tiny_models):
    start = start_class(client)
    key, code = start["lecturer_key"], start["code"]
    hostile = api_client(app_server["url"], headers={"X-Forwarded-For": "203.0.113.66"})
    student = hostile.predict(code, api_name="/class_join")["student_id"]
    attempts = 0
    for wrong in (student, code, "", key[:-2], key.upper() if key.upper() != key else key.lower()):
        for name, args in (("/class_ask", dict(kind="number", text="Owned?")), ("/class_reveal", {}),
                           ("/class_export", {}), ("/class_delete", {}), ("/class_close", {}),
                           ("/class_hide", dict(answer="cat")), ("/class_round", {}), ("/class_timer", {}),
                           ("/class_plan", dict(plan="handout")), ("/class_report", {}), ("/class_next", {})):
            with pytest.raises(AppError, match="Only the lecturer|Too many"):
                hostile.predict(lecturer_key=wrong, api_name=name, **args)
            attempts += 1
    assert attempts == 55
    overview = client.predict(key, api_name="/class_overview")
    assert overview["history"] == [] and not overview["closed"]  # nothing the hostile client sent was taken
    assert overview["plan"]["questions"] == []
    with pytest.raises(AppError, match="Too many"):  # 30 failures in a minute: even a right code waits
        hostile.predict(code, api_name="/class_join")
    assert client.predict(code, api_name="/class_join")["student_id"]  # other clients are not affected
    # What students receive never carries the key.
    ask(client, key, "number", "How many tokens in 'unbelievable'?", correct="1")
    for response in (client.predict(code, api_name="/class_join"),
                     client.predict(code, student, api_name="/class_state")):
        assert key not in repr(response)


def get_version(url: str, code: str, client_address: str = "198.51.100.40") -> tuple:
    """GET /class/version as a student's page does: (status, JSON, headers)."""
    import json
    import urllib.error
    from urllib.parse import quote

    request = urllib.request.Request(f"{url.rstrip('/')}/class/version?code={quote(code)}",
                                     headers={"X-Forwarded-For": client_address})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read()), response.headers
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), error.headers


def test_the_poll_route_says_when_the_class_moved_on(client, app_server):
    """A student's page polls /class/version (not a Gradio event): its number is /class_state's, it moves on with
    every question, reveal and end, and an unknown code is refused and counted like a wrong join."""
    url = app_server["url"]
    start = start_class(client)
    key, code = start["lecturer_key"], start["code"]
    status, now, headers = get_version(url, start["shown_code"].lower())  # as typed: "abc-def" is the class
    assert status == 200 and now["closed"] is False and "no-store" in headers.get("Cache-Control", "")
    assert now["version"] == client.predict(code, "", api_name="/class_state")["version"]
    seen = [now["version"]]
    ask(client, key, "number", "How many tokens in 'unbelievable'?")
    seen.append(get_version(url, code)[1]["version"])
    client.predict(key, api_name="/class_reveal")
    seen.append(get_version(url, code)[1]["version"])
    client.predict(key, api_name="/class_close")
    status, now, _ = get_version(url, code)
    assert seen == sorted(set(seen)) and now["version"] > seen[-1] and now["closed"] is True, (seen, now)

    status, body, _ = get_version(url, "x")
    assert status == 400 and "6 letters and digits" in body["error"]
    wrong = "ZZZ999" if code != "ZZZ999" else "YYY888"
    for _ in range(30):  # a script guessing codes through the poll route meets the join box's limit
        status, body, _ = get_version(url, wrong, client_address="203.0.113.77")
    assert status == 404 and "no class" in body["error"], body
    status, body, _ = get_version(url, code, client_address="203.0.113.77")
    assert status == 404 and "Too many" in body["error"]
    assert get_version(url, code)[0] == 200  # other networks are not affected


def post_answer(url: str, body, client_address: str = "198.51.100.41") -> tuple:
    """POST /class/answer as a student's page sends its Send: (status, JSON)."""
    import json
    import urllib.error

    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(f"{url.rstrip('/')}/class/answer", data=data, method="POST",
                                     headers={"Content-Type": "application/json", "X-Forwarded-For": client_address})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_the_pages_answer_route_stores_what_class_answer_stores_and_refuses_what_it_refuses(client, app_server):
    """A phone's Send is one POST (not a Gradio event): the answer is stored before the reply, with its confidence,
    exactly as /class_answer stores it; every refusal is /class_answer's message with a status a page can act on."""
    url = app_server["url"]
    start = start_class(client)
    key, code = start["lecturer_key"], start["code"]
    question = ask(client, key, "choice", "Which model reads both sides of a blank?", choices="BERT\nGPT-2",
                   correct="BERT")
    student = client.predict(code, api_name="/class_join")["student_id"]
    status, got = post_answer(url, {"code": code, "student_id": student, "answer": "b", "confidence": "sure"})
    assert (status, got) == (200, {"question_id": question["question_id"], "replaced": False, "answer": "GPT-2",
                                   "confidence": 4})
    assert client.predict(code, student, api_name="/class_state")["your_answer"] == "GPT-2"
    again = client.predict(code, student, "A", 2, api_name="/class_answer")  # the endpoint: the same answer
    assert (again["replaced"], again["answer"], again["confidence"]) == (True, "BERT", 2)
    for body, expected, message in (
            (b"not json", 400, "Send JSON"), (b"x" * 5000, 413, "at most 40"),
            ({"code": code, "student_id": "?", "answer": "A"}, 400, "student id"),
            ({"code": code, "student_id": student, "answer": "Z"}, 400, "Pick one of the options"),
            ({"code": code, "student_id": student, "answer": "A", "confidence": 9}, 400, "How sure"),
            ({"code": "ZZZ999" if code != "ZZZ999" else "YYY888", "student_id": student, "answer": "A"}, 404,
             "no class")):
        status, got = post_answer(url, body)
        assert status == expected and message in got["error"], (body, status, got)
    client.predict(key, api_name="/class_round")  # a page still showing the first vote cannot answer the second
    status, got = post_answer(url, {"code": code, "student_id": student, "answer": "A",
                                    "question_id": question["question_id"]})
    assert status == 400 and "The lecturer has moved on" in got["error"]
    client.predict(key, 30, "start", api_name="/class_timer")
    client.predict(key, api_name="/class_reveal")
    status, got = post_answer(url, {"code": code, "student_id": student, "answer": "A"})
    assert status == 400 and "revealed" in got["error"]
    overview = client.predict(key, api_name="/class_overview")
    assert overview["current"]["answers"] == 0 and overview["history"][0]["answers"] == 1  # one answer, replaced once


@pytest.mark.parametrize("given, message", [("x" * 10_000, "10,000 characters"), ("", "Type your answer"),
                                            ("twelve", "not a number")])
def test_bad_answers_get_a_clear_message(client, given, message):
    start = start_class(client)
    ask(client, start["lecturer_key"], "number", "How many?")
    with pytest.raises(AppError, match=message):
        answer(client, start["code"], "api-student-bad", given)


# ------------------------------------------------------------------ servers of their own


def launch(env: dict, log_name: str) -> tuple[subprocess.Popen, str]:
    """`python app.py` on a free port with these settings; waits for its page."""
    port = free_port()
    (WORK / "app-tmp").mkdir(exist_ok=True)
    full = dict(os.environ, GRADIO_SERVER_NAME="127.0.0.1", GRADIO_SERVER_PORT=str(port), TMPDIR=str(WORK / "app-tmp"),
                **env)
    log = open(WORK / log_name, "a")
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=full, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.time() + 120
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).read(100)
            return proc, url
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                pytest.fail(f"app did not start:\n{(WORK / log_name).read_text()[-3000:]}")
            time.sleep(0.3)


def stop(proc: subprocess.Popen, sig=signal.SIGTERM) -> None:
    proc.send_signal(sig)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.mark.slow  # starts two servers of the app and kills one: a minute
def test_a_server_killed_mid_question_loses_no_answer(tiny_models):
    data = WORK / "restart-data"
    proc, url = launch({"LAB_DATA_DIR": str(data)}, "restart.log")
    try:
        lecturer = api_client(url)
        start = start_class(lecturer)
        ask(lecturer, start["lecturer_key"], "next_token", "Once upon a", tiny_models["causal"])
        students = [f"restart-student-{i:03d}" for i in range(40)]
        # Each student is a client of their own, as each phone is: one gradio Client shared by threads can lose
        # an answer's reply in its one message stream when the machine is busy (a CancelledError in the client).
        with ThreadPoolExecutor(8) as pool:
            acknowledged = list(pool.map(lambda s: answer(api_client(url), start["code"], s, "time"),
                                         students[:20]))
        assert len(acknowledged) == 20
    finally:
        stop(proc, signal.SIGKILL)  # no shutdown at all: what was acknowledged must be on disk
    proc, url = launch({"LAB_DATA_DIR": str(data)}, "restart.log")
    try:
        client = api_client(url)
        assert client.predict(start["code"], students[0], api_name="/class_state")["your_answer"] == "time"
        for s in students[20:]:
            answer(client, start["code"], s, "day")
        revealed = client.predict(start["lecturer_key"], api_name="/class_reveal")
        assert {r["answer"]: r["count"] for r in revealed["class"]} == {"time": 20, "day": 20}
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def postgres():
    from postgres import Server

    server = Server(free_port())
    yield server
    server.close()


def test_two_front_ends_share_their_classes_in_postgresql(postgres, tiny_models):
    env = {"LAB_CLASS_DB": postgres.url, "LAB_DATA_DIR": str(WORK / "unused-data")}
    (a, url_a), (b, url_b) = launch(env, "front-a.log"), launch(env, "front-b.log")
    try:
        front_a, front_b = api_client(url_a), api_client(url_b)
        start = start_class(front_a)
        ask(front_a, start["lecturer_key"], "choice", "Which reads both sides?", choices=["BERT", "GPT-2"],
            correct="BERT")
        for i in range(10):  # half the class behind each front-end
            answer(front_a if i % 2 else front_b, start["code"], f"pg-student-{i:03d}", "A" if i < 7 else "B")
        assert front_b.predict(start["lecturer_key"], api_name="/class_count")["answers"] == 10
        revealed = front_b.predict(start["lecturer_key"], api_name="/class_reveal")  # the other front-end reveals
        assert [(h["label"], h["count"]) for h in revealed["histogram"]] == [("BERT", 7), ("GPT-2", 3)]
        time.sleep(1.1)  # a front-end's view of a session is at most a second old
        state = front_a.predict(start["code"], "pg-student-001", api_name="/class_state")
        assert state["revealed"] and state["results"]["agreement"]["right_count"] == 7
        with pytest.raises(AppError, match="revealed"):
            answer(front_a, start["code"], "pg-student-late", "A")
    finally:
        stop(a)
        stop(b)


def test_the_database_url_is_what_a_user_writes(postgres, monkeypatch, tmp_path):
    from labs.classroom import store

    monkeypatch.setenv("LAB_CLASS_DB", postgres.url)
    assert store.database_url().startswith("postgresql+psycopg://lab@127.0.0.1:")
    opened = store.Store()
    assert opened.schema_version() == store.SCHEMA_VERSION
    assert store.Store().schema_version() == store.SCHEMA_VERSION  # opening again migrates nothing
    monkeypatch.delenv("LAB_CLASS_DB")
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path))
    assert store.database_url() == f"sqlite:///{Path(tmp_path) / 'classes.sqlite3'}"


def test_a_postgresql_class_database_from_before_the_second_vote_is_migrated(postgres):
    """The same migration as tests/test_classroom_rounds.py's, on a database of its own in the real server."""
    import sqlalchemy as sa
    from test_classroom_rounds import check_migrated, make_version_1

    from labs.classroom import store

    server = sa.create_engine(store.database_url_of(postgres.url), isolation_level="AUTOCOMMIT")
    with server.connect() as c:
        c.execute(sa.text("CREATE DATABASE kept_v1"))
    server.dispose()
    url = store.database_url_of(postgres.url.rsplit("/", 1)[0] + "/kept_v1")
    make_version_1(url)
    check_migrated(url)


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_an_answer_is_in_the_reveal_or_refused_never_lost(backend, request, monkeypatch, tmp_path, tiny_models):
    """Forty students answer while the lecturer reveals: every acknowledged answer is counted in the reveal, and
    every refused one is absent (the database decides, not a front-end's cached view)."""
    from labs.classroom import sessions, store

    if backend == "postgresql":
        monkeypatch.setenv("LAB_CLASS_DB", request.getfixturevalue("postgres").url)
    else:
        monkeypatch.delenv("LAB_CLASS_DB", raising=False)
        monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path))
    store.reset()
    try:
        start = sessions.class_start("race")
        sessions.class_ask(start["lecturer_key"], "number", "How many?")
        outcomes = {}

        def one(i):
            try:
                sessions.class_answer(start["code"], f"race-student-{i:03d}", str(i % 3))
                outcomes[i] = "ok"
            except Exception as exc:  # refused after the reveal
                outcomes[i] = str(exc)

        with ThreadPoolExecutor(8) as pool:
            futures = [pool.submit(one, i) for i in range(40)]
            while sum(f.done() for f in futures) < 15:
                time.sleep(0.001)
            revealed = sessions.class_reveal(start["lecturer_key"])
        accepted = [i for i, o in outcomes.items() if o == "ok"]
        assert all("revealed" in o for o in outcomes.values() if o != "ok")
        assert revealed["total"] == len(accepted) >= 15
        question = store.get().session_by_code(start["code"]).current_question
        assert store.get().count(question) == len(accepted)
    finally:
        store.reset()


def test_the_prepared_lecture_example_runs_a_whole_lecture_through_the_api(client, app_server, tiny_models):
    """tools/prepared_lecture.py as docs/lecturers.md tells a lecturer to run it: a GIFT plan of three questions,
    a timer, a second vote, the reveals and the report; its figures checked against the report's own CSV."""
    import csv
    import io

    from tools import prepared_lecture

    lecture = prepared_lecture.run(app_server["url"], students=6, client=api_client(app_server["url"]))
    assert [q["kind"] for q in lecture["plan"]["questions"]] == ["choice", "choice", "number"]
    first, second, third = lecture["reveals"]
    assert [r["question"]["number"] for r in lecture["reveals"]] == [1, 2, 3]
    assert first["total"] == third["total"] == second["total"] == 6 and second["rounds"]["voted_twice"] == 6
    assert third["question"]["correct"] == "24576" and first["confidence"]["answered"] == 6
    rows = list(csv.DictReader(io.StringIO(lecture["report"]["csv"]["text"])))
    by_vote = {}
    for row in rows:
        by_vote.setdefault((row["question"], row["vote round"]), 0)
        by_vote[(row["question"], row["vote round"])] += int(row["count"])
    assert by_vote == {("1", "1"): 6, ("2", "1"): 6, ("2", "2"): 6, ("3", "1"): 6}
    assert lecture["report"]["html"]["filename"].endswith("-report.html")
    assert lecture["report"]["html"]["text"].count('class="question"') >= 3
