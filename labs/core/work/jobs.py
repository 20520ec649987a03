"""Long jobs beside the batched passes (a fine-tune run, the strategy comparison, a curve): identical ones run once
and are joined live or kept; the others queue first come, first served for LAB_JOB_SLOTS slots.

A job is a pure function of its settings (the seed is one of them), so it is keyed by everything that
determines its result, and:
- identical jobs run once: a student who asks while it runs *joins* it and sees the same live progress
  (every event so far, then each new one); one who asks after it finished gets the kept result at once
  (a bounded store; events and results are shared read-only);
- different jobs wait in one first-come, first-served queue for a fixed number of slots (one on a
  2-core server; LAB_JOB_SLOTS on a bigger machine or a GPU). While waiting, a follower is told its
  place and an estimate from the run times measured so far (`Queued`);
- a student (a browser session, or an API client's session) has at most one job waiting: asking again
  replaces it. Leaving (Stop, a closed page) detaches that student only; a waiting job nobody follows
  leaves the queue at once, a running one stops after its current step.

A job's work is a generator of events, `work(control)`; `control` is a threading.Event that is set when
nobody follows the job any more (the work stops at its next step). `shared()` is the short form for a
job that is a single call built on the batched passes (a curve): deduplicated and kept, never queued
behind a fine-tune (its passes already share the CPU with everyone else's requests).

No gradio here: the labs' handlers and API functions follow a `Ticket` (for ... in / async for ...)."""

from __future__ import annotations

import contextvars
import functools
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

import cachetools

from labs.core.models import device
from labs.core.work import batching, ray_backend, ray_jobs, zerogpu
from labs.core.work.tickets import LEFT, REPLACED, Job, JobGone, Queued, Ticket, format_seconds  # noqa: F401

log = logging.getLogger(__name__)

STORE_SIZE = 64  # finished jobs kept (their events: a run's steps and results, a few KB each)
# The student a job is asked for: set by the Gradio side (the session), read when a job is submitted.
owner_var: contextvars.ContextVar[str | None] = contextvars.ContextVar("lab_job_owner", default=None)


class Jobs:
    def __init__(self, slots: int = 1, store_size: int = STORE_SIZE, cluster_slots: bool = False):
        self.slots, self.store_size = max(1, slots), store_size
        self.cluster_slots, self._wire = cluster_slots, {}  # with Ray: the cluster's slots; (to_wire, from_wire)
        self._changed = threading.Condition()  # guards everything below; notified on every change
        self._queue: deque[Job] = deque()
        self._running: list[Job] = []
        self._ready: deque[Job] = deque()  # running, not yet picked up by a slot's thread
        self._in_flight: dict[Any, Job] = {}  # waiting or running, and joinable
        self._store = cachetools.LRUCache(store_size)  # finished jobs, by key: the least recently asked for leave
        self._valid: dict[str, Callable] = {}  # per kind: is a kept result still usable? (its model kept)
        self._rate: dict[str, float] = {}  # per kind: measured seconds per unit of work
        self._gpu: set[str] = set()  # the kinds a GPU speeds up: in GPU calls on ZeroGPU (labs.core.work.zerogpu)
        self._workers = 0
        self._shared: dict[Any, Future] = {}
        self.stats = {"runs": 0, "joined": 0, "from_store": 0, "replaced": 0, "cancelled": 0}

    # ------------------------------------------------------------------ asking for a job

    def kind(self, kind: str, *, seconds_per_unit: float, still_valid: Callable | None = None,
             to_wire: Callable | None = None, from_wire: Callable | None = None, gpu: bool = False) -> None:
        """Declare a kind of job: a first estimate of its speed (replaced by measured runs) and, if its
        results hold something that can be freed (a trained model), how to tell they are still whole (with Ray
        or ZeroGPU: to_wire there and from_wire here carry it from the worker, see ray_jobs). gpu: a GPU speeds it
        up (training): on ZeroGPU it runs in a GPU call."""
        self._rate.setdefault(kind, seconds_per_unit)
        self._wire[kind] = (to_wire, from_wire)
        if gpu:
            self._gpu.add(kind)
        if still_valid is not None:
            self._valid[kind] = still_valid

    def submit(self, kind: str, key, work: Callable[[threading.Event], Iterator], units: float = 1.0,
               owner: str | None = None, replace_running: bool = False) -> Ticket:
        """Follow the job `key`: the kept result, the identical job in flight, or a new job at the back
        of the queue. `owner` (default: the session in owner_var) has at most one waiting job: an earlier
        one is replaced (ticket.replaced says so). replace_running (a page, which shows one run of a kind
        at a time): the owner also leaves the running jobs of this kind it followed."""
        owner = owner if owner is not None else owner_var.get()
        key = (kind, key)
        with self._changed:
            kept = self._store.get(key)
            if kept is not None and self._valid.get(kind, lambda events: True)(kept.events):
                self.stats["from_store"] += 1
                return self._follow(kept, owner, joined=False, from_store=True)
            job = self._in_flight.get(key)
            joined = job is not None
            if job is None:
                job = self._in_flight[key] = Job(kind, key, work, units)
                self._queue.append(job)
                self._dispatch()
            else:
                self.stats["joined"] += 1
            ticket = self._follow(job, owner, joined=joined, from_store=False)
            if owner is not None:  # one waiting job per student: the newest request replaces the others
                running = [j for j in self._running if j.kind == kind] if replace_running else []
                for other in [t for j in list(self._queue) + running for t in j.followers if t.owner == owner
                              and t is not ticket and (replace_running or t.job is not job)]:
                    ticket.replaced = ticket.replaced or (other.job.state == Job.WAITING and other.job is not job)
                    other.replaced_by = kind
                    self.stats["replaced"] += 1
                    self._leave_locked(other)
            self._changed.notify_all()
            return ticket

    def _follow(self, job: Job, owner, joined: bool, from_store: bool) -> Ticket:
        ticket = Ticket(self, job, owner, joined, from_store)
        if not job.over:
            job.followers.add(ticket)
        return ticket

    def stop_owner(self, owner: str) -> str | None:
        """Stop for this student: a job they alone follow and that runs stops after its current step (they
        follow it to its end and see where it got to); any other job of theirs just loses them (a
        waiting one nobody else waits for leaves the queue). Returns "stopping", "left" or None."""
        with self._changed:
            tickets = [t for j in list(self._queue) + self._running for t in j.followers if t.owner == owner]
            outcome = None
            for ticket in tickets:
                job = ticket.job
                if job.state == Job.RUNNING and job.followers == {ticket}:
                    self._stop_locked(job)
                    outcome = "stopping"
                else:
                    self._leave_locked(ticket)
                    outcome = outcome or "left"
            return outcome

    def _leave(self, ticket: Ticket) -> None:
        with self._changed:
            self._leave_locked(ticket)

    def _leave_locked(self, ticket: Ticket) -> None:
        if ticket.left:
            return
        ticket.left = True
        job = ticket.job
        job.followers.discard(ticket)
        ticket._wake()
        if job.followers or job.over:
            return
        if job.state == Job.WAITING:  # nobody waits for it: it leaves the queue, its slot is never taken
            self._queue.remove(job)
            job.state, job.finished = Job.CANCELLED, time.monotonic()
            self.stats["cancelled"] += 1
            if self._in_flight.get(job.key) is job:
                del self._in_flight[job.key]
        else:  # running, nobody follows: it stops after its current step, and is not kept
            self._stop_locked(job)
        self._changed.notify_all()
        self._wake_waiting()

    def _stop_locked(self, job: Job) -> None:
        """A running job stops after its current step; a new identical request starts afresh."""
        job.control.set()
        if self._in_flight.get(job.key) is job:
            del self._in_flight[job.key]

    # ------------------------------------------------------------------ the queue

    def _place(self, job: Job) -> Queued:
        """Under the lock: the jobs before this one and when it should start (the slots free up as the
        running jobs' measured estimates say; each job ahead then takes the first free slot)."""
        free_at = sorted(max(1.0, self._estimate(j) - j.elapsed()) for j in self._running)
        free_at += [0.0] * (self._capacity() - len(free_at))
        ahead = len(self._running)
        for other in self._queue:
            if other is job:
                break
            ahead += 1
            soonest = free_at.pop(0)
            free_at = sorted(free_at + [soonest + self._estimate(other)])
        return Queued(ahead, free_at[0])

    def _estimate(self, job: Job) -> float:
        return self._rate.get(job.kind, 10.0) * job.units

    def _dispatch(self) -> None:
        """Under the lock: the first waiting jobs take the free slots (at once, so that a job is "waiting"
        only while every slot is busy)."""
        while self._queue and len(self._running) < self._capacity():
            job = self._queue.popleft()
            job.state, job.started = Job.RUNNING, time.monotonic()
            self._running.append(job)
            self._ready.append(job)
            self.stats["runs"] += 1
            if self._workers < self._capacity():
                self._workers += 1
                threading.Thread(target=self._work, name=f"job slot {self._workers}", daemon=True).start()
            self._wake_waiting()
        self._changed.notify_all()

    def _work(self) -> None:
        batching.lower_priority()  # a training run yields to the requests a class is waiting on, as a batch does
        while True:
            with self._changed:
                while not self._ready:
                    self._changed.wait()
                job = self._ready.popleft()
            self._run(job)

    def _capacity(self) -> int:  # with Ray and cluster_slots: as many as the cluster holds (asked once)
        if self.cluster_slots and ray_backend.enabled():
            self.slots, self.cluster_slots = ray_backend.job_slots(), False
        return self.slots

    def _run(self, job: Job) -> None:
        error = None
        try:  # the work runs here, as a Ray task when LAB_RAY_ADDRESS is set, or in a GPU call on ZeroGPU
            work = ray_jobs.events(job, *self._wire.get(job.kind, (None, None))) if ray_backend.enabled() else \
                self._in_gpu_call(job) if zerogpu.installed() and job.kind in self._gpu else None
            for event in work or job.work(job.control):
                with self._changed:
                    job.events.append(event)
                    self._changed.notify_all()
                for ticket in list(job.followers):
                    ticket._wake()
        except Exception as exc:  # the job's own failure reaches each follower
            error = exc
            log.info("job %s failed: %s", job.kind, exc)
        with self._changed:
            job.finished = time.monotonic()
            self._running.remove(job)
            job.error = error
            job.state = Job.FAILED if error else Job.STOPPED if job.control.is_set() else Job.DONE
            if self._in_flight.get(job.key) is job:
                del self._in_flight[job.key]
            if job.state == Job.DONE:
                self._keep(job)
                measured = job.elapsed() / max(job.units, 1e-9)  # the estimate follows the measured runs
                self._rate[job.kind] = 0.5 * self._rate.get(job.kind, measured) + 0.5 * measured
            followers, job.followers = list(job.followers), set()
            self._dispatch()
        for ticket in followers:
            ticket._wake()
        self._wake_waiting()

    def _in_gpu_call(self, job: Job) -> Iterator:
        """The job's events from a ZeroGPU call, run in the context of the student who asked (whose quota pays)."""
        to_wire, from_wire = self._wire.get(job.kind, (None, None))
        events = zerogpu.stream(job.kind, job.work, job.control, units=job.units, to_wire=to_wire,
                                from_wire=from_wire, on_served=lambda words: setattr(job, "served", words))
        while True:
            try:
                yield job.context.run(next, events)
            except StopIteration:
                return

    def _keep(self, job: Job) -> None:
        """Under the lock: a finished job joins the store; the least recently asked for leave it."""
        self._store[job.key] = job

    def _wake_waiting(self) -> None:
        """Waiting followers recompute their place (a job started, finished or left the queue)."""
        for job in list(self._queue) + list(self._running):
            for ticket in list(job.followers):
                ticket._wake()

    # ------------------------------------------------------------------ one call, shared

    def shared(self, kind: str, key, compute: Callable[[], Any], gpu_units: float | None = None):
        """compute() once for identical requests: the kept result, the one in flight, or computed here
        (in the caller's thread: a curve made of batched passes is never queued behind a fine-tune). gpu_units:
        a GPU speeds it up (attention's cost): on ZeroGPU it is computed in a GPU call of that size."""
        if device.in_gpu_call():  # inside a ZeroGPU worker: one student's work, and this Jobs' locks were not forked
            return compute()
        if gpu_units is not None:
            compute = functools.partial(zerogpu.call, kind, compute, units=gpu_units)
        key = (kind, key)
        with self._changed:
            kept = self._store.get(key)
            if kept is not None:
                self.stats["from_store"] += 1
                return kept.events[-1]
            future = self._shared.get(key)
            mine = future is None
            if mine:
                future = self._shared[key] = Future()
            else:
                self.stats["joined"] += 1
        if not mine:
            return future.result()
        try:
            result = compute()
        except BaseException as exc:
            future.set_exception(exc)
            raise
        else:
            future.set_result(result)
            job = Job(kind, key, None, 1)
            job.events, job.state = [result], Job.DONE
            with self._changed:
                self._keep(job)
                self.stats["runs"] += 1
            return result
        finally:
            with self._changed:
                self._shared.pop(key, None)

    # ------------------------------------------------------------------ for tests and the status line

    def waiting(self) -> int:
        with self._changed:
            return len(self._queue)

    def running(self) -> int:
        with self._changed:
            return len(self._running)

    def clear(self) -> None:
        """Forget every kept result (tests)."""
        with self._changed:
            self._store.clear()


def slots_from_env() -> int:
    """LAB_JOB_SLOTS: how many jobs run at once (1 on a 2-core server: two runs would share the cores and
    each take twice as long; more on a machine with more cores or a GPU)."""
    try:
        return max(1, int(os.environ.get("LAB_JOB_SLOTS", "1")))
    except ValueError:
        log.warning("LAB_JOB_SLOTS must be a whole number; using 1")
        return 1


JOBS = Jobs(slots_from_env(), cluster_slots=True)
