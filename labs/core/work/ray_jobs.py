"""Jobs as Ray tasks (LAB_RAY_ADDRESS set; see labs.core.work.ray_backend).

labs.core.work.jobs keeps everything a student sees in the front-end: identical jobs run once, the queue is
first come, first served, a waiting follower is told its place, leaving a waiting job takes it out of the queue
before it was ever submitted. Only a job's work leaves: when a slot takes the job, `run` submits it as a Ray
task that is a streaming generator (`num_returns="streaming"`), and each event it yields reaches the front-end,
and so every follower, as it happens. The slots become the cluster's capacity (ray_backend.job_slots), and
the tasks run side by side on as many workers as the cluster has.

Stopping: a job nobody follows any more stops after its current step, as it does embedded: its `control`
flag is mirrored into one small actor per front-end (LabJobControl, no CPU, on the front-end's node) that the
task's work asks at most every CONTROL_POLL_S, so a stopped run still ends with its result (where it got to);
a waiting job that is left is never submitted. A task whose node is lost is
retried (max_retries, LAB_RAY_JOB_RETRIES): the work is a pure function of its settings and seed, so the run
starts again and gives the same events; the follower sees the events it had not seen yet. If the retries are
spent too, the follower gets JobLost and can press again.

A kind of job may name how its events cross processes (Jobs.kind(to_wire=, from_wire=)): a fine-tune's last
event carries its trained weights back to the front-end, where "try your model" finds them
(labs.finetune.shared_runs.ship_kept / receive_kept)."""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from dataclasses import dataclass

from labs.core.errors import LabError
from labs.core.work import ray_backend

log = logging.getLogger(__name__)

CONTROL_POLL_S = 0.5
CONTROL_ACTOR = "lmlab_job_control"


class JobLost(LabError):
    """The machine running this job went away and the job could not be run again."""


LOST = ("The machine running this job went away and it could not be restarted. Press the button again: "
        "your run starts afresh with the same settings.")


@dataclass(frozen=True)
class Started:
    """The first thing a job's task yields: where it runs (tests and the load test read it)."""
    node_id: str
    pid: int
    at: float


class LabJobControl:
    """The stop flags of the running jobs, by token (one small actor for the whole cluster)."""

    def __init__(self):
        self.stopped: set[str] = set()

    def stop(self, token: str) -> None:
        self.stopped.add(token)

    def is_stopped(self, token: str) -> bool:
        return token in self.stopped

    def forget(self, token: str) -> None:
        self.stopped.discard(token)


class RemoteControl:
    """What a job's work reads as its `control` on a worker: is_set() as threading.Event has it."""

    def __init__(self, actor, token: str):
        self.actor, self.token = actor, token
        self._set, self._asked = False, 0.0

    def is_set(self) -> bool:
        import ray

        if not self._set and time.monotonic() - self._asked >= CONTROL_POLL_S:
            self._asked = time.monotonic()
            try:
                self._set = ray.get(self.actor.is_stopped.remote(self.token), timeout=10)
            except ray.exceptions.RayError:  # the flags are being restarted: the run goes on, asks again later
                log.warning("a job's stop flag could not be read; asking again in %s s", CONTROL_POLL_S)
        return self._set


def work_task(work, actor, token: str, to_wire):
    """The body of a job's Ray task: where it runs, then every event of `work(control)`."""
    import ray

    yield Started(ray.get_runtime_context().get_node_id(), os.getpid(), time.time())
    for event in work(RemoteControl(actor, token)):
        yield to_wire(event) if to_wire is not None else event


_remote = None
_actor = None
_lock = threading.Lock()


def _task_and_actor():
    global _remote, _actor
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    with _lock:
        if _remote is None:
            ray = ray_backend.connect()
            retries = int(os.environ.get("LAB_RAY_JOB_RETRIES", "3"))
            _remote = ray.remote(num_returns="streaming", max_retries=retries, retry_exceptions=False)(work_task)
            # On this front-end's own node: it lives and dies with the jobs it stops, never with a worker node.
            here = ray.get_runtime_context().get_node_id()
            _actor = ray.remote(LabJobControl).options(
                name=f"{CONTROL_ACTOR}_{here[:16]}", get_if_exists=True, num_cpus=0, max_restarts=-1,
                scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=True)).remote()
        return _remote, _actor


def _mirror(control: threading.Event, actor, token: str, done: threading.Event) -> None:
    """The front-end's stop flag, mirrored into the control actor."""
    while not done.is_set():
        if control.wait(CONTROL_POLL_S / 2):
            actor.stop.remote(token)
            return


def events(job, to_wire=None, from_wire=None):
    """A labs.core.work.jobs Job's events from its Ray task; job.where says where it runs."""
    return run(job.work, job.control, to_wire, from_wire, lambda where: setattr(job, "where", where))


def run(work, control: threading.Event, to_wire=None, from_wire=None, on_start=None):
    """The events of `work(control)`, computed by a Ray task and yielded here as they happen."""
    import ray
    from ray.exceptions import RayTaskError, TaskCancelledError

    remote, actor = _task_and_actor()
    token = uuid.uuid4().hex
    done = threading.Event()
    stream = remote.options(**ray_backend.job_options()).remote(work, actor, token, to_wire)
    threading.Thread(target=_mirror, args=(control, actor, token, done), daemon=True, name="job stop").start()
    try:
        for ref in stream:
            try:
                event = ray.get(ref)
            except RayTaskError as exc:  # the job's own exception (a BadInput's message), raised as it was
                cause = getattr(exc, "cause", None)
                raise (cause if isinstance(cause, Exception) else exc) from None
            except (TaskCancelledError, ray.exceptions.RayError) as exc:
                log.warning("a job's task was lost: %s", exc)
                raise JobLost(LOST) from None
            if isinstance(event, Started):
                if on_start is not None:
                    on_start(event)
                continue
            yield from_wire(event) if from_wire is not None else event
    finally:
        done.set()
        actor.forget.remote(token)
