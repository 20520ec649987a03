"""A class at once (`python -m tests.loadtest --class 100`): a lecturer starts a class and asks the lecture's
fill-in-the-blank question on a bert-base-sized model; 100 students join and their pages show the question (each
page's first look at GET /class/version redraws it through `/class_state`, as assets/js/classroom.js does); then
all answer within three seconds (many the same word, some their own, some words of several pieces, each with how
sure they are) while their pages go on asking every 2.5 s (poll_route.POLL_SECONDS) whether the class moved on
and the projector counts every second; 50 other students press Fill in the blank during the same seconds. With
`--rounds 2`, peer instruction's second vote follows: the lecturer opens it, every page finds it by itself
(through /class/version), a third of the class changes its answer. Then the lecturer reveals (both votes).

Prints: answers stored / sent, each answer's time (p50, p95, max), how long until the projector's count was
current after the last answer, the second vote's time to every phone, the reveal's time, /fill_mask's p95 with
the class beside /fill_mask alone in the same run, and the CPU seconds of the server and of the simulated students
over the answering window.

The simulated students share the server's two cores at a lower priority (os.nice), as phones would not share
them at all. A phone sends its answers as the page's Send does (one POST of JSON to `/class/answer`), its other class
actions (`queue=False` events) as the page's Gradio JS client does: one POST to `/gradio_api/run/<name>` each (its
bundle posts a dependency with `queue: false` to `${root}/run/...`);
`--class-via client` sends them through gradio_client instead, which always takes the queue's way (a join, then
an event stream): heavier for both sides, and what a script using the API does."""

from __future__ import annotations

import os
import random
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from labs.classroom.poll_route import POLL_SECONDS
from tests import fullsize
from tests.loadtest import ROOT, WORK, clients, run_load, start, stop

QUESTION = "The cat sat on the [MASK]."
# What a class types: the favourites, a long tail of its own words, a few words of several pieces.
FAVOURITES = ["mat"] * 30 + ["floor"] * 15 + ["couch"] * 10 + ["sofa"] * 8 + ["bed"] * 7 + ["chair"] * 5
PIECES = ["windowsill", "trampoline", "doormat", "embeddings", "skateboard"]


def answers_for(n: int, rng: random.Random) -> list[str]:
    given = [FAVOURITES[i % len(FAVOURITES)] for i in range(n)]
    for i in rng.sample(range(n), k=min(n, n // 5)):  # a fifth answer in their own words
        given[i] = f"{rng.choice(PIECES)}" if i % 2 else f"place{i}"
    rng.shuffle(given)
    return given


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else float("nan")


RESENT: list[int] = []  # requests a browser would have sent again on a new connection (as_a_browser)


def as_a_browser(send):
    """A request sent as a browser sends it: when the server had just closed the kept-alive connection it went out
    on (uvicorn closes one idle for 5 s; the close and the request cross), the browser sends it again on a new
    connection, unseen by the page (Chromium retries a request on a reused socket that closed before any reply).
    Once, and only for that: every other failure is counted."""
    import httpx

    try:
        return send()
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        if "disconnected without sending a response" not in str(exc) and "reset by peer" not in str(exc):
            raise
        RESENT.append(1)
        return send()


class PagePost:
    """A phone's page: the class's actions, each one POST on one kept-alive connection: the answer to /class/answer
    (labs/classroom/poll_route.py) as the page's Send does, the others to /gradio_api/run/<name>, as Gradio's JS
    client sends an event that skips the queue."""

    def __init__(self, url: str):
        import httpx

        # verify=False: plain HTTP on 127.0.0.1, and a verifying client loads the CA bundle (see clients())
        self.http = httpx.Client(base_url=url, timeout=30, verify=False)

    def predict(self, *data, api_name: str):
        if api_name == "/class_answer":  # the page's Send: one POST of JSON (assets/js/classroom.js)
            code, student_id, answer, confidence = data
            response = as_a_browser(lambda: self.http.post("/class/answer", json={
                "code": code, "student_id": student_id, "answer": answer, "confidence": confidence}))
            if response.status_code != 200:
                raise RuntimeError(response.json().get("error") or response.text[:200])
            return response.json()
        response = as_a_browser(lambda: self.http.post(f"/gradio_api/run/{api_name.lstrip('/')}",
                                                       json={"data": list(data)}))
        body = response.json()
        if response.status_code != 200 or "data" not in body:
            raise RuntimeError(body.get("error") or response.text[:200])
        return body["data"][0]

    def close(self) -> None:
        self.http.close()


def main_class(args) -> int:
    import httpx
    import psutil
    from gradio_client import Client

    n = int(args.class_size)
    bert, gpt2 = fullsize.build(WORK)
    env = {"HF_HUB_OFFLINE": "1", "LAB_EXTRA_MODELS": f"{bert},{gpt2}", "LAB_DATA_DIR": str(WORK / "class-data")}
    app, url = start([sys.executable, "app.py"], ROOT, env, "app")
    server = psutil.Process(app.pid)
    # The 250 simulated students run in this process, on the server's two cores; in a lecture they are phones.
    # At a lower priority (the server started before, at the normal one), their own work yields to the server's.
    os.nice(10)
    rng = random.Random(0)
    students, projector_page = [], None
    try:
        lecturer = Client(url, verbose=False, ssl_verify=False)
        run_load(url, "fill_mask", lambda i: (f"The [MASK] sat on the mat in house {i}.", bert.name, 5), 1)  # loads
        alone = run_load(url, "fill_mask", lambda i: (f"The [MASK] sat alone in room number {i}.", bert.name, 5), 50)
        start_ = lecturer.predict("Load test", api_name="/class_start")
        key, code = start_["lecturer_key"], start_["code"]
        first = lecturer.predict(lecturer_key=key, kind="fill_mask", text=QUESTION, model=bert.name, top_k=10,
                                 api_name="/class_ask")["question_id"]
        students = clients(url, n) if args.class_via == "client" else [PagePost(url) for _ in range(n)]
        projector_page = lecturer if args.class_via == "client" else PagePost(url)
        others = clients(url, 50)  # made now: a page's browser reads the app's config once, before the lecture
        with ThreadPoolExecutor(16) as pool:
            ids = list(pool.map(lambda c: c.predict(code, api_name="/class_join")["student_id"], students))
        given = answers_for(n, rng)
        stop_polling = threading.Event()
        counts: list[tuple[float, int, int]] = []  # (when, the current question's id, its count)
        seen_at: list[dict] = [{} for _ in range(n)]  # each page: question id -> when it first showed it
        beats = random.Random(1)

        def projector() -> None:  # the projector's page: the count, every second
            while not stop_polling.is_set():
                try:
                    now = projector_page.predict(key, api_name="/class_count")
                    counts.append((time.perf_counter(), now["question_id"], now["answers"]))
                except Exception as exc:  # noted, and the page goes on looking
                    print(f"  projector: {str(exc)[:120]}", flush=True)
                stop_polling.wait(1.0)

        shown = threading.Barrier(n + 1)  # every page has drawn the question once

        # A student's page: it shows the question, then asks every few seconds whether the class moved on (redrawn if so).
        def page(i: int) -> None:
            seen = None
            # verify=False: plain HTTP on 127.0.0.1, and a verifying client loads the CA bundle (see clients()):
            # 100 pages did, 6 s of the harness's CPU on the server's two cores.
            with httpx.Client(base_url=url, timeout=30, verify=False) as http:
                def look() -> None:
                    nonlocal seen
                    try:
                        version = (as_a_browser(lambda: http.get("/class/version", params={"code": code}))
                                   .raise_for_status().json()
                                   if args.class_poll == "version" else None)
                        if version != seen or version is None:
                            seen = version
                            state = students[i].predict(code, ids[i], api_name="/class_state")
                            if state["question"]:
                                seen_at[i].setdefault(state["question"]["id"], time.perf_counter())
                    except Exception as exc:  # noted, and the page goes on looking
                        print(f"  page {i}: {str(exc)[:120]}", flush=True)

                look()
                shown.wait()
                # Phones opened the page at different moments: each asks on its own beat.
                if not stop_polling.wait(POLL_SECONDS * beats.random()):
                    look()
                    while not stop_polling.wait(POLL_SECONDS):
                        look()

        def answer_round(answers: list[str], beside_load: bool, question_id: int):
            """Every student answers (with how sure they are) within three seconds; 50 /fill_mask beside it."""
            acked: list = [None] * n
            barrier = threading.Barrier(n + 1)

            def student(i: int) -> None:
                barrier.wait()
                time.sleep(3.0 * (i / n))  # everybody within three seconds
                sent = time.perf_counter()
                try:
                    students[i].predict(code, ids[i], answers[i], 1 + i % 4, api_name="/class_answer")
                    acked[i] = (sent, time.perf_counter(), None)
                except Exception as exc:  # counted, not raised
                    acked[i] = (sent, time.perf_counter(), str(exc))

            threads = [threading.Thread(target=student, args=(i,)) for i in range(n)]
            for t in threads:
                t.start()
            cpu_before, harness_before = server.cpu_times(), time.process_time()  # as tests/loadtest.py
            barrier.wait()
            beside = None
            if beside_load:
                time.sleep(1.0)  # a second into the answers, 50 others press Fill in the blank
                beside = run_load(url, "fill_mask", lambda i: (f"The [MASK] sat beside the class in room {i}.",
                                                               bert.name, 5), 50, others)
            for t in threads:
                t.join()
            cpu_after, harness = server.cpu_times(), time.process_time() - harness_before
            ok = [a for a in acked if a[2] is None]
            deadline = time.time() + 30
            while not any(q == question_id and c >= len(ok) for _, q, c in counts) and time.time() < deadline:
                time.sleep(0.05)
            last_ack = max(a[1] for a in acked)
            current_at = next((t for t, q, c in counts if q == question_id and c >= len(ok)), float("nan"))
            cpu = (cpu_after.user + cpu_after.system) - (cpu_before.user + cpu_before.system)
            return acked, ok, beside, current_at - last_ack, cpu, harness

        threads = [threading.Thread(target=projector)] + [threading.Thread(target=page, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        shown.wait()  # a student answers a question their page has shown (each page's first look redraws it)
        rounds = []
        acked, ok, beside, lag, cpu, harness = answer_round(given, True, first)
        rounds.append((acked, ok, lag))
        reach = None
        if args.rounds == 2:  # discuss, then vote again: a third of the class changes its answer
            opened_at = time.perf_counter()
            second = lecturer.predict(key, api_name="/class_round")["question_id"]
            deadline = time.time() + 30
            while sum(second in s for s in seen_at) < n and time.time() < deadline:
                time.sleep(0.05)
            reach = [s[second] - opened_at for s in seen_at if second in s]
            again = [rng.choice(["mat", "floor", "couch"]) if i % 3 == 0 else a for i, a in enumerate(given)]
            acked2, ok2, _, lag2, _, _ = answer_round(again, False, second)
            rounds.append((acked2, ok2, lag2))
        stop_polling.set()
        for t in threads:
            t.join()
        revealed_at = time.perf_counter()
        reveal = lecturer.predict(key, api_name="/class_reveal")
        reveal_s = time.perf_counter() - revealed_at
        history = lecturer.predict(key, api_name="/class_overview")["history"]
        stored = sum(q["answers"] for q in history)
        acked = [a for r in rounds for a in r[0]]
        ok = [a for r in rounds for a in r[1]]
        sent_all = n * len(rounds)
        latencies = [a[1] - a[0] for a in ok]
        errors = [a[2] for a in acked if a[2]]
        polling = "asking /class/version" if args.class_poll == "version" else "redrawing /class_state"
        via = ("a page's: answers one POST to /class/answer, the rest to /gradio_api/run/<name>"
               if args.class_via == "page" else "gradio_client")
        print(f"\nA class of {n}: one fill-in-the-blank question on {bert.name}, every answer within 3 s, pages "
              f"{polling} every {POLL_SECONDS:g} s, the projector /class_count every 1 s; 50 /fill_mask beside it. "
              f"The class's "
              f"actions sent by {via}.\n")
        print("| what | figure |\n|---|---|")
        print(f"| answers stored / sent ({len(rounds)} vote{'s' if len(rounds) > 1 else ''}) | {stored} / {sent_all} "
              f"(acknowledged {len(ok)}, refused {len(errors)}) |")
        print(f"| an answer: p50 / p95 / max | {statistics.median(latencies):.2f} / {percentile(latencies, .95):.2f} / "
              f"{max(latencies):.2f} s |")
        for number, (_, _, lag) in enumerate(rounds, 1):  # below 0: current before the last acknowledgement
            print(f"| vote {number}: the projector's count current after the last answer | "
                  f"{f'{lag:.2f} s' if lag >= 0 else f'at once (before the last acknowledgement, by {-lag:.2f} s)'} |")
        if reach is not None:
            print(f"| the second vote on every phone (pages asking every {POLL_SECONDS:g} s): p50 / max | "
                  f"{statistics.median(reach):.2f} / {max(reach):.2f} s ({len(reach)} of {n} pages) |")
        what = "both votes" if len(rounds) > 1 else f"{len(reveal['class'])} distinct answers scored"
        print(f"| the reveal ({what}) | {reveal_s:.2f} s |")
        print(f"| /fill_mask x50 alone: p95 | {percentile(alone.latencies, .95):.2f} s |")
        print(f"| /fill_mask x50 while the class answers: p95 | {percentile(beside.latencies, .95):.2f} s "
              f"(rejected {beside.rejected}, failed {beside.failed}) |")
        print(f"| CPU over the answering window: the server / the simulated students and clients | {cpu:.1f} s / "
              f"{harness:.1f} s |")
        print(f"| the class's favourite, the model's rank of it | {reveal['agreement']['class_favourite']}, "
              f"#{reveal['agreement']['class_favourite_model_rank']} |")
        print(f"| requests sent again on a new connection, as a browser does (as_a_browser) | {len(RESENT)} |")
        if errors:
            print(f"\nrefused, e.g.: {errors[0][:200]}")
        return 0 if stored == sent_all and not errors else 1
    except BaseException:
        print((WORK / "app.log").read_text(errors="replace")[-4000:], flush=True)
        raise
    finally:
        for page in [*students, projector_page]:
            if isinstance(page, PagePost):
                page.close()
        stop(app)
