"""labs.core.work.jobs: identical jobs run once and are joined live or served from the store; different jobs queue
first come, first served with their place shown; one waiting job per student; leaving, stopping,
failures. Fake jobs (generators gated by events) make every interleaving deterministic."""

from __future__ import annotations

import asyncio
import threading

import pytest
from conftest import run_async

from labs.core.work.jobs import Job, JobGone, Jobs, Queued


class Gate:
    """A job's work: yields `steps` numbered events, each after the test opens the gate; counts its runs."""

    def __init__(self, steps: int = 3, fail_at: int | None = None):
        self.steps, self.fail_at = steps, fail_at
        self.runs, self.stopped_at = 0, None
        self.go = threading.Semaphore(0)
        self.started = threading.Event()

    def __call__(self, control):
        self.runs += 1
        self.started.set()
        for i in range(self.steps):
            assert self.go.acquire(timeout=10), "the test never opened the gate"
            if control.is_set():
                self.stopped_at = i
                return
            if i == self.fail_at:
                raise ValueError("the job's own failure")
            yield i

    def open(self, n: int | None = None) -> None:
        for _ in range(n or self.steps):
            self.go.release()


def collect(ticket, into: list) -> threading.Thread:
    def follow():
        try:
            into.extend(ticket)
        except Exception as exc:  # recorded for the test
            into.append(exc)
    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    return thread


def wait_until(condition, timeout: float = 10.0) -> None:
    done = threading.Event()
    for _ in range(int(timeout / 0.01)):
        if condition():
            return
        done.wait(0.01)
    raise AssertionError("condition never held")


def events(items: list) -> list:
    return [e for e in items if not isinstance(e, Queued)]


def test_identical_jobs_run_once_and_a_late_joiner_sees_every_event():
    jobs, work = Jobs(1), Gate()
    first, second = [], []
    t1 = collect(jobs.submit("k", "same", work), first)
    work.started.wait(5)
    work.open(1)
    wait_until(lambda: first == [0])
    joiner = jobs.submit("k", "same", work)
    assert joiner.joined and not joiner.from_store
    t2 = collect(joiner, second)
    work.open(2)
    t1.join(5), t2.join(5)
    assert first == second == [0, 1, 2] and work.runs == 1
    later = jobs.submit("k", "same", work)
    assert later.from_store and list(later) == [0, 1, 2] and work.runs == 1


def test_different_jobs_wait_in_order_with_their_place_and_an_estimate():
    jobs = Jobs(1)
    jobs.kind("k", seconds_per_unit=2.0)
    works = [Gate(1) for _ in range(3)]
    seen = [[], [], []]
    threads = [collect(jobs.submit("k", i, works[i], units=5), seen[i]) for i in range(3)]
    works[0].started.wait(5)
    wait_until(lambda: seen[1] and seen[2])
    assert seen[1][0].ahead == 1 and seen[2][0].ahead == 2
    assert 0 < seen[1][0].eta_s <= 10 and seen[2][0].eta_s == pytest.approx(seen[1][0].eta_s + 10, abs=1)
    assert seen[1][0].to_json() == {"status": "queued", "ahead": 1, "eta_s": round(seen[1][0].eta_s, 1)}
    works[0].open()
    wait_until(lambda: isinstance(seen[2][-1], Queued) and seen[2][-1].ahead == 1)  # moved up a place
    assert works[1].started.is_set() and not works[2].started.is_set()
    works[1].open(), works[2].open()
    for t in threads:
        t.join(5)
    assert [events(s) for s in seen] == [[0], [0], [0]] and all(w.runs == 1 for w in works)


def test_a_student_has_one_waiting_job_a_new_request_replaces_it():
    jobs = Jobs(1)
    running, old, new = Gate(1), Gate(1), Gate(1)
    first = jobs.submit("k", "a", running, owner="ann")
    running.started.wait(5)
    replaced = jobs.submit("k", "b", old, owner="ann")
    newest = jobs.submit("k", "c", new, owner="ann")
    assert newest.replaced and not replaced.replaced
    with pytest.raises(JobGone):
        list(replaced)
    assert jobs.waiting() == 1  # "b" left the queue: nobody else waited for it
    running.open(), new.open()
    assert list(first) == [0] and events(list(newest)) == [0]
    assert old.runs == 0


def test_replacing_keeps_a_job_another_student_waits_for():
    jobs = Jobs(1)
    running, shared = Gate(1), Gate(1)
    jobs.submit("k", "a", running, owner="ann")
    running.started.wait(5)
    mine = jobs.submit("k", "b", shared, owner="ann")
    bob = jobs.submit("k", "b", shared, owner="bob")
    jobs.submit("k", "c", Gate(1), owner="ann")
    with pytest.raises(JobGone):
        list(mine)
    running.open(), shared.open()
    assert events(list(bob)) == [0] and shared.runs == 1


def test_leaving_a_shared_run_keeps_it_for_the_others_the_last_one_out_stops_it():
    jobs, work = Jobs(1), Gate(5)
    ann, bob = jobs.submit("k", "x", work, owner="ann"), jobs.submit("k", "x", work, owner="bob")
    work.started.wait(5)
    work.open(1)
    ann.leave()
    with pytest.raises(JobGone):
        list(ann)
    bob_seen = []
    thread = collect(bob, bob_seen)
    work.open(1)
    wait_until(lambda: len(bob_seen) == 2)
    bob.leave()  # nobody follows any more: the run stops after its current step and is not kept
    work.open(3)
    thread.join(5)
    wait_until(lambda: work.stopped_at is not None)
    assert jobs.running() == 0
    again = jobs.submit("k", "x", work)
    assert not again.from_store and not again.joined  # a fresh run
    work.open(5)
    assert events(list(again)) == [0, 1, 2, 3, 4] and work.runs == 2


def test_stop_from_the_only_follower_ends_the_run_and_they_see_where_it_got_to():
    jobs, work = Jobs(1), Gate(5)
    ticket = jobs.submit("k", "x", work, owner="ann")
    work.started.wait(5)
    work.open(2)
    wait_until(lambda: len(ticket.job.events) == 2)
    assert jobs.stop_owner("ann") == "stopping"
    work.open(3)
    assert list(ticket) == [0, 1] and ticket.job.state == Job.STOPPED
    assert not jobs.submit("k", "x", Gate(1)).from_store


def test_a_waiting_job_left_by_its_only_follower_frees_the_queue_at_once():
    jobs = Jobs(1)
    running, waiting, after = Gate(1), Gate(1), Gate(1)
    jobs.submit("k", "a", running, owner="ann")
    running.started.wait(5)
    left = jobs.submit("k", "b", waiting, owner="bob")
    last = jobs.submit("k", "c", after, owner="cy")
    assert jobs.stop_owner("bob") == "left" and jobs.waiting() == 1
    following = iter(last)  # (a follower that stops iterating leaves the job)
    assert next(following).ahead == 1  # only the running job is ahead now
    running.open(), after.open()
    assert events(list(following)) == [0]
    assert waiting.runs == 0 and left.job.state == Job.CANCELLED


def test_a_failure_reaches_every_follower_and_is_not_kept():
    jobs, work = Jobs(1), Gate(3, fail_at=1)
    a, b = jobs.submit("k", "x", work), jobs.submit("k", "x", work)
    work.open()
    for ticket in (a, b):
        with pytest.raises(ValueError, match="own failure"):
            list(ticket)
    assert not jobs.submit("k", "x", Gate(1)).from_store


def test_async_followers_see_the_same_events():
    jobs, work = Jobs(1), Gate(3)

    async def follow():
        return [e async for e in jobs.submit("k", "x", work)]

    async def both():
        tasks = [asyncio.create_task(follow()) for _ in range(2)]
        await asyncio.sleep(0.05)
        work.open()
        return await asyncio.gather(*tasks)

    assert run_async(both()) == [[0, 1, 2], [0, 1, 2]] and work.runs == 1


def test_a_closed_page_cancels_its_waiting_job():
    jobs = Jobs(1)
    running, waiting = Gate(1), Gate(1)
    jobs.submit("k", "a", running)
    running.started.wait(5)

    async def page():
        async for _ in jobs.submit("k", "b", waiting):
            raise asyncio.CancelledError  # the page closes while its job waits

    with pytest.raises(asyncio.CancelledError):
        run_async(page())
    assert jobs.waiting() == 0
    running.open()


def test_a_kept_result_that_is_no_longer_whole_runs_again():
    jobs, work = Jobs(1), Gate(1)
    whole = {"yes": True}
    jobs.kind("k", seconds_per_unit=1, still_valid=lambda events: whole["yes"])
    work.open(2)
    assert list(jobs.submit("k", "x", work)) == [0]
    whole["yes"] = False  # e.g. the trained model was freed
    assert not jobs.submit("k", "x", work).from_store
    wait_until(lambda: work.runs == 2)


def test_shared_calls_compute_once_and_keep_the_result():
    jobs, calls, gate = Jobs(1), [], threading.Event()

    def compute():
        calls.append(1)
        gate.wait(5)
        return {"value": 42}

    results = []
    threads = [threading.Thread(target=lambda: results.append(jobs.shared("curve", ("m", 1), compute)))
               for _ in range(5)]
    for t in threads:
        t.start()
    wait_until(lambda: calls)
    gate.set()
    for t in threads:
        t.join(5)
    assert results == [{"value": 42}] * 5 and len(calls) == 1
    assert jobs.shared("curve", ("m", 1), compute) == {"value": 42} and len(calls) == 1
    with pytest.raises(ZeroDivisionError):
        jobs.shared("curve", ("m", 2), lambda: 1 / 0)


def test_a_page_pressing_again_follows_the_new_run_and_the_same_settings_keep_theirs():
    jobs = Jobs(1)
    first, second = Gate(5), Gate(1)
    old = jobs.submit("k", "a", first, owner="ann", replace_running=True)
    first.started.wait(5)
    same = jobs.submit("k", "a", first, owner="ann", replace_running=True)  # the same settings: still one run
    assert same.job is old.job and old.left and not same.left and not old.job.control.is_set()
    new = jobs.submit("k", "b", second, owner="ann", replace_running=True)
    assert same.replaced_by == "k" and not new.replaced  # the run it left was running, not waiting
    first.open()  # nobody follows "a" any more: it stops after its current step and frees the slot
    second.open()
    assert events(list(new)) == [0]
    assert first.stopped_at is not None and first.runs == 1
    api = jobs.submit("k", "c", Gate(1), owner="ann")  # an API client (no replace_running) keeps its running job
    assert not api.replaced
