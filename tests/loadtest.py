"""The class-at-once benchmark: the app under N concurrent gradio_client clients per endpoint (N = 50,
100, 200 by default), each sending one request at the same moment, beside the plain-Gradio peer
(pipeline("fill-mask") with batch=True, max_batch_size=16) loaded the same way in the same run.
Each client sends its own sentence, one that no earlier run sent (a class types different things, and
none of it is in the cache); a last row sends everybody the same one, the example on the first screen.
Not a unit test: these machines are noisy, so it prints figures instead of asserting them.

    python -m tests.loadtest                          # every endpoint, 50 / 100 / 200 clients, and the peer
    python -m tests.loadtest --clients 50 --only fill_mask
    python -m tests.loadtest --app-dir /path/to/an/older/checkout   # the same load on another version
    python -m tests.loadtest --memory                 # resident memory: every model, a fine-tune, 1,000 requests
    python -m tests.loadtest --page-open              # a class opening the page at once (25 / 50 / 100 students)
    python -m tests.loadtest --page-open --app-dir /path/to/before,.   # two versions side by side, one run
    python -m tests.loadtest --heavy                  # a class pressing the heaviest buttons (tests/loadtest_heavy.py)
    python -m tests.loadtest --class 100              # Ask the class: 100 students answer one question at once, the
                                                      # projector counts, the lecturer reveals (tests/loadtest_class.py)
    python -m tests.loadtest --class 100 --rounds 2   # ... then vote again on it (peer instruction's second vote)
    python -m tests.loadtest --backend both --clients 50 --only fill_mask,next_token   # embedded, then Ray
                                                      # (LAB_RAY_ADDRESS=local: Ray Serve and Ray tasks; --heavy too)
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import json
import os
import random
import shutil
import signal
import socket
import statistics
import string
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tests import fullsize

ROOT = Path(__file__).resolve().parent.parent
WORK = Path(tempfile.mkdtemp(prefix="lmlab-load-"))
atexit.register(shutil.rmtree, WORK, True)  # the full-size models in it take 0.8 GB a run
SMOLLM2 = "SmolLM2-135M-Instruct (offline)"
MINILM = "all-MiniLM-L6-v2 (offline)"


def requests_for(bert: str) -> dict:
    """Per endpoint: the arguments client i sends (its own sentence), and the default client counts."""
    return {
        "fill_mask": (lambda i: (f"The [MASK] sat on the mat in house number {i}.", bert, 5), None),
        "next_token": (lambda i: (f"Once upon a time, in the village number {i}, there was a", SMOLLM2, 1.0, 0, 1.0),
                       None),
        "attention": (lambda i: (f"I sat on the river bank number {i} and watched the water.", bert, "", 0, 0), None),
        "score": (lambda i: (f"The cat in house number {i} sat on the mat and watched the birds.", SMOLLM2), None),
        "generate": (lambda i: (f"Once upon a time, in the village number {i},", SMOLLM2, "greedy", 20, 1.0, 0, 1.0, 1,
                                0), [20, 50]),
    }


@dataclass
class Load:
    endpoint: str
    clients: int
    rejected: int
    failed: int
    latencies: list[float]
    wall: float

    def row(self, label: str) -> str:
        lat = sorted(self.latencies) or [float("nan")]
        p95 = lat[min(len(lat) - 1, int(round(0.95 * (len(lat) - 1))))]
        rate = len(self.latencies) / self.wall if self.wall else 0.0
        return (f"| {label:30} | {self.endpoint:10} | {self.clients:7} | {self.rejected:8} | {self.failed:6} | "
                f"{statistics.median(lat):6.2f} | {p95:6.2f} | {lat[-1]:6.2f} | {rate:8.1f} |")

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.wall if self.wall else 0.0


HEADER = ("| app                            | endpoint   | clients | rejected | failed | p50 s  | p95 s  | max s  | "
          "req/s    |\n|" + "|".join("-" * w for w in (32, 12, 9, 10, 8, 8, 8, 8, 10)) + "|")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(command: list[str], cwd: Path, env: dict, name: str) -> tuple[subprocess.Popen, str]:
    """The app (or the peer) on a free port, in a process group of its own: stop() ends the local Ray it may
    have started with it."""
    port = free_port()
    (WORK / f"tmp-{name}").mkdir(exist_ok=True)  # stopped with SIGTERM, the app leaves its temporary files here
    env = dict(os.environ, **env, GRADIO_SERVER_PORT=str(port), GRADIO_SERVER_NAME="127.0.0.1",
               GRADIO_TEMP_DIR=str(WORK / f"gradio-{name}"), GRADIO_ANALYTICS_ENABLED="False",
               TMPDIR=str(WORK / f"tmp-{name}"))
    log = open(WORK / f"{name}.log", "w")
    proc = subprocess.Popen(command + ([str(port)] if name == "peer" else []), cwd=cwd, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.time() + 180
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2).read(10)
            return proc, url
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.5)
    proc.kill()
    tail = (WORK / f"{name}.log").read_text(errors="replace")[-3000:]
    raise SystemExit(f"{name} did not start; the end of its log:\n{tail}")


def clients(url: str, n: int) -> list:
    from gradio_client import Client

    # ssl_verify=False: the server is plain HTTP on 127.0.0.1, so no certificate is ever checked, but with
    # verification on, gradio_client builds two httpx clients per request and each loads the CA bundle:
    # 66 of its 73 ms of CPU per request, taken from the two cores the server under test runs on.
    with ThreadPoolExecutor(16) as pool:
        return list(pool.map(lambda _: Client(url, verbose=False, ssl_verify=False), range(n)))


def run_load(url: str, endpoint: str, args_for, n: int, pool: list | None = None) -> Load:
    """n clients, each with its own connection, send one request at the same moment. `pool`: clients made
    beforehand (a client's making reads the app's whole config, which costs the server more than a request)."""
    pool = pool or clients(url, n)
    barrier = threading.Barrier(n)
    results: list = [None] * n

    def one(i: int) -> None:
        barrier.wait()
        started = time.perf_counter()
        try:
            pool[i].predict(*args_for(i), api_name=f"/{endpoint}")
            results[i] = (started, time.perf_counter(), None)
        except Exception as exc:  # rejected or failed: counted, not raised
            results[i] = (started, time.perf_counter(), str(exc))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rejected = sum(1 for r in results if r[2] and "queue is full" in r[2].lower())
    failed = sum(1 for r in results if r[2]) - rejected
    ok = [r[1] - r[0] for r in results if not r[2]]
    wall = max(r[1] for r in results) - min(r[0] for r in results)
    if failed:
        print(f"  {endpoint} x{n}: {failed} failed, e.g. {next(r[2] for r in results if r[2])[:200]}", flush=True)
    return Load(endpoint, n, rejected, failed, ok, wall)


def stop(proc: subprocess.Popen) -> None:
    """The app, then whatever is left in its process group (a local Ray's raylet and workers)."""
    proc.terminate()
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


BACKENDS = {"embedded": {}, "ray": {"LAB_RAY_ADDRESS": "local"}}


def backends(args) -> list[str]:
    return list(BACKENDS) if args.backend == "both" else [args.backend]


def app_env(bert: Path, gpt2: Path, backend: str = "embedded") -> dict:
    return {"HF_HUB_OFFLINE": "1", "LAB_EXTRA_MODELS": f"{bert},{gpt2}", **BACKENDS[backend]}


def main_load(args) -> None:
    bert, gpt2 = fullsize.build(WORK)
    app_dir = Path(args.app_dir).resolve() if args.app_dir else ROOT
    only = set(args.only.split(",")) if args.only else None
    counts = [int(c) for c in (args.clients or "50,100,200").split(",")]
    rows, first = [], 1
    for backend in backends(args):
        app, url = start([sys.executable, "app.py"], app_dir, app_env(bert, gpt2, backend), "app")
        label = f"LM Lab ({app_dir.name}{'' if args.backend == 'embedded' else ', ' + backend})"
        try:
            for endpoint, (args_for, own_counts) in requests_for(bert.name).items():
                if only and endpoint not in only:
                    continue
                run_load(url, endpoint, args_for, 1)  # loads the model
                for n in (own_counts if own_counts and not args.clients else counts):
                    # Sentences no earlier run sent: a new group of students, none of it cached.
                    load = run_load(url, endpoint, lambda i, first=first: args_for(first + i), n)
                    first += n
                    rows.append((label, load))
                    print(load.row(label), flush=True)
                if endpoint == "fill_mask":  # everybody sends the projected example
                    load = run_load(url, endpoint, lambda i: requests_for(bert.name)[endpoint][0](0), counts[0])
                    rows.append((f"{label}, same sentence", load))
        finally:
            stop(app)
    peer_rows = []
    if not args.no_peer and (not only or "fill_mask" in only):
        peer, peer_url = start([sys.executable, str(ROOT / "tests" / "peer_app.py"), str(bert)], ROOT, {}, "peer")
        try:
            args_for = lambda i: (f"The [MASK] sat on the mat in house number {i}.",)  # noqa: E731
            run_load(peer_url, "fill_mask", args_for, 1)
            for n in counts:
                load = run_load(peer_url, "fill_mask", args_for, n)
                peer_rows.append(load)
                print(load.row("peer: pipeline, batch=True"), flush=True)
        finally:
            stop(peer)
    print(f"\n{HEADER}")
    for label, load in rows:
        print(load.row(label))
    for load in peer_rows:
        print(load.row("peer: pipeline, batch=True, 16"))
    ours = {load.clients: load.rate for label, load in rows if load.endpoint == "fill_mask" and "same" not in label}
    ray_ratio(rows)
    for load in peer_rows:
        if load.clients in ours and load.rate:
            print(f"/fill_mask at {load.clients} clients: {ours[load.clients] / load.rate:.2f}× the peer's requests/s")


def ray_ratio(rows: list) -> None:
    """--backend both: the Ray backend's requests/s and p50 over the embedded one's, per endpoint and load."""
    by = {(label.endswith(", ray)"), load.endpoint, load.clients): load for label, load in rows if "same" not in label}
    for (is_ray, endpoint, n), load in sorted(by.items(), key=lambda kv: (kv[0][1], kv[0][2])):
        embedded = by.get((False, endpoint, n))
        if is_ray and embedded and embedded.rate and load.rate:
            p50 = statistics.median(load.latencies) / max(statistics.median(embedded.latencies), 1e-9)
            print(f"/{endpoint} x{n}: Ray / embedded = {load.rate / embedded.rate:.2f}× the requests/s, p50 {p50:.2f}×")


def main_memory(args) -> None:
    """Resident memory of the server: every default model at its real size, a fine-tune, 1,000 requests."""
    import psutil
    from gradio_client import Client

    folders = fullsize.build_defaults(WORK)
    bert, distilbert, gpt2, distilgpt2, mini = (f.name for f in folders)
    env = {"HF_HUB_OFFLINE": "1", "LAB_EXTRA_MODELS": ",".join(str(f) for f in folders)}
    app, url = start([sys.executable, "app.py"], ROOT, env, "app")
    process = psutil.Process(app.pid)
    samples: list[float] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append(process.memory_info().rss / 2**30)
            time.sleep(0.5)

    threading.Thread(target=sample, daemon=True).start()
    gb = lambda: f"{process.memory_info().rss / 2**30:.2f} GB"  # noqa: E731
    try:
        print(f"started: {gb()}", flush=True)
        kinds = [("fill_mask", lambda i, m=m: (f"The [MASK] sat in room {i}.", m, 5)) for m in (bert, distilbert)]
        kinds += [("next_token", lambda i, m=m: (f"Once upon a time in town {i}, there was a", m, 1.0, 0, 1.0))
                  for m in (gpt2, distilgpt2, SMOLLM2)]
        kinds += [("attention", lambda i, m=m: (f"I sat on river bank number {i}.", m, "", 0, 0))
                  for m in (bert, mini, MINILM, gpt2)]
        kinds += [("masks", lambda i: (f"The cat number {i} sat on the mat", MINILM, SMOLLM2))]
        for endpoint, args_for in kinds:
            run_load(url, endpoint, args_for, 1)
        print(f"every model loaded (7 models): {gb()}", flush=True)
        tune = Client(url, verbose=False).submit(MINILM, "full", 5e-5, 3, 16, 200, 0, False, api_name="/finetune")
        sent, round_ = 0, 0
        while sent < 1000:
            for endpoint, args_for in kinds:
                run_load(url, endpoint, lambda i, f=args_for, r=round_: f(1000 + r * 25 + i), 25)
                sent += 25
            round_ += 1
        tune.result(timeout=900)
        time.sleep(2)
        print(f"after {sent} distinct requests and a fine-tune: {gb()}; peak {max(samples):.2f} GB", flush=True)
    finally:
        done.set()
        app.terminate()


PAGE_OPEN_HEADER = ("| app                            | students | failed | server CPU s/open | p50 s  | p95 s  | max s  | "
                    "KB sent/open | clients' CPU s |\n|" + "|".join("-" * w for w in (32, 10, 8, 19, 8, 8, 8, 14, 16))
                    + "|")


@dataclass
class PageOpen:
    students: int
    failed: int
    cpu_per_open: float
    latencies: list[float]
    bytes_per_open: float
    client_cpu: float = 0.0  # the simulated students' own CPU seconds (they share the server's cores)

    def row(self, label: str) -> str:
        lat = sorted(self.latencies) or [float("nan")]
        p95 = lat[min(len(lat) - 1, int(round(0.95 * (len(lat) - 1))))]
        return (f"| {label:30} | {self.students:8} | {self.failed:6} | {self.cpu_per_open:17.3f} | "
                f"{statistics.median(lat):6.2f} | {p95:6.2f} | {lat[-1]:6.2f} | {self.bytes_per_open / 1000:12.0f} | "
                f"{self.client_cpu:14.1f} |")


def record_visit(url: str, seconds: float = 12.0) -> dict:
    """One real page open in Chromium: the URLs it fetched and the events the page sent to the server
    (direct `run/predict` calls fired by the page load, and every `queue/join`), in order."""
    from urllib.parse import urlsplit

    from playwright.sync_api import sync_playwright

    seen: list[tuple[str, str, str | None]] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox"])
        page = browser.new_context(viewport={"width": 1400, "height": 2400}).new_page()
        page.on("request", lambda r: seen.append((r.method, r.url, r.post_data)))
        page.goto(url, wait_until="load")
        page.get_by_role("tab").first.wait_for(timeout=120000)
        # The page's load events, then the events they trigger; quiet for 3 s = the page is ready.
        deadline, count = time.time() + seconds, -1
        while time.time() < deadline and count != len(seen):
            count = len(seen)
            time.sleep(3)
        browser.close()
    gets, predicts, joins = [], [], []
    for method, full, body in seen:
        parts = urlsplit(full)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        if method == "GET" and "/gradio_api/heartbeat/" not in path and "/gradio_api/queue/data" not in path:
            gets.append(path)
        elif method == "POST" and path.startswith("/gradio_api/run/predict"):
            payload = json.loads(body)
            if payload.get("trigger_id") == 0 or "event_data" in payload:  # not a gr.Timer's tick
                predicts.append(payload)
        elif method == "POST" and path.startswith("/gradio_api/queue/join"):
            joins.append(json.loads(body))
    return {"gets": gets, "predicts": predicts, "joins": joins}


async def replay_visit(base: str, visit: dict, barrier) -> tuple[float, int, str | None]:
    """One student's page open over HTTP, as the browser did it (6 connections, brotli accepted): every
    file, then the direct load events, then the queued ones, until the last has completed. Returns
    the seconds, the bytes received (as sent, compressed) and an error, if any."""
    import httpx

    session = "".join(random.choice(string.ascii_lowercase + string.digits) for _ in range(11))
    received = 0
    limits = httpx.Limits(max_connections=6)
    headers = {"Accept-Encoding": "gzip, deflate, br, zstd", "User-Agent": "Mozilla/5.0 (page-open replay)"}
    async with httpx.AsyncClient(base_url=base, limits=limits, headers=headers, timeout=600) as http:
        async def get(path: str) -> None:
            nonlocal received
            async with http.stream("GET", path) as response:
                async for chunk in response.aiter_raw():
                    received += len(chunk)
                if response.status_code >= 400:
                    raise RuntimeError(f"GET {path}: {response.status_code}")

        async def post(path: str, payload: dict) -> dict:
            nonlocal received
            response = await http.post(path, json=dict(payload, session_hash=session))
            received += len(response.content)
            response.raise_for_status()
            return response.json()

        await barrier.wait()
        started = time.perf_counter()
        try:
            await get(visit["gets"][0])  # the page, then what it names
            await asyncio.gather(*(get(path) for path in visit["gets"][1:]))
            for payload in visit["predicts"]:
                await post("/gradio_api/run/predict", payload)
            ids = {(await post("/gradio_api/queue/join", payload))["event_id"] for payload in visit["joins"]}
            async with http.stream("GET", f"/gradio_api/queue/data?session_hash={session}") as stream:
                async for line in stream.aiter_lines():
                    received += len(line) + 1
                    if line.startswith("data:"):
                        message = json.loads(line[5:])
                        if message.get("msg") == "process_completed":
                            if not message.get("success", True):
                                raise RuntimeError(f"event failed: {str(message.get('output'))[:200]}")
                            ids.discard(message.get("event_id"))
                        if not ids or message.get("msg") == "close_stream":
                            break
            error = f"{len(ids)} events never completed" if ids else None
        except Exception as exc:  # counted, not raised
            error = f"{type(exc).__name__}: {exc}"
        return time.perf_counter() - started, received, error


def run_page_open(base: str, visit: dict, n: int, pid: int) -> PageOpen:
    """n students open the page at the same moment; the server's CPU seconds are read around it."""
    import psutil

    server = psutil.Process(pid)

    async def everybody():
        barrier = asyncio.Barrier(n)
        return await asyncio.gather(*(replay_visit(base, visit, barrier) for _ in range(n)))

    before, client_before = server.cpu_times(), time.process_time()
    results = asyncio.run(everybody())
    after, client_cpu = server.cpu_times(), time.process_time() - client_before
    cpu = (after.user - before.user) + (after.system - before.system)
    errors = [r[2] for r in results if r[2]]
    if errors:
        print(f"  page open x{n}: {len(errors)} failed, e.g. {errors[0][:300]}", flush=True)
    return PageOpen(n, len(errors), cpu / n, [r[0] for r in results if not r[2]],
                    sum(r[1] for r in results) / n, client_cpu)


def main_page_open(args) -> None:
    """The page-open replay: LM Lab (this checkout or --app-dir) beside a plain one-tab Gradio app."""
    counts = [int(c) for c in (args.clients or "25,50,100").split(",")]
    dirs = [Path(d).resolve() for d in args.app_dir.split(",")] if args.app_dir else [ROOT]
    targets = [(f"LM Lab ({d.name})", [sys.executable, "app.py"], d, "app") for d in dirs]
    if not args.no_peer:
        targets.append(("peer: plain Gradio, one tab", [sys.executable, str(ROOT / "tests" / "peer_app.py"), "-"],
                        ROOT, "peer"))
    rows = []
    for label, command, cwd, name in targets:
        proc, url = start(command, cwd, {"HF_HUB_OFFLINE": "1"}, name)
        try:
            visit = record_visit(url)  # the first visit also loads the models the first screen uses
            print(f"{label}: a visit fetched {len(visit['gets'])} files, sent {len(visit['predicts'])} direct and "
                  f"{len(visit['joins'])} queued events", flush=True)
            run_page_open(url.rstrip("/"), visit, 1, proc.pid)  # warm-up: the shared first results exist
            for n in counts:
                load = run_page_open(url.rstrip("/"), visit, n, proc.pid)
                rows.append((label, load))
                print(load.row(label), flush=True)
        finally:
            proc.terminate()
    print(f"\n{PAGE_OPEN_HEADER}")
    for label, load in rows:
        print(load.row(label))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", default="", help="comma-separated client counts (default 50,100,200; "
                                                       "generate: 20,50)")
    parser.add_argument("--only", default="", help="comma-separated endpoints (--heavy: scenarios)")
    parser.add_argument("--app-dir", default="", help="another checkout of LM Lab to load instead of this one "
                                                      "(--page-open, --heavy: one or two, comma-separated)")
    parser.add_argument("--no-peer", action="store_true")
    parser.add_argument("--backend", choices=("embedded", "ray", "both"), default="embedded",
                        help="where the passes and jobs run: in the app (default), on a local Ray "
                             "(LAB_RAY_ADDRESS=local), or both, back to back (the load and --heavy)")
    parser.add_argument("--memory", action="store_true")
    parser.add_argument("--page-open", action="store_true", help="a class opening the page at once (default "
                                                                  "25,50,100 students), beside a plain Gradio app")
    parser.add_argument("--heavy", action="store_true", help="a class pressing Fine-tune, Compare strategies and "
                                                              "the curves at once (tests/loadtest_heavy.py)")
    parser.add_argument("--students", type=float, default=1.0, help="--heavy: scales its 30 / 10 / 50 students "
                                                                     "(0.1 for a quick try)")
    parser.add_argument("--cap", type=float, default=420.0, help="--heavy: seconds per scenario; students not "
                                                                  "finished by then are counted as unfinished")
    parser.add_argument("--class", dest="class_size", default="", help="Ask the class: this many students answer "
                                                                        "one question at once (tests/loadtest_class.py)")
    parser.add_argument("--rounds", type=int, choices=(1, 2), default=1,
                        help="--class: 2 adds peer instruction's second vote (every student answers again)")
    parser.add_argument("--class-poll", choices=("version", "state"), default="version",
                        help="--class: how a waiting page looks for the reveal: GET /class/version, redrawing on a "
                             "change (the page now), or the whole /class_state every 3 s (the page before)")
    parser.add_argument("--class-via", choices=("page", "client"), default="page",
                        help="--class: how a phone sends the class's actions: one POST to /gradio_api/run/<name>, as "
                             "the page's Gradio JS client does for an event that skips the queue (default), or "
                             "gradio_client (which always goes through the queue: its join and its event stream)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.class_size:
        from tests import loadtest_class

        return loadtest_class.main_class(args)
    if args.heavy:
        from tests import loadtest_heavy

        return loadtest_heavy.main_heavy(args) or 0
    (main_memory if args.memory else main_page_open if args.page_open else main_load)(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
