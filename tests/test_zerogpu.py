"""ZeroGPU (labs.core.work.zerogpu), tested against the `spaces` package's own code: there is no GPU and no
ZeroGPU service here, so a GPU call's process boundary is spaces' own (a fork, its queue pickling what
crosses), and the app-level test runs the app under spaces' real ZeroGPU code with its device API played by
tests/zerogpu_emulator.py.

- Off ZeroGPU nothing changes: `spaces` is never imported.
- Each decorated function, for every kind of work sent to it, returns in a forked child what it returns here.
- Stop crosses the fork; a refused or lost call runs on the CPU, saying so, without repeating what was seen.
- The app on (emulated) ZeroGPU starts, reports its GPU functions, serves every endpoint with 0 tracebacks,
  trains in GPU calls, and runs on the CPU when spaces raises its own quota error, saying so in one line.
- Stopped, the app leaves nothing running: neither itself nor the GPU workers spaces forked from it."""

from __future__ import annotations

import dataclasses
import inspect
import math
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import cloudpickle
import numpy as np
import psutil
import pytest
import spaces.utils  # before any test sets SPACES_ZERO_GPU: off ZeroGPU, importing spaces patches nothing
from conftest import ROOT, WORK, api_client, free_port, screenshot
from test_chaos import arguments, errors_in, friendly, sensible

from labs.core.models import device, models
from labs.core.work import zerogpu
from labs.core.work.jobs import JOBS

TIMING = re.compile(r"(^|_)(seconds|elapsed|time|run_id|ms|per_second|measured_at|threads)($|_)")


def comparable(value):
    """A result without what differs between two runs of the same work (timings, a run's id), floats to 4 digits:
    the work in a forked child with one thread may add in another order than here (differences of about 1e-7)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if not TIMING.search(str(k))}
    if isinstance(value, (list, tuple)):
        return [comparable(v) for v in value]
    if isinstance(value, np.ndarray):
        return comparable(value.tolist())
    if isinstance(value, (float, np.floating)):  # 4 significant digits; below 1e-6, rounding noise (a difference)
        return (0.0 if abs(value) < 1e-6 else float(f"{float(value):.4g}")) if math.isfinite(value) else str(value)
    return value


def forked(fn, *args):
    """fn(*args) in a child forked from this process, as spaces runs a GPU call: the arguments and each item it
    returns or yields cross spaces' own queue (pickled). Yields the items as they come."""
    arg_queue, res_queue = spaces.utils.SimpleQueue(), spaces.utils.SimpleQueue()

    def child():
        out = fn(*arg_queue.get())
        for item in out if inspect.isgenerator(out) else [out]:
            res_queue.put(("item", item))
        res_queue.put(("end", None))

    process = multiprocessing.get_context("fork").Process(target=child, daemon=True)
    process.start()
    arg_queue.put(args)
    while process.is_alive() or not res_queue.empty():
        if res_queue._reader.poll(1):
            what, item = res_queue.get()
            if what == "end":
                break
            yield item
    process.join(30)
    assert process.exitcode == 0, f"the forked child failed (exit code {process.exitcode})"


def in_forked_child(fn, *args) -> list:
    return list(forked(fn, *args))


def unpacked(data: list[bytes]) -> list:
    return [zerogpu._unpack(item) for item in data]


# ---------------------------------------------------------------- off ZeroGPU, nothing changes


def test_off_zero_gpu_spaces_is_never_imported_and_nothing_is_decorated():
    env = {k: v for k, v in os.environ.items() if k != "SPACES_ZERO_GPU"}
    code = ("import sys; from labs.core.work import zerogpu; import labs.finetune.shared_runs, labs.attention.cost; "
            "zerogpu.install(); assert not zerogpu.installed(); assert 'spaces' not in sys.modules; "
            "from labs.core.models import models; assert models.pick_device() == 'cpu'; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr[-2000:]


def test_on_zero_gpu_models_stay_on_the_cpu_and_only_a_gpu_call_sees_cuda(monkeypatch):
    import torch

    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # what spaces' patching answers in the app
    assert models.pick_device() == "cpu"

    def in_a_call():
        zerogpu._enter_worker()
        return device.pick_device(), device.in_gpu_call(), torch.get_num_threads()

    assert in_forked_child(in_a_call) == [("cuda", True, 1)]
    assert not device.in_gpu_call()  # the child's flags stay in the child


# ---------------------------------------------------------------- every kind of work, here and in a fork

def small_settings(model):
    from labs.finetune import strategies

    return strategies.check_settings(model, "full", 1e-3, 1, 8, 16, 3)


def gpu_job(kind: str, tiny: dict, monkeypatch):
    """The work a lab submits for a GPU job of this kind, captured as JOBS.submit receives it."""
    from labs.finetune import (
        adapters_lora,
        compare,
        data_efficiency,
        recipes,
        shared_runs,
        tasks,
        theta_distance,
        ulmfit,
    )
    from labs.finetune import data as datasets

    captured = {}

    def capture(kind, key, work, units=1.0, **_):
        captured.update(kind=kind, work=work, units=units)

    monkeypatch.setattr(JOBS, "submit", capture)
    masked, s = tiny["masked"], small_settings(tiny["masked"])
    if kind == "finetune":
        shared_runs.run_ticket(s, datasets.builtin_data(), False)
    elif kind == "compare":
        plan = compare.plan(s)
        monkeypatch.setattr(compare, "plan", lambda settings: plan[:2])  # two strategies are enough to cross
        shared_runs.compare_ticket(s, datasets.builtin_data())
    elif kind == "data_efficiency":
        data_efficiency.ticket(*data_efficiency.check(masked, "sentiment", [8], 0))
    elif kind == "ulmfit":
        ulmfit.ticket(ulmfit.check_plan(masked, 8, 1, 1, 0))  # a masked LM: transformers' seeded MLM collator
    elif kind == "recipes":
        pair = tuple(dataclasses.replace(s, task="pair", learning_rate=rate) for rate in (1e-3, 5e-4))
        assert tasks.task_data("pair")
        recipes.ticket(pair)
    elif kind == "adapters_lora":
        adapters_lora.ticket(adapters_lora.check_plan(masked, 16, 4, 1, 0))
    elif kind == "theta_distance":
        theta_distance.ticket(*theta_distance.check(masked, [1e-3], [16], 0))
    monkeypatch.undo()
    assert captured["kind"] == kind
    return captured["work"], captured["units"]


GPU_JOB_KINDS = ("finetune", "compare", "data_efficiency", "ulmfit", "recipes", "adapters_lora", "theta_distance")


def test_every_kind_of_gpu_job_is_tested_here():
    import labs.finetune.tab  # noqa: F401  (every training panel declares its kinds on import)

    assert set(GPU_JOB_KINDS) == JOBS._gpu


@pytest.mark.parametrize("kind", [pytest.param(kind, marks=pytest.mark.slow) if kind == "ulmfit" else kind
                                  for kind in GPU_JOB_KINDS])  # ULMFiT's three stages: over 10 s
def test_a_gpu_job_gives_in_a_forked_worker_the_events_it_gives_here(kind, tiny_models, monkeypatch):
    work, units = gpu_job(kind, tiny_models, monkeypatch)
    to_wire, from_wire = JOBS._wire.get(kind, (None, None))
    here = list(work(threading.Event()))
    payload = cloudpickle.dumps((work, to_wire))
    there = unpacked(in_forked_child(zerogpu._stream_in_gpu, payload, "/nonexistent-stop-file", 30))
    there = [from_wire(e) if from_wire is not None else e for e in there]
    assert len(here) > 2 and comparable(there) == comparable(here)
    assert zerogpu.MIN_SECONDS <= zerogpu.seconds_for(kind, units) <= zerogpu.MAX_SECONDS


GPU_SHARED_KINDS = ("attention_cost", "long_document_prototypes")


def test_every_shared_computation_sent_to_the_gpu_is_tested_here():
    sent = {kind for path in (ROOT / "labs").rglob("*.py")
            for kind in re.findall(r'JOBS\.shared\("(\w+)"[^\n]*\n?[^\n]*gpu_units=', path.read_text())}
    assert sent == set(GPU_SHARED_KINDS)


@pytest.mark.parametrize("kind", GPU_SHARED_KINDS)
def test_a_shared_computation_gives_in_a_forked_worker_what_it_gives_here(kind, tiny_models, monkeypatch):
    from labs.attention import cost, long_document

    captured = {}
    monkeypatch.setattr(JOBS, "shared", lambda k, key, compute, gpu_units=None: captured.update(
        kind=k, compute=compute, units=gpu_units))
    loaded = models.load(tiny_models["masked"])
    (cost.attention_cost if kind == "attention_cost" else long_document.prototypes)(loaded)
    monkeypatch.undo()
    assert captured["kind"] == kind and captured["units"] > 0
    here = captured["compute"]()
    there = unpacked(in_forked_child(zerogpu._call_in_gpu, cloudpickle.dumps((captured["compute"], (), {})), 30))
    assert comparable(there) == [comparable(here)]


def test_a_loaded_model_crosses_by_name_not_by_its_weights(tiny_models):
    loaded = models.load(tiny_models["masked"])
    assert len(cloudpickle.dumps(loaded)) < 1000
    assert cloudpickle.loads(cloudpickle.dumps(loaded)) is loaded  # this process holds it: the same object


def test_our_own_errors_come_back_as_they_were_raised(tiny_models):
    from labs.core.errors import BadInput

    def refuse():
        raise BadInput("Type a sentence first.")

    [data] = in_forked_child(zerogpu._call_in_gpu, cloudpickle.dumps((refuse, (), {})), 30)
    with pytest.raises(BadInput, match="Type a sentence first"):
        zerogpu._unpack(data)


# ---------------------------------------------------------------- Stop, refusals and lost calls


def forked_stream(payload, stop_file, seconds):
    """What spaces.GPU makes of _stream_in_gpu, minus the scheduling: the work in a forked child, item by item."""
    yield from forked(zerogpu._stream_in_gpu, payload, stop_file, seconds)


def spaces_error(title: str, message: str):
    from spaces.zero.gradio import error  # the constructor spaces raises its refusals with

    return error(title, message)


@pytest.fixture
def on_zero_gpu(monkeypatch):
    monkeypatch.setattr(zerogpu, "_installed", True)
    monkeypatch.setattr(zerogpu, "SERVED", zerogpu.Served())


def test_stop_reaches_the_work_in_the_worker_which_ends_with_where_it_got_to(tiny_models, on_zero_gpu, monkeypatch):
    from labs.finetune import data as datasets
    from labs.finetune import training

    s = dataclasses.replace(small_settings(tiny_models["masked"]), epochs=3, train_examples=64)
    control = threading.Event()

    def work(stop):
        for event in training.run_experiment(s, datasets.builtin_data(), False, stop):
            if isinstance(event, training.Step):
                time.sleep(0.5)  # the app's stop flag reaches the worker's stop file meanwhile (mirrored every 0.25 s)
            yield event

    def stopping_stream(*args):  # Stop pressed once the first event has come back
        for item in forked_stream(*args):
            control.set()
            yield item

    monkeypatch.setattr(zerogpu, "_gpu_stream", stopping_stream)
    served = []
    events = list(zerogpu.stream("finetune", work, control, units=40, on_served=served.append))
    steps = [e for e in events if isinstance(e, training.Step)]
    [result] = [e for e in events if isinstance(e, training.RunResult)]
    assert result.stopped and 1 <= len(steps) < steps[0].total_steps
    assert served == [zerogpu.GPU_WORDS]


def test_a_call_spaces_refuses_runs_on_the_cpu_and_says_so(tiny_models, on_zero_gpu, monkeypatch):
    def refused(payload, seconds):
        raise spaces_error("ZeroGPU quota exceeded", "Space app has reached its GPU limit.")

    monkeypatch.setattr(zerogpu, "_gpu_call", refused)
    loaded = models.load(tiny_models["masked"])
    compute = lambda: models.load(loaded).model.config.hidden_size * 2  # noqa: E731
    assert zerogpu.call("attention_cost", compute, units=10) == compute()
    assert zerogpu.note_var.get() == zerogpu.QUOTA_WORDS  # in the caller's context: the page shows it once
    assert zerogpu.SERVED.fallbacks == 1 and zerogpu.SERVED.last_fallback == zerogpu.QUOTA_WORDS
    zerogpu.note_var.set(None)


@pytest.mark.parametrize("title, words", [("ZeroGPU quota exceeded", zerogpu.QUOTA_WORDS),
                                          ("ZeroGPU illegal duration", zerogpu.QUOTA_WORDS),
                                          ("ZeroGPU pending credits exceeded", zerogpu.QUOTA_WORDS),
                                          ("ZeroGPU client error", zerogpu.NO_GPU_WORDS),
                                          ("ZeroGPU worker error", zerogpu.NO_GPU_WORDS)])
def test_each_of_spaces_refusals_has_its_one_line(title, words):
    assert zerogpu.fallback_words(spaces_error(title, "…")) == words


def test_a_stream_lost_midway_goes_on_on_the_cpu_without_repeating_an_event(tiny_models, on_zero_gpu, monkeypatch):
    def work(stop):
        for i in range(6):
            yield {"step": i, "square": i * i}

    def lost_after_two(payload, stop_file, seconds):
        for n, item in enumerate(forked_stream(payload, stop_file, seconds)):
            if n == 2:
                raise spaces_error("ZeroGPU worker error", "GPU task aborted")
            yield item

    monkeypatch.setattr(zerogpu, "_gpu_stream", lost_after_two)
    served, asked_before = [], zerogpu.seconds_for("finetune", 400)
    events = list(zerogpu.stream("finetune", work, threading.Event(), on_served=served.append))
    assert events == list(work(None))
    assert served == [zerogpu.GPU_WORDS, zerogpu.NO_GPU_WORDS]
    assert zerogpu.seconds_for("finetune", 400) > asked_before  # aborted, maybe for its duration: more next time


# ---------------------------------------------------------------- stopping the app: nothing left behind


def running(process: psutil.Process) -> bool:
    """Still running: neither ended nor a zombie (an orphan's exit its new parent has not collected yet)."""
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def still_running(pgid: int, started: list[psutil.Process]) -> list[psutil.Process]:
    """The processes of group `pgid` still running, and those of `started` (its descendants: one may have left
    the group)."""
    found = {p.pid: p for p in started}
    for p in psutil.process_iter():
        try:
            if os.getpgid(p.pid) == pgid:
                found.setdefault(p.pid, p)
        except (ProcessLookupError, PermissionError):
            pass
    return [p for p in found.values() if running(p)]


def stop_group(proc: subprocess.Popen, grace: float = 15.0) -> list[str]:
    """Stops a process started with start_new_session=True, all of its process group (the GPU workers spaces
    forked from the app, orphans once the app has ended: a SIGTERM to the app alone left them running) and
    whatever else it started: SIGTERM, then SIGKILL to what is left after `grace` seconds. Returns what is still
    running after that (nothing)."""
    try:
        started = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        started = []
    left = []
    for sig, seconds in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:  # the group has ended
            pass
        for p in still_running(proc.pid, started):  # one that left the group
            try:
                p.send_signal(sig)
            except psutil.NoSuchProcess:
                pass
        deadline = time.monotonic() + seconds
        while True:
            proc.poll()  # collects the app's exit
            left = still_running(proc.pid, started)
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if not left:
            break
    described = []
    for p in left:
        try:
            described.append(f"{p.pid} {' '.join(p.cmdline())}")
        except psutil.NoSuchProcess:  # ended meanwhile
            pass
    return described


TWO_GPU_FUNCTIONS = """
import os, time, spaces

@spaces.GPU(duration=10)
def one():
    return os.getpid()

@spaces.GPU(duration=10)
def other():
    return os.getpid()

print("workers", one(), other(), flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("stop", ["the group", "the emulator alone"])
def test_a_stopped_emulator_leaves_none_of_the_gpu_workers_spaces_forked_running(stop, tmp_path):
    """What the app does at its first GPU calls (spaces forks a worker per decorated function and keeps it for the
    next call), then stopped as zero_gpu_app stops it (its whole group), or with a SIGTERM to the emulator alone."""
    from zerogpu_emulator import DeviceAPI

    api, script = DeviceAPI(), tmp_path / "two_gpu_functions.py"
    script.write_text(TWO_GPU_FUNCTIONS)
    env = dict(os.environ, **api.env(), TMPDIR=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-m", "tests.zerogpu_emulator", str(script)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        line = ""
        while not line.startswith("workers"):  # spaces' own lines first
            line = proc.stdout.readline()
            assert line, "the emulator ended before its GPU calls"
        workers = [psutil.Process(int(pid)) for pid in line.split()[1:]]
        assert sorted(api.allowed) == sorted(w.pid for w in workers) and proc.pid not in api.allowed
        assert all(running(w) and w.pid != proc.pid for w in workers)
        if stop == "the group":
            assert stop_group(proc) == []
        else:
            proc.terminate()
            proc.wait(30)
            deadline = time.monotonic() + 10
            while any(running(w) for w in workers) and time.monotonic() < deadline:
                time.sleep(0.2)
        assert [w.pid for w in workers if running(w)] == []
    finally:
        stop_group(proc)
        proc.stdout.close()
        api.close()


# ---------------------------------------------------------------- the app on ZeroGPU (spaces' own code)


@pytest.fixture(scope="module")
def zero_gpu_app(tiny_models):
    from test_gpu_models import ARCHITECTURES, build
    from zerogpu_emulator import DeviceAPI

    api, port = DeviceAPI(), free_port()
    log_path = WORK / "zerogpu-app.log"
    (WORK / "zerogpu-tmp").mkdir(exist_ok=True)
    # A larger model (a tiny Llama standing in for SmolLM2-1.7B), which the worker may run on its CPU (LAB_DEVICE).
    env = dict(os.environ, **api.env(), GRADIO_SERVER_NAME="127.0.0.1", GRADIO_SERVER_PORT=str(port),
               TMPDIR=str(WORK / "zerogpu-tmp"), LAB_DATA_DIR=str(WORK / "zerogpu-data"), LAB_DEVICE="cpu",
               LAB_GPU_MODELS=str(build("tiny-llama-gpu", ARCHITECTURES["tiny-llama-gpu"])))
    # A process group of its own, stopped whole (stop_group): the app and the GPU workers spaces forks from it.
    proc = subprocess.Popen([sys.executable, "-m", "tests.zerogpu_emulator", "app.py"], cwd=ROOT, env=env,
                            stdout=log_path.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url, started = f"http://127.0.0.1:{port}/", time.monotonic()
        while True:
            try:
                urllib.request.urlopen(url, timeout=2).read(100)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() - started > 240:
                    pytest.fail(f"the app did not start on ZeroGPU:\n{log_path.read_text()[-3000:]}")
                time.sleep(0.3)
        yield {"url": url, "api": api, "log": log_path, "client": api_client(url)}
    finally:  # also when the app did not start, or a test failed
        left = stop_group(proc)
        api.close()
    assert left == [], f"still running after the app was stopped: {left}"


def log_since(path: Path, offset: int) -> list[str]:
    with path.open() as f:
        f.seek(offset)
        return f.read().splitlines()


# Panels that train on the CPU for half a minute at their only size (word2vec and GloVe, ELMo, the features of 352
# reviews) and never ask for a GPU: here they are served an input they refuse on the way in, a friendly error; their
# runs are tested in their own files.
REFUSED_ON_THE_WAY_IN = {"/word2vec": {"word": "x1"}, "/elmo": {"word": "x1"}, "/features": {"text": "x" * 5000}}


@pytest.mark.app
@pytest.mark.slow
def test_on_zero_gpu_the_app_starts_and_serves_every_endpoint_without_a_traceback(zero_gpu_app, tiny_models):
    api, client, log = zero_gpu_app["api"], zero_gpu_app["client"], zero_gpu_app["log"]
    assert api.started.is_set()  # spaces reported the decorated functions at launch
    endpoints = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
    assert len(endpoints) > 60
    failures = []
    for endpoint, info in endpoints.items():
        args = arguments(info["parameters"], {**sensible(endpoint, tiny_models), **REFUSED_ON_THE_WAY_IN.get(endpoint, {})})
        try:
            errors = errors_in(client.submit(*args, api_name=endpoint).result(timeout=300))
            failures += [(endpoint, e) for e in errors if not friendly(e)]
        except Exception as exc:  # a refusal (a class code nobody started) must be a sentence, never a traceback
            if not friendly(str(exc)):
                failures.append((endpoint, str(exc)[:200]))
    assert failures == []
    lines = log.read_text().splitlines()
    bad = [i for i, line in enumerate(lines) if " ERROR " in line or "Traceback" in line]
    assert bad == [], "\n".join(lines[bad[0]:bad[0] + 40])
    assert api.schedules, "no GPU call was made"  # /finetune, /compare_strategies, /attention_cost, ...
    assert all(zerogpu.MIN_SECONDS <= int(s["durationSeconds"]) <= zerogpu.MAX_SECONDS for s in api.schedules)
    assert len(set(api.allowed)) >= 1 and os.getpid() not in api.allowed


@pytest.mark.app
@pytest.mark.slow
def test_on_zero_gpu_a_run_trains_in_a_gpu_call_and_equals_the_run_here(zero_gpu_app, tiny_models):
    from labs.finetune import training

    api, client = zero_gpu_app["api"], zero_gpu_app["client"]
    api.mode, before = "gpu", len(api.schedules)
    args = (tiny_models["masked"], "full", 1e-3, 1, 8, 24, 5, False)
    remote = client.predict(*args, api_name="/finetune")
    assert len(api.schedules) == before + 1
    s, data, scratch = training.api_settings(*args)
    here = training.experiment_json([e for e in training.run_experiment(s, data, scratch, threading.Event())
                                     if isinstance(e, training.RunResult)])
    assert comparable(remote) == comparable(here)


@pytest.mark.app
@pytest.mark.slow
def test_on_zero_gpu_a_larger_model_is_served_in_a_gpu_call_and_never_loaded_in_the_app(zero_gpu_app, monkeypatch):
    from labs.core.models import offered
    from labs.next_token import compute

    api, client = zero_gpu_app["api"], zero_gpu_app["client"]
    api.mode, before = "gpu", len(api.schedules)
    remote = client.predict("The cat sat on the", "tiny-llama-gpu", api_name="/next_token")
    assert len(api.schedules) == before + 1
    listed = {m["name"]: m for m in client.predict(api_name="/models")["models"]}
    assert listed["tiny-llama-gpu"]["loaded"] is False  # in the app's process: never
    monkeypatch.setenv("LAB_GPU_MODELS", os.environ.get("LAB_GPU_MODELS", "") or str(WORK / "tiny-llama-gpu"))
    monkeypatch.setenv("LAB_DEVICE", "cpu")
    monkeypatch.setattr(offered, "gpu_here", lambda: True)
    models.reset_registry()
    try:
        here = compute.next_token_json("The cat sat on the", "tiny-llama-gpu")
    finally:
        monkeypatch.undo()
        models.reset_registry()
    assert comparable(remote) == comparable(here)


@pytest.mark.app
@pytest.mark.slow
def test_on_zero_gpu_a_spent_quota_runs_on_the_cpu_and_the_page_says_so_in_one_line(zero_gpu_app, browser,
                                                                                        tiny_models):
    from playwright.sync_api import expect

    api, client, log = zero_gpu_app["api"], zero_gpu_app["client"], zero_gpu_app["log"]
    api.mode = "quota"
    try:
        offset = log.stat().st_size
        shared = client.predict(tiny_models["pretraining"], api_name="/attention_cost")  # not measured before
        assert shared["points"] and "ZeroGPU quota exceeded" in "\n".join(log_since(log, offset))
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        # A run nobody has asked for yet (its own learning rate): it must be trained now, and cannot be.
        page.goto(f"{zero_gpu_app['url']}?tab=finetune&model={tiny_models['masked']}&learning_rate=0.00031&epochs=1",
                  wait_until="load")
        page.get_by_role("tab", name="Fine-tune", exact=True).wait_for()
        expect(page.locator("#lab-status")).to_contain_text("ZeroGPU: training")
        expect(page.locator("#lab-sign-in")).to_contain_text("signed in to Hugging Face, you have your own share")
        page.get_by_role("button", name="Fine-tune", exact=True).click()
        expect(page.locator("#ft-progress")).to_contain_text(f"Done. {zerogpu.QUOTA_WORDS}", timeout=240000)
        page.locator("#ft-progress").scroll_into_view_if_needed()
        screenshot(page, "zerogpu-quota-fallback")
        assert "Traceback" not in page.content()
        context.close()
    finally:
        api.mode = "gpu"
