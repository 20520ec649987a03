"""ZeroGPU on a machine without a GPU, for the tests: the `spaces` package's own code, with the one service it
talks to played here.

On a ZeroGPU Space, `spaces` (spaces/zero/) asks the Space's device API for a GPU before each decorated call
(POST /schedule: a GPU, or 429 with the visitor's quota, or 503), lets the forked worker use it (/allow), and
gives it back (/release); it reports the decorated functions at start (/startup-report). `DeviceAPI` answers
those four requests as the service does, and a test sets what /schedule answers (`mode`): a GPU, the quota
used up, a duration past the maximum, or no GPU free. Everything else is spaces' real code: the torch patching
in the app's process, the fork, the pickling, the client and its errors. `python -m tests.zerogpu_emulator
app.py` starts the app that way; the two steps that need an NVIDIA device (spaces.zero.torch.init and .move)
are skipped, so a call's work runs on the worker's CPU. A SIGTERM ends the app and the GPU workers spaces forked."""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.connection
import os
import runpy
import signal
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

MODES = ("gpu", "quota", "illegal_duration", "no_gpu")


class DeviceAPI:
    """The Space's ZeroGPU device API on 127.0.0.1: what spaces.zero.api.APIClient calls."""

    def __init__(self):
        self.mode = "gpu"
        self.schedules: list[dict] = []  # every /schedule's parameters (taskId, durationSeconds, ...)
        self.allowed: list[int] = []  # the worker pids /allow was told of
        self.released: list[dict] = []
        self.started = threading.Event()  # /startup-report came
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                url = urlparse(self.path)
                params = {k: v[0] for k, v in parse_qs(url.query).items()}
                if url.path == "/startup-report":
                    api.started.set()
                    return self.reply(200, {})
                if url.path == "/schedule":
                    api.schedules.append(params)
                    return self.schedule()
                if url.path == "/allow":
                    api.allowed.append(int(params["pid"]))
                    return self.reply(200, {})
                if url.path == "/release":
                    api.released.append(params)
                    return self.reply(200, {})
                return self.reply(404, {"detail": "not found"})

            def schedule(self):
                if api.mode == "gpu":  # a GPU; idle: the last worker may be used again (spaces keeps it alive)
                    return self.reply(200, {"idle": len(api.schedules) > 1, "nvidiaIndex": 0,
                                            "nvidiaUUID": "GPU-emulated", "allowToken": uuid.uuid4().hex})
                if api.mode == "quota":
                    return self.reply(429, {"left": 0, "wait": 3600}, {"X-Approve-Result": "quota-exceeded"})
                if api.mode == "illegal_duration":
                    return self.reply(429, {"left": 0, "wait": -1}, {"X-Approve-Result": "illegal-duration"})
                return self.reply(503, {"detail": "no GPU"})

            def reply(self, status: int, body: dict, headers: dict | None = None):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True, name="zerogpu device api").start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def env(self) -> dict[str, str]:
        """What a ZeroGPU Space sets for the app."""
        return {"SPACES_ZERO_GPU": "true", "SPACES_ZERO_DEVICE_API_URL": self.url, "SPACE_ID": "lecturer/lm-lab"}

    def close(self) -> None:
        self.server.shutdown()


def _never_in_bad_fork() -> bool:
    return False


def _stop_with_workers(signum, frame) -> None:
    """SIGTERM: spaces forks its GPU workers (one per decorated function, kept for the next call) as daemon
    processes, which a process ended by a signal leaves behind: orphans that never see the app go, each holding
    both ends of its own queue. The signal goes on to them (spaces' worker then closes its queue and ends), what
    has not ended after 5 s is killed, and this process ends as SIGTERM ends it (no exit handlers, as before)."""
    pending = {worker.sentinel: worker for worker in multiprocessing.active_children()}
    for worker in pending.values():
        worker.terminate()
    deadline = time.monotonic() + 5
    while pending and (left := deadline - time.monotonic()) > 0:
        for ended in multiprocessing.connection.wait(list(pending), timeout=left):
            del pending[ended]
    for worker in pending.values():
        worker.kill()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def run_as_on_zero_gpu(script: str) -> None:
    """Run `script` (app.py) with spaces' ZeroGPU code, skipping only what needs an NVIDIA device."""
    import torch

    if torch.version.cuda is None:  # this machine's CPU build; a Space installs PyPI's CUDA build of the same torch,
        torch.version.cuda = "12.8"  # whose version spaces reads to fake its memory statistics
        torch._C._cuda_init = lambda: None  # and whose CUDA start spaces keeps, to put it back in the worker;
        torch.cuda._is_in_bad_fork = _never_in_bad_fork  # spaces asks it in a process pool (a lambda here)
    import spaces.zero.torch as zero_torch  # with SPACES_ZERO_GPU set, this import patches torch as on a Space

    zero_torch.init = lambda nvidia_uuid: None  # CUDA_VISIBLE_DEVICES and a first CUDA tensor
    zero_torch.move = lambda callback=None: None  # the packed tensors to the GPU
    signal.signal(signal.SIGTERM, _stop_with_workers)
    sys.argv = [script]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    run_as_on_zero_gpu(sys.argv[1] if len(sys.argv) > 1 else "app.py")
