"""The heaviest buttons at once: a class pressing Fine-tune, Compare strategies and the curve labs together,
and a class filling in blanks while a fine-tune runs. Every student is one request through Gradio's REST
API (`POST gradio_api/call/<endpoint>`, then its server-sent events), all from one asyncio loop with
httpx, so that the simulated class takes little of the server's CPU. Not a unit test: it prints figures.

    python -m tests.loadtest --heavy                                    # every scenario: 30 / 10 / 50 students
    python -m tests.loadtest --heavy --students 0.1 --cap 120 --only finetune_identical,fill_mask_during_finetune
    python -m tests.loadtest --heavy --app-dir /path/to/before,.        # two versions, one after the other

"Runs trained" is read from the results, never from the server's own account: distinct run_ids for
/finetune, distinct measured seconds for /compare_strategies, and for the curves (whose identical
computations give identical results) the scenario's server CPU over the CPU of one request alone.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests import fullsize
from tests.loadtest import MINILM, ROOT, SMOLLM2, WORK, app_env, backends, start, stop

RATES = [1e-5, 2e-5, 3e-5, 5e-5, 7e-5, 1e-4, 2e-4, 3e-4, 5e-4, 1e-3]
CURVES = ("few_shot", "domain_shift", "mask_rate", "nsp_accuracy", "distillation")
SCENARIOS = ("finetune_identical", "finetune_10_rates", "compare_identical", *CURVES, "fill_mask_during_finetune")
NEEDS = {"nsp_accuracy": "a BERT checkpoint with its trained NSP head, such as bert-base-uncased",
         "distillation": "a teacher and its student sharing one vocabulary: bert-base-uncased, distilbert-base-uncased"}
HEADER = ("| app                  | scenario                   | students | failed | p50 s  | p95 s  | last s | "
          "server CPU s | runs trained | queued seen / max ahead |\n|"
          + "|".join("-" * w for w in (22, 28, 10, 8, 8, 8, 8, 14, 14, 25)) + "|")


def finetune_args(learning_rate: float, seed: int) -> list:
    """/finetune's positional arguments (labs/finetune/shared_runs.py finetune_stream): the lab's defaults."""
    return [MINILM, "full", learning_rate, 3, 16, 200, seed, False, "sentiment", "", 0.1, 0.01]


class Fresh:
    """Seeds and numbers that no earlier scenario of this process used: nothing can come from a cache."""

    def __init__(self) -> None:
        self.next = 10_000 + random.randrange(900_000)  # below 10**6: /few_shot's largest seed

    def __call__(self, k: int = 1) -> int:
        """The first of k fresh consecutive numbers."""
        self.next += k
        return self.next - k


@dataclass
class Student:
    latency: float | None = None  # None: not finished at the cap
    error: str | None = None
    result: object = None  # the last `complete` event's first element
    payloads: list = field(default_factory=list)  # every streamed payload's first element
    event_id: str | None = None

    @property
    def ahead(self) -> list[int]:
        """The `ahead` of every {"status": "queued"} event this student saw."""
        return [p.get("ahead", 0) for p in self.payloads if isinstance(p, dict) and p.get("status") == "queued"]


class Lab:
    """One running app: its URL and process, the shared HTTP client, and the rows measured on it."""

    def __init__(self, label: str, url: str, pid: int, http, cap: float, rows: list[str]) -> None:
        import psutil

        self.label, self.url, self.http, self.cap, self.rows = label, url, http, cap, rows
        self.process, self.fn_indexes = psutil.Process(pid), None

    def cpu(self) -> float:
        """The server's CPU seconds so far (user + system), its child processes included."""
        import psutil

        t = self.process.cpu_times()
        total = t.user + t.system + t.children_user + t.children_system
        for child in self.process.children(recursive=True):
            try:
                c = child.cpu_times()
                total += c.user + c.system
            except psutil.Error:  # ended meanwhile: counted in children_* from now on
                pass
        return total

    async def one(self, endpoint: str, data: list, student: Student, gate=None, on_payload=None) -> None:
        """One student: wait for the class, POST the call, read its events until complete or error."""
        if gate is not None:
            await gate.wait()
        started = time.perf_counter()
        try:
            posted = await self.http.post(f"{self.url}gradio_api/call/{endpoint}", json={"data": data})
            posted.raise_for_status()
            student.event_id = posted.json()["event_id"]
            async with self.http.stream("GET", f"{self.url}gradio_api/call/{endpoint}/{student.event_id}") as sse:
                event = ""
                async for line in sse.aiter_lines():
                    if line.startswith("event:"):
                        event = line[6:].strip()
                    elif line.startswith("data:") and event in ("generating", "complete", "error"):
                        payload = json.loads(line[5:])
                        if event == "error":
                            student.error = json.dumps(payload)[:400] if payload else "error (no message)"
                            break
                        first = payload[0] if isinstance(payload, list) and payload else payload
                        student.payloads.append(first)
                        if on_payload is not None:
                            on_payload(first)
                        if event == "complete":
                            student.result = first
                            break
            if student.result is None and student.error is None:
                student.error = "the stream ended before `complete`"
        except Exception as exc:  # counted, not raised (a cancellation at the cap is not an Exception)
            student.error = f"{type(exc).__name__}: {exc}"
        student.latency = time.perf_counter() - started

    async def crowd(self, endpoint: str, datas: list[list], settle: bool = True) -> tuple[list[Student], float]:
        """len(datas) students released at once; (the students, the server's CPU seconds meanwhile).
        settle: then wait until the server is quiet (not while a fine-tune runs beside them)."""
        students = [Student() for _ in datas]
        gate = asyncio.Barrier(len(datas))
        before = self.cpu()
        tasks = [asyncio.create_task(self.one(endpoint, d, s, gate)) for d, s in zip(datas, students)]
        _, pending = await asyncio.wait(tasks, timeout=self.cap)
        cpu = self.cpu() - before
        await self.stop(endpoint, [s for s, t in zip(students, tasks) if t in pending], pending, settle)
        return students, cpu

    async def stop(self, endpoint: str, students: list[Student], tasks, settle: bool = True) -> None:
        """Close these students' connections and cancel their events on the server, then wait until the
        server is quiet, so that nothing left over runs into the next scenario's CPU."""
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if students and self.fn_indexes is None:
            config = (await self.http.get(f"{self.url}config")).json()
            self.fn_indexes = {d.get("api_name"): d["id"] for d in config.get("dependencies", [])}
        for s in students:
            if s.event_id and endpoint in self.fn_indexes:  # a simple call's session is its event id
                body = {"session_hash": s.event_id, "fn_index": self.fn_indexes[endpoint], "event_id": s.event_id}
                await self.http.post(f"{self.url}gradio_api/cancel", json=body)
        for _ in range(120 if settle else 0):  # at most two minutes: below 15 % of a core for a second
            before = self.cpu()
            await asyncio.sleep(1)
            if self.cpu() - before < 0.15:
                break

    def row(self, scenario: str, students: list[Student], cpu: float, trained: str) -> None:
        finished = [s for s in students if s.latency is not None]
        errors = [s.error for s in finished if s.error]
        unfinished = len(students) - len(finished)
        if errors:
            print(f"  {scenario}: {len(errors)} failed, the first: {errors[0][:300]}", flush=True)
        if unfinished:
            print(f"  {scenario}: {unfinished} unfinished at the {self.cap:.0f} s cap (connections closed)",
                  flush=True)
        lat = sorted(s.latency for s in finished if not s.error) or [float("nan")]
        p95 = lat[min(len(lat) - 1, int(round(0.95 * (len(lat) - 1))))]
        queued = sum(1 for s in students if s.ahead)
        ahead = max((a for s in students for a in s.ahead), default=0)
        failed = f"{len(errors)}" + (f" +{unfinished} unfinished" if unfinished else "")
        self.add(f"| {self.label:20} | {scenario:26} | {len(students):8} | {failed:6} | {statistics.median(lat):6.2f} "
                 f"| {p95:6.2f} | {lat[-1]:6.2f} | {cpu:12.1f} | {trained:12} | {f'{queued} / {ahead}':23} |")

    def add(self, line: str) -> None:
        self.rows.append(line)
        print(line, flush=True)


def distinct(students: list[Student], key) -> str:
    """How many different runs the successful results come from."""
    return str(len({key(s.result) for s in students if s.result is not None and not s.error}))


def curve_args(name: str, bert: str, fresh: Fresh) -> list:
    """A curve endpoint's positional arguments, fresh: a seed or a text that no one sent before."""
    n = fresh(3)
    if name == "few_shot":  # few_shot_api(model, shots, labels, seeds)
        return [SMOLLM2, [0, 1, 2, 4, 8], "natural", [n, n + 1, n + 2]]
    if name == "domain_shift":  # domain_shift_api(model, text): MiniLM is an encoder, not accepted
        return [bert, f"The students trained model number {n} on their laptops."]
    if name == "mask_rate":  # mask_rate_json(text, model, rates, span, seeds): seeds is a count, so the
        offset = (n % 997 + 1) / 1000  # rates are fresh: each rate's masks come from a generator seeded by it
        rates = ", ".join(f"{r + offset:.3f}" for r in (5, 10, 15, 20, 30, 40, 50, 80))
        return [f"The cat number {n} sat on the mat.", bert, rates, False, 2]
    if name == "nsp_accuracy":  # nsp_accuracy_json(model, seed)
        return [bert, n]
    # distillation_api(text, teacher, student)
    return [f"The [MASK] barked at postman number {n}.", "bert-base-uncased", "distilbert-base-uncased"]


async def finetunes(lab: Lab, only: set, fresh: Fresh, scale) -> None:
    alone, cpu = await lab.crowd("finetune", [finetune_args(5e-5, fresh())])
    print(f"{lab.label}: one /finetune alone (warm-up, loads the model): {alone[0].latency or float('nan'):.1f} s, "
          f"server CPU {cpu:.1f} s{', error: ' + alone[0].error[:200] if alone[0].error else ''}", flush=True)
    if "finetune_identical" in only:
        seed = fresh()
        students, cpu = await lab.crowd("finetune", [finetune_args(5e-5, seed)] * scale(30))
        lab.row("finetune_identical", students, cpu, distinct(students, lambda r: r["run_id"]))
    if "finetune_10_rates" in only:
        seed = fresh()
        students, cpu = await lab.crowd("finetune", [finetune_args(RATES[i % 10], seed) for i in range(scale(30))])
        lab.row("finetune_10_rates", students, cpu, distinct(students, lambda r: r["run_id"]))
    if "compare_identical" in only:  # compare_strategies(model, task, learning_rate, epochs, batch, n, seed)
        seed = fresh()
        students, cpu = await lab.crowd("compare_strategies", [[MINILM, "sentiment", 5e-5, 3, 16, 200, seed]] *
                                        scale(10))
        lab.row("compare_identical", students, cpu,
                distinct(students, lambda r: tuple(row["seconds"] for row in r["runs"])))


async def curve(lab: Lab, name: str, bert: str, fresh: Fresh, scale) -> None:
    # A first call of the same size (fresh too): loads the model, fills the caches of the built-in data and
    # warms the server up, so that the "alone" call below costs what each student's would.
    warm, _ = await lab.crowd(name, [curve_args(name, bert, fresh)])
    if warm[0].error or warm[0].latency is None:
        reason = warm[0].error or f"no answer within {lab.cap:.0f} s"
        print(f"  {name}: the server said: {reason[:300]}", flush=True)
        lab.add(f"| {lab.label:20} | {name:26} | not measured here (needs {NEEDS.get(name, reason[:120])}) |")
        return
    alone, alone_cpu = await lab.crowd(name, [curve_args(name, bert, fresh)])
    print(f"{lab.label}: one /{name} alone: {alone[0].latency or float('nan'):.1f} s, server CPU {alone_cpu:.1f} s",
          flush=True)
    students, cpu = await lab.crowd(name, [curve_args(name, bert, fresh)] * scale(30))
    lab.row(name, students, cpu, f"≈{cpu / alone_cpu:.1f}" if alone_cpu > 0 else "?")


async def fill_mask_during_finetune(lab: Lab, bert: str, fresh: Fresh, scale) -> None:
    def sentences(n: int) -> list[list]:
        return [[f"The [MASK] sat on the mat in house number {fresh()}.", bert, 5] for _ in range(n)]

    await lab.crowd("fill_mask", sentences(1))  # loads the model
    students, cpu = await lab.crowd("fill_mask", sentences(scale(50)))
    lab.row("fill_mask, no fine-tune", students, cpu, "–")
    running, tune = asyncio.Event(), Student()

    def on_payload(payload) -> None:
        if isinstance(payload, dict) and payload.get("status") == "running":
            running.set()

    training = asyncio.create_task(lab.one("finetune", finetune_args(5e-5, fresh()), tune, on_payload=on_payload))
    step = asyncio.create_task(running.wait())
    await asyncio.wait([training, step], timeout=lab.cap, return_when=asyncio.FIRST_COMPLETED)
    step.cancel()
    if not running.is_set():
        print(f"  fill_mask_during_finetune: the fine-tune showed no step ({tune.error or 'no answer'})", flush=True)
        lab.add(f"| {lab.label:20} | fill_mask_during_finetune  | not measured (the fine-tune never ran a step) |")
    else:
        students, cpu = await lab.crowd("fill_mask", sentences(scale(50)), settle=False)
        print(f"  the fine-tune was {'still running' if not training.done() else 'over'} when the last /fill_mask "
              f"student finished, at step {tune.payloads[-1].get('step') if tune.payloads else '?'} (the server CPU "
              "below includes it); now cancelled", flush=True)
        lab.row("fill_mask_during_finetune", students, cpu, "–")
    await lab.stop("finetune", [tune] if not training.done() else [], [training] if not training.done() else [])


async def run_app(label: str, url: str, pid: int, only: set, bert: str, fresh: Fresh, args, rows: list) -> None:
    import httpx

    scale = lambda n: max(1, round(n * args.students))  # noqa: E731
    limits = httpx.Limits(max_connections=500, max_keepalive_connections=100)
    async with httpx.AsyncClient(timeout=httpx.Timeout(None, connect=30), limits=limits) as http:
        lab = Lab(label, url, pid, http, args.cap, rows)
        if only & {"finetune_identical", "finetune_10_rates", "compare_identical"}:
            await finetunes(lab, only, fresh, scale)
        for name in CURVES:
            if name in only:
                await curve(lab, name, bert, fresh, scale)
        if "fill_mask_during_finetune" in only:
            await fill_mask_during_finetune(lab, bert, fresh, scale)


def main_heavy(args) -> None:
    """Every chosen scenario on each checkout (--app-dir: one, or "before,after"), one app at a time."""
    names = [n for n in (args.only or ",".join(SCENARIOS)).split(",") if n]
    only = {s for n in names for s in (CURVES if n == "curves" else (n,))}
    if only - set(SCENARIOS):
        raise SystemExit(f"unknown scenarios {sorted(only - set(SCENARIOS))}; "
                         f"choose from {', '.join(SCENARIOS)}, curves")
    bert, gpt2 = fullsize.build(WORK)
    dirs = [Path(d).resolve() for d in args.app_dir.split(",")] if args.app_dir else [ROOT]
    fresh, rows = Fresh(), []
    runs = [(when, app_dir, backend) for when, app_dir in zip(("before", "after") if len(dirs) == 2 else ("LM Lab",),
                                                               dirs) for backend in backends(args)]
    for when, app_dir, backend in runs:  # --backend both: embedded, then LAB_RAY_ADDRESS=local
        app, url = start([sys.executable, "app.py"], app_dir, app_env(bert, gpt2, backend), "app")
        label = f"{when} ({app_dir.name}{'' if args.backend == 'embedded' else ', ' + backend})"
        try:
            started = time.perf_counter()
            asyncio.run(run_app(label, url, app.pid, only, bert.name, fresh, args, rows))
            print(f"{label}: {time.perf_counter() - started:.0f} s in all", flush=True)
        finally:
            stop(app)  # never two servers at once; a local Ray goes with its app
    print(f"\n{HEADER}")
    print("\n".join(rows))
