"""A job and the students who follow it (labs.core.work.jobs runs the jobs): `Job`, `Ticket`, `Queued` and
`JobGone`. A `Job` holds its work, state and events; a `Ticket` per student is iterated for the places in the queue
while the job waits (`Queued`), then for the job's events from its first; `JobGone` when the student left it."""

from __future__ import annotations

import asyncio
import contextvars
import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from labs.core.errors import LabError

QUEUE_REFRESH_S = 5.0  # a waiting follower's estimate is refreshed at least this often


@dataclass(frozen=True)
class Queued:
    """A waiting job's place: `ahead` jobs run or wait before it; it should start in about `eta_s` s."""
    ahead: int
    eta_s: float

    def words(self) -> str:
        runs = "run" if self.ahead == 1 else "runs"
        return f"{self.ahead} {runs} ahead of yours, about {format_seconds(self.eta_s)}"

    def to_json(self) -> dict:
        return {"status": "queued", "ahead": self.ahead, "eta_s": round(self.eta_s, 1)}


def format_seconds(seconds: float) -> str:
    seconds = max(1, round(seconds))
    return f"{seconds} s" if seconds < 90 else f"{math.ceil(seconds / 60)} min"


class JobGone(LabError):
    """This follower left the job (Stop, or asked for another job while this one waited)."""


REPLACED = "Replaced by your newer request: one waiting job per student. Wait for a result before asking again."
LEFT = "You left this job (Stop)."


class Job:
    WAITING, RUNNING, DONE, FAILED, STOPPED, CANCELLED = "waiting", "running", "done", "failed", "stopped", "cancelled"

    def __init__(self, kind: str, key, work: Callable, units: float):
        self.kind, self.key, self.work, self.units = kind, key, work, units
        self.state = Job.WAITING
        self.events: list = []
        self.error: BaseException | None = None
        self.control = threading.Event()  # set: nobody follows any more, stop after the current step
        self.followers: set[Ticket] = set()
        self.started = self.finished = None
        self.asked = time.monotonic()
        self.served = ""  # where it ran, when that is worth a line (ZeroGPU: on the GPU, or why on the CPU)
        # The asker's context: on ZeroGPU the GPU call is billed to the student who started the job.
        self.context = contextvars.copy_context()

    @property
    def over(self) -> bool:
        return self.state in (Job.DONE, Job.FAILED, Job.STOPPED, Job.CANCELLED)

    def elapsed(self) -> float:
        return 0.0 if self.started is None else (self.finished or time.monotonic()) - self.started


class Ticket:
    """One student following one job. Iterate it (sync or async) for `Queued` places while the job
    waits, then the job's events from its first; it ends after the last event, raises the job's error,
    or raises JobGone if the student left."""

    def __init__(self, jobs, job: Job, owner: str | None, joined: bool, from_store: bool):  # jobs: its Jobs
        self.jobs, self.job, self.owner = jobs, job, owner
        self.joined, self.from_store = joined, from_store  # joined a job in flight / got a kept result
        self.replaced = False  # this request replaced the same student's earlier waiting job
        self.replaced_by: str | None = None  # left because the student asked for another job (of this kind)
        self.left = False
        self.cursor = 0
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    @property
    def behind(self) -> bool:
        """More events are already there: the follower is catching up (no need to draw each one)."""
        return self.cursor < len(self.job.events)

    def leave(self) -> None:
        """This student stops following (Stop, a closed page, a newer request). Idempotent."""
        self.jobs._leave(self)

    def _wake(self) -> None:
        for loop, event in list(self._waiters):
            loop.call_soon_threadsafe(event.set)

    def _next(self, last_place: Queued | None):
        """Under the lock: ("event", e) / ("place", Queued) / ("end", None) / ("wait", None)."""
        job = self.job
        if self.left:
            raise JobGone(REPLACED if self.replaced_by else LEFT)
        if self.cursor < len(job.events):
            self.cursor += 1
            return "event", job.events[self.cursor - 1]
        if job.over:
            if job.error is not None:
                raise job.error
            return "end", None
        if job.state == Job.WAITING:
            place = self.jobs._place(job)
            if last_place is None or place.ahead != last_place.ahead or abs(place.eta_s - last_place.eta_s) >= 2:
                return "place", place
        return "wait", None

    def __iter__(self) -> Iterator:
        last = None
        try:
            while True:
                with self.jobs._changed:
                    what, value = self._next(last)
                    if what == "wait":
                        self.jobs._changed.wait(QUEUE_REFRESH_S)
                        continue
                if what == "end":
                    return
                if what == "place":
                    last = value
                yield value
        finally:
            self.leave()

    async def __aiter__(self):
        loop, event = asyncio.get_running_loop(), asyncio.Event()
        with self.jobs._changed:
            self._waiters.append((loop, event))
        last = None
        try:
            while True:
                with self.jobs._changed:
                    event.clear()
                    what, value = self._next(last)
                if what == "wait":
                    try:
                        await asyncio.wait_for(event.wait(), QUEUE_REFRESH_S)
                    except asyncio.TimeoutError:
                        pass
                    continue
                if what == "end":
                    return
                if what == "place":
                    last = value
                yield value
        finally:  # a closed page cancels this generator: the student leaves the job
            self.leave()
