"""A class at once (`python -m tests.loadtest --class 100`): a lecturer starts a class and asks the lecture's
fill-in-the-blank question on a bert-base-sized model; 100 students join and their pages show the question (each
page's first look at GET /class/version redraws it through `/class_state`, as assets/js/classroom.js does); then
all answer within three seconds (many the same word, some their own, some words of several pieces) while their
pages go on asking every 3 s whether the class moved on and the projector counts every second; 50 other students
press Fill in the blank during the same seconds. Then the lecturer reveals. Prints: answers stored / sent, each
answer's time (p50, p95, max), how long until the projector's count was current after the last answer, the
reveal's time, /fill_mask's p95 with the class beside /fill_mask alone in the same run, and the CPU seconds of
the server and of the simulated students over the answering window.

The simulated students share the server's two cores at a lower priority (os.nice), as phones would not share
them at all. A phone sends the class's actions (`queue=False` events) as the page's Gradio JS client does: one POST
to `/gradio_api/run/<name>` each (its bundle posts a dependency with `queue: false` to `${root}/run/...`);
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


class PagePost:
    """A phone's page: the class's actions, each one POST to /gradio_api/run/<name> on one kept-alive
    connection, as Gradio's JS client sends an event that skips the queue."""

    def __init__(self, url: str):
        import httpx

        # verify=False: plain HTTP on 127.0.0.1, and a verifying client loads the CA bundle (see clients())
        self.http = httpx.Client(base_url=url, timeout=30, verify=False)

    def predict(self, *data, api_name: str):
        response = self.http.post(f"/gradio_api/run/{api_name.lstrip('/')}", json={"data": list(data)})
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
        lecturer.predict(lecturer_key=key, kind="fill_mask", text=QUESTION, model=bert.name, top_k=10,
                         api_name="/class_ask")
        students = clients(url, n) if args.class_via == "client" else [PagePost(url) for _ in range(n)]
        projector_page = lecturer if args.class_via == "client" else PagePost(url)
        others = clients(url, 50)  # made now: a page's browser reads the app's config once, before the lecture
        with ThreadPoolExecutor(16) as pool:
            ids = list(pool.map(lambda c: c.predict(code, api_name="/class_join")["student_id"], students))
        given = answers_for(n, rng)
        acked: list = [None] * n
        stop_polling = threading.Event()
        counts: list[tuple[float, int]] = []

        def projector() -> None:  # the projector's page: the count, every second
            while not stop_polling.is_set():
                try:
                    counts.append((time.perf_counter(), projector_page.predict(key, api_name="/class_count")["answers"]))
                except Exception as exc:  # noted, and the page goes on looking
                    print(f"  projector: {str(exc)[:120]}", flush=True)
                stop_polling.wait(1.0)

        shown = threading.Barrier(n + 1)  # every page has drawn the question once

        # A student's page: it shows the question, then asks every 3 s whether the class moved on (redrawn if so).
        def page(i: int) -> None:
            seen = None
            # verify=False: plain HTTP on 127.0.0.1, and a verifying client loads the CA bundle (see clients()):
            # 100 pages did, 6 s of the harness's CPU on the server's two cores.
            with httpx.Client(base_url=url, timeout=30, verify=False) as http:
                def look() -> None:
                    nonlocal seen
                    try:
                        version = (http.get("/class/version", params={"code": code}).raise_for_status().json()
                                   if args.class_poll == "version" else None)
                        if version != seen or version is None:
                            seen = version
                            students[i].predict(code, ids[i], api_name="/class_state")
                    except Exception as exc:  # noted, and the page goes on looking
                        print(f"  page {i}: {str(exc)[:120]}", flush=True)

                look()
                shown.wait()
                while not stop_polling.wait(3.0):
                    look()

        def student(i: int, barrier: threading.Barrier) -> None:
            barrier.wait()
            time.sleep(3.0 * (i / n))  # everybody within three seconds
            sent = time.perf_counter()
            try:
                students[i].predict(code, ids[i], given[i], api_name="/class_answer")
                acked[i] = (sent, time.perf_counter(), None)
            except Exception as exc:  # counted, not raised
                acked[i] = (sent, time.perf_counter(), str(exc))

        barrier = threading.Barrier(n + 1)
        threads = [threading.Thread(target=projector)] + [threading.Thread(target=page, args=(i,)) for i in range(n)]
        threads += [threading.Thread(target=student, args=(i, barrier)) for i in range(n)]
        for t in threads:
            t.start()
        shown.wait()  # a student answers a question their page has shown (each page's first look redraws it)
        cpu_before, harness_before = server.cpu_times(), time.process_time()  # as tests/loadtest.py
        barrier.wait()
        time.sleep(1.0)  # a second into the answers, 50 others press Fill in the blank
        beside = run_load(url, "fill_mask", lambda i: (f"The [MASK] sat beside the class in room {i}.", bert.name, 5),
                          50, others)
        for t in threads[1 + n:]:
            t.join()
        last_ack = max(a[1] for a in acked)
        ok = [a for a in acked if a[2] is None]
        deadline = time.time() + 30
        while not any(c >= len(ok) for _, c in counts) and time.time() < deadline:
            time.sleep(0.05)
        current_at = next((t for t, c in counts if c >= len(ok)), float("nan"))
        stop_polling.set()
        for t in threads[:1 + n]:
            t.join()
        cpu_after, harness = server.cpu_times(), time.process_time() - harness_before
        revealed_at = time.perf_counter()
        reveal = lecturer.predict(key, api_name="/class_reveal")
        reveal_s = time.perf_counter() - revealed_at
        stored = lecturer.predict(key, api_name="/class_overview")["current"]["answers"]
        latencies = [a[1] - a[0] for a in ok]
        errors = [a[2] for a in acked if a[2]]
        cpu = (cpu_after.user + cpu_after.system) - (cpu_before.user + cpu_before.system)
        polling = "asking /class/version" if args.class_poll == "version" else "redrawing /class_state"
        via = "one POST to /gradio_api/run/<name> each, as a page" if args.class_via == "page" else "gradio_client"
        print(f"\nA class of {n}: one fill-in-the-blank question on {bert.name}, every answer within 3 s, pages "
              f"{polling} every 3 s, the projector /class_count every 1 s; 50 /fill_mask beside it. The class's "
              f"actions sent by {via}.\n")
        print("| what | figure |\n|---|---|")
        print(f"| answers stored / sent | {stored} / {n} (acknowledged {len(ok)}, refused {len(errors)}) |")
        print(f"| an answer: p50 / p95 / max | {statistics.median(latencies):.2f} / {percentile(latencies, .95):.2f} / "
              f"{max(latencies):.2f} s |")
        lag = current_at - last_ack  # below 0: the count was current before the last student had heard back
        print(f"| the projector's count current after the last answer | "
              f"{f'{lag:.2f} s' if lag >= 0 else f'at once (before the last acknowledgement, by {-lag:.2f} s)'} |")
        print(f"| the reveal ({len(reveal['class'])} distinct answers scored) | {reveal_s:.2f} s |")
        print(f"| /fill_mask x50 alone: p95 | {percentile(alone.latencies, .95):.2f} s |")
        print(f"| /fill_mask x50 while the class answers: p95 | {percentile(beside.latencies, .95):.2f} s "
              f"(rejected {beside.rejected}, failed {beside.failed}) |")
        print(f"| CPU over the answering window: the server / the simulated students and clients | {cpu:.1f} s / "
              f"{harness:.1f} s |")
        print(f"| the class's favourite, the model's rank of it | {reveal['agreement']['class_favourite']}, "
              f"#{reveal['agreement']['class_favourite_model_rank']} |")
        if errors:
            print(f"\nrefused, e.g.: {errors[0][:200]}")
        return 0 if stored == n and not errors else 1
    except BaseException:
        print((WORK / "app.log").read_text(errors="replace")[-4000:], flush=True)
        raise
    finally:
        for page in [*students, projector_page]:
            if isinstance(page, PagePost):
                page.close()
        stop(app)
