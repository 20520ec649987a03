"""ZeroGPU, the free GPU of a Hugging Face Space: the work a GPU speeds up runs in `@spaces.GPU` calls, the rest
stays on the CPU. Off ZeroGPU (SPACES_ZERO_GPU unset: a CPU Space, a GPU Space, a server, the tests) nothing
here changes anything and `spaces` is never imported.

What ZeroGPU is, read from the `spaces` package's source (spaces/zero/, version 0.51):
- A function decorated `@spaces.GPU(duration=...)` runs in a worker process forked from the app, which gets the
  GPU for that call: its arguments and results cross by pickling, what it changes in memory stays in the worker,
  and the next call may find the same worker or a fresh fork. `spaces` must see its decorated functions before
  the app launches (it reports them to the Space at start), so app.py calls `install()` first.
- In the app's own process `spaces` fakes CUDA (torch.cuda.is_available() is True; a tensor moved there is a
  placeholder until a call), so models.pick_device() answers "cpu" there: the class's light requests stay on
  the micro-batched CPU path, and only a GPU call sees the real device (models.enter_gpu_call).
- GPU time is a daily quota per visitor (one not signed in is counted by IP address: a lecture hall shares one).
  A call past it, one asking for too long, or one that gets no GPU raises `spaces`' own gr.Error ("ZeroGPU quota
  exceeded", "ZeroGPU illegal duration", "ZeroGPU pending credits exceeded", "ZeroGPU client error", ...). The
  same work then runs here, on the CPU, and the student is told so in one line (`note_var`, Job.served).

Two decorated functions carry every kind of work: `_call_in_gpu` (one result: a shared computation such as
attention's cost) and `_stream_in_gpu` (a job's events: a fine-tune run). What they run travels as one
cloudpickle payload (a job's work is a closure over its settings; a loaded model travels by name, see
LoadedModel.__reduce__), and what they return as cloudpickle bytes; our own errors (a BadInput's message) come
back as values, since `spaces` hands back only the class name of an exception that is not a gr.Error."""

from __future__ import annotations

import contextvars
import functools
import inspect
import logging
import os
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import cloudpickle

from labs.core.errors import LabError
from labs.core.models import device, models

log = logging.getLogger(__name__)

QUOTA_WORDS = "GPU time for today is used up; this ran on the CPU."
NO_GPU_WORDS = "No GPU was free for this; it ran on the CPU."
GPU_WORDS = "Ran on the GPU (ZeroGPU)."
SIGN_IN_WORDS = ("Training here runs on a GPU lent for a few minutes a day per visitor: signed in to Hugging Face, you "
                 "have your own share; not signed in, everyone on the same network shares one. Without it, the CPU "
                 "does the work.")
# What a call asks for: the start of a worker and its models' move to the GPU, then the work at the measured
# speed, twice over (a call that outruns its duration is stopped by ZeroGPU); never past MAX_SECONDS, which
# ZeroGPU refuses for a free account ("ZeroGPU illegal duration"). As little as that: a call is admitted only if
# what it asks for (times 1.5 on ZeroGPU's default GPU, spaces' configs.json) fits in the visitor's quota left,
# 2 minutes a day for a visitor not signed in (docs/hosting.md).
START_SECONDS = 10.0
MIN_SECONDS, MAX_SECONDS = 10, int(os.environ.get("LAB_GPU_MAX_SECONDS", "120"))
SECONDS_PER_UNIT = 0.05  # a first guess of a training step on a GPU (MiniLM, batch 16); replaced by measured calls

# The student's one-line note about where their request ran (set when it ran elsewhere than it would have).
note_var: contextvars.ContextVar[str | None] = contextvars.ContextVar("lab_gpu_note", default=None)


def enabled() -> bool:
    return device.on_zero_gpu()


@dataclass
class Served:
    """What the status line says about the GPU: calls made, the last one, and the last fallback to the CPU."""
    calls: int = 0
    fallbacks: int = 0
    last_call_at: float | None = None
    last_call_s: float = 0.0
    last_fallback_at: float | None = None
    last_fallback: str = ""
    rates: dict[str, float] = field(default_factory=dict)  # per kind of work: measured GPU seconds per unit

    def words(self) -> str:
        if not enabled():
            return ""
        line = (f"ZeroGPU: training, attention's cost and the large models run on the GPU ({self.calls} "
                f"call{'s' if self.calls != 1 else ''} so far); everything else on the CPU")
        if self.last_fallback_at is not None and (self.last_call_at is None or self.last_fallback_at > self.last_call_at):
            line += f" · since {time.strftime('%H:%M', time.localtime(self.last_fallback_at))}: {self.last_fallback}"
        return line


SERVED = Served()
_lock = threading.Lock()


def seconds_for(kind: str, units: float) -> int:
    """The duration a call asks ZeroGPU for: computed from the work's size and the speed measured so far."""
    rate = SERVED.rates.get(kind, SECONDS_PER_UNIT)
    return int(min(MAX_SECONDS, max(MIN_SECONDS, START_SECONDS + 2 * rate * units)))


def _measured(kind: str, units: float, seconds: float) -> None:
    with _lock:
        SERVED.calls += 1
        SERVED.last_call_at, SERVED.last_call_s = time.time(), seconds
        rate = max(0.0, seconds - START_SECONDS) / max(units, 1e-9)
        SERVED.rates[kind] = 0.5 * SERVED.rates.get(kind, rate) + 0.5 * rate


def fallback_words(exc: BaseException) -> str:
    """The line a student reads when the GPU call was refused or failed and the CPU did the work."""
    title = str(getattr(exc, "title", "") or "")
    if "quota" in title or "credits" in title or "duration" in title:
        return QUOTA_WORDS
    return NO_GPU_WORDS


def _fell_back(kind: str, exc: BaseException) -> str:
    words = fallback_words(exc)
    with _lock:
        SERVED.fallbacks += 1
        SERVED.last_fallback_at, SERVED.last_fallback = time.time(), words
        if "worker" in str(getattr(exc, "title", "")):  # aborted, maybe for outrunning its duration: ask for more
            SERVED.rates[kind] = 2 * SERVED.rates.get(kind, SECONDS_PER_UNIT)
    log.warning("a GPU call was not served (%s: %s); running on the CPU", getattr(exc, "title", type(exc).__name__),
                str(exc)[:200])
    return words


# ---------------------------------------------------------------- inside the worker


_worker_pid: int | None = None


def _enter_worker() -> None:
    """Once per worker process: GNU OpenMP hangs in a forked child whose parent had started its threads (measured
    here: a MiniLM forward pass never returns), so torch uses one CPU thread (a GPU call's work is on the GPU);
    transformers' seeded collators refuse to run in a process not named MainProcess (they take it for a DataLoader
    worker: ULMFiT's middle stage failed so), and the worker does the app's work, so it takes the app's name; then
    real CUDA for the models (device.enter_gpu_call), and a load lock of the worker's own (models.new_load_lock)."""
    global _worker_pid
    if _worker_pid != os.getpid():
        import multiprocessing

        import torch

        torch.set_num_threads(1)
        multiprocessing.current_process().name = "MainProcess"
        device.enter_gpu_call()
        models.new_load_lock()
        _worker_pid = os.getpid()


def _call_in_gpu(payload: bytes, seconds: int) -> bytes:
    """The decorated function for one result: ("ok", value) or ("error", our own LabError), pickled."""
    _enter_worker()
    fn, args, kwargs = cloudpickle.loads(payload)
    try:
        return cloudpickle.dumps(("ok", fn(*args, **kwargs)))
    except LabError as exc:
        return cloudpickle.dumps(("error", exc))


class StopFile:
    """A job's stop flag in the worker: a file the app creates when nobody follows the job any more (a flag in
    the app's memory is not the worker's after the fork). is_set() as threading.Event has it."""

    def __init__(self, path: str):
        self.path = path

    def is_set(self) -> bool:
        return os.path.exists(self.path)


def _stream_in_gpu(payload: bytes, stop_file: str, seconds: int) -> Iterator[bytes]:
    """The decorated function for a job: each event of work(control), pickled, then ("error", e) for our own."""
    _enter_worker()
    work, to_wire = cloudpickle.loads(payload)
    try:
        for event in work(StopFile(stop_file)):
            yield cloudpickle.dumps(("ok", to_wire(event) if to_wire is not None else event))
    except LabError as exc:
        yield cloudpickle.dumps(("error", exc))


# The functions that run: these two, or what spaces.GPU made of them (install).
_gpu_call: Callable = _call_in_gpu
_gpu_stream: Callable = _stream_in_gpu
_installed = False


def install() -> None:
    """On ZeroGPU: hand the two functions to `spaces.GPU`, whose duration is the call's own `seconds` argument.
    Called by app.py before the app launches; off ZeroGPU it does nothing."""
    global _gpu_call, _gpu_stream, _installed
    if not enabled() or _installed:
        return
    import spaces

    _gpu_call = spaces.GPU(duration=lambda payload, seconds: seconds)(_call_in_gpu)
    _gpu_stream = spaces.GPU(duration=lambda payload, stop_file, seconds: seconds)(_stream_in_gpu)
    _installed = True
    log.info("ZeroGPU: training, attention's cost and the large models run in GPU calls")


def installed() -> bool:
    return _installed


# ---------------------------------------------------------------- in the app


def _unpack(data: bytes):
    what, value = cloudpickle.loads(data)
    if what == "error":
        raise value
    return value


def call(kind: str, fn: Callable, args: tuple = (), kwargs: dict | None = None, *, units: float = 1.0):
    """fn(*args, **kwargs) in a GPU call on ZeroGPU (here, at once, anywhere else, and inside a GPU call already).
    A call ZeroGPU refuses or cannot serve runs here on the CPU; note_var then says so."""
    kwargs = kwargs or {}
    if not _installed or device.in_gpu_call():
        return fn(*args, **kwargs)
    started = time.monotonic()
    try:
        result = _unpack(_gpu_call(cloudpickle.dumps((fn, args, kwargs)), seconds_for(kind, units)))
    except LabError:
        raise
    except Exception as exc:  # spaces' refusals (gr.Error), a worker that died, a result that did not pickle
        note_var.set(_fell_back(kind, exc))
        return fn(*args, **kwargs)
    _measured(kind, units, time.monotonic() - started)
    return result


def stream(kind: str, work: Callable, control: threading.Event, *, units: float = 1.0, to_wire=None,
           from_wire=None, on_served: Callable[[str], None] | None = None) -> Iterator:
    """The events of work(control), computed in a GPU call (a streaming one: each event as it happens). Stop:
    `control` set here becomes the worker's StopFile, so the work ends after its current step with its result,
    as it does here. Refused or lost: the same work runs here on the CPU from its start, and the events the
    followers have already seen are not repeated (the work is a pure function of its settings and seed).
    on_served(words) says where it ran."""
    stop_file = os.path.join(tempfile.gettempdir(), f"lmlab-stop-{uuid.uuid4().hex}")
    done = threading.Event()
    threading.Thread(target=_mirror, args=(control, stop_file, done), daemon=True, name="gpu job stop").start()
    seen, started = 0, time.monotonic()
    try:
        events = _gpu_stream(cloudpickle.dumps((work, to_wire)), stop_file, seconds_for(kind, units))
        for data in events:
            event = _unpack(data)
            if seen == 0 and on_served is not None:
                on_served(GPU_WORDS)
            seen += 1
            yield from_wire(event) if from_wire is not None else event
        _measured(kind, units, time.monotonic() - started)
    except LabError:
        raise
    except Exception as exc:
        words = _fell_back(kind, exc)
        if on_served is not None:
            on_served(words)
        for n, event in enumerate(work(control)):
            if n >= seen:
                yield event
    finally:
        done.set()
        try:
            os.unlink(stop_file)
        except FileNotFoundError:
            pass


def _mirror(control: threading.Event, stop_file: str, done: threading.Event) -> None:
    """The app's stop flag, mirrored into the worker's stop file."""
    while not done.is_set():
        if control.wait(0.25):
            if not done.is_set():
                open(stop_file, "w").close()
            return


# ---------------------------------------------------------------- the larger models (registry.GPU_MODELS)

LARGE_MODEL_UNITS = 150  # a call with a larger model: its load in a fresh worker, then the work (about 30 s first)


def routed(fn: Callable) -> Callable:
    """fn (an endpoint, a handler), which on ZeroGPU runs whole in a GPU call when an argument names a model that
    needs the GPU: the app's process never loads one (models.load refuses it there). Anywhere else, for every
    other argument, and for async functions (which spaces cannot send), fn itself."""
    if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
        return fn
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def streaming(*args, **kwargs):
            if not (_installed and _names_a_gpu_model(args, kwargs)):
                yield from fn(*args, **kwargs)
                return
            work = functools.partial(_without_control, fn, args, kwargs)
            yield from stream("large_model", work, threading.Event(), units=LARGE_MODEL_UNITS)

        return streaming

    @functools.wraps(fn)
    def plain(*args, **kwargs):
        if not (_installed and _names_a_gpu_model(args, kwargs)):
            return fn(*args, **kwargs)
        return call("large_model", fn, args, kwargs, units=LARGE_MODEL_UNITS)

    return plain


def _names_a_gpu_model(args: tuple, kwargs: dict) -> bool:
    names = models.gpu_model_names()
    return bool(names) and any(isinstance(v, str) and v in names for v in (*args, *kwargs.values()))


def _without_control(fn: Callable, args: tuple, kwargs: dict, control) -> Iterator:
    """A streaming handler as a GPU job's work: Stop closes its generator (spaces then stops the worker's)."""
    return fn(*args, **kwargs)
