"""The LMS benchmark: LM Lab (python app.py, on 2 cores with taskset) beside a real LTI 1.3 platform
(tests/lti_platform.py). How long a launch takes from the LMS's link to the student's page, and a class of N
students checking a graded workbook activity at once: every score received by the platform once, and the checks'
latency beside the same N checks through the workbook's own API (/check_part_b) without the LMS.
Not a unit test: these machines are noisy, so it prints figures instead of asserting them.

    python -m tests.bench_lti                  # 10 launches, 100 students checking at once
    python -m tests.bench_lti --students 50 --cores 0,1
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lti_platform import INSTRUCTOR, Platform, form_fields  # noqa: E402

from tests import loadtest  # noqa: E402

QUESTIONS = ["B1.2", "B2.1", "B2.2a"]
ANSWERS = {"B1.2": {"n": "4", "bert": "16", "gpt": "10"}, "B2.1": {"sat": "0.579", "ran": "0.129", "jumped": "0.078",
                                                                    "slept": "0.213"}}


def launch(client: httpx.Client, url: str) -> httpx.Response:
    form = client.get(url, follow_redirects=True)
    action, fields = form_fields(form.text)
    return client.post(action, data=fields)


def spread(values: list[float]) -> str:
    values = sorted(values)
    p95 = values[min(len(values) - 1, int(round(0.95 * (len(values) - 1))))]
    return f"p50 {statistics.median(values):.3f} s, p95 {p95:.3f} s, max {values[-1]:.3f} s (n = {len(values)})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--launches", type=int, default=10)
    parser.add_argument("--cores", default="0,1", help="taskset's CPU list for the app ('' for no pinning)")
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="lmlab-lti-bench-"))
    os.environ["LAB_DATA_DIR"] = str(data)
    os.environ.pop("LAB_CLASS_DB", None)
    command = (["taskset", "-c", args.cores] if args.cores else []) + [sys.executable, "app.py"]
    proc, url = loadtest.start(command, loadtest.ROOT, {"LAB_DATA_DIR": str(data)}, "app")
    try:
        run(url.rstrip("/"), args)
    finally:
        loadtest.stop(proc)


def run(tool: str, args) -> None:
    from labs.classroom import store as class_store
    from labs.core.serving import lti_routes, lti_store

    lti_routes.configure(lambda: class_store.get().engine, class_store.data_dir())
    with Platform(tool) as lms:
        e = lms.endpoints()
        lti_store.add_platform(e["issuer"], e["client_id"], e["auth_login_url"], e["auth_token_url"],
                               e["key_set_url"], e["deployment_ids"])
        lecturer = httpx.Client(timeout=120)
        chooser = launch(lecturer, lms.login_url("teacher", roles=(INSTRUCTOR,), deep_link=True))
        session = chooser.text.split("name=session value='")[1].split("'")[0]
        back = lecturer.post(f"{tool}/lti/deep_link", data={"session": session, "kind": "workbook",
                                                            "title": "Bench", "question": QUESTIONS})
        action, fields = form_fields(back.text)
        lecturer.post(action, data=fields)
        item = lms.activities[-1]
        lineitem = item["lineitem_url"]

        def student_page(user: str) -> tuple[httpx.Client, str, float]:
            client = httpx.Client(timeout=120)
            started = time.perf_counter()
            opened = launch(client, lms.login_url(user, activity=lms.activity_launch(item)))
            page = client.get(f"{tool}/lti/{opened.headers['location']}")
            took = time.perf_counter() - started
            return client, page.text.split("id=lti-session value='")[1].split("'")[0], took

        warm = student_page("warm-up")  # the first launch fetches the platform's keys; the first check imports torch
        warm[0].post(f"{tool}/lti/check", json={"session": warm[1], "answers": ANSWERS})
        print(f"first launch (keys fetched): {warm[2]:.3f} s", flush=True)
        launches = [student_page(f"launch-{i}")[2] for i in range(args.launches)]
        print(f"launch, the LMS's link to the student's page (4 requests, sequential): {spread(launches)}", flush=True)

        students = [student_page(f"student-{i}") for i in range(args.students)]
        barrier = threading.Barrier(len(students))
        latencies: list[float] = [0.0] * len(students)
        received_before = len(lms.scores.get(lineitem, []))

        def check(i: int) -> None:
            client, session, _ = students[i]
            barrier.wait()
            started = time.perf_counter()
            answer = client.post(f"{tool}/lti/check", json={"session": session, "answers": ANSWERS})
            answer.raise_for_status()
            latencies[i] = time.perf_counter() - started

        started = time.perf_counter()
        threads = [threading.Thread(target=check, args=(i,)) for i in range(len(students))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        while len(lms.scores.get(lineitem, [])) < received_before + len(students):
            if time.perf_counter() - started > 300:
                break
            time.sleep(0.05)
        all_in = time.perf_counter() - started
        book = [s["userId"] for s in lms.scores.get(lineitem, [])]
        once = sum(1 for i in range(len(students)) if book.count(f"student-{i}") == 1)
        print(f"{len(students)} students checking at once through the LMS: {spread(latencies)}", flush=True)
        print(f"  every score in the grade book after {all_in:.2f} s; received exactly once: {once} of "
              f"{len(students)}; grade-book tokens asked for: {lms.tokens_issued}", flush=True)
        direct = at_once(len(students), lambda i: api_check(tool, httpx.Client(timeout=120)))
        print(f"{len(students)} checks at once through the workbook's API (/check_part_b), no LMS: "
              f"{spread(direct)}", flush=True)


def api_check(tool: str, client: httpx.Client) -> None:
    """One /check_part_b call over Gradio's plain HTTP API (POST the call, read its event stream to the end)."""
    event = client.post(f"{tool}/gradio_api/call/check_part_b", json={"data": [ANSWERS]}).json()["event_id"]
    with client.stream("GET", f"{tool}/gradio_api/call/check_part_b/{event}") as stream:
        text = "".join(stream.iter_text())
    if "event: complete" not in text:
        raise RuntimeError(text[-300:])


def at_once(n: int, call) -> list[float]:
    barrier = threading.Barrier(n)
    latencies = [0.0] * n

    def one(i: int) -> None:
        barrier.wait()
        started = time.perf_counter()
        call(i)
        latencies[i] = time.perf_counter() - started

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies


if __name__ == "__main__":
    main()
