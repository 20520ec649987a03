"""Micro-batching: requests for the same model and pass that arrive together run as one padded
forward pass, whether they come from a student's click or an API call.

On a 2-core server, running requests in parallel threads does not help (torch already uses both
cores); one forward pass over a padded batch does. A Batcher has one worker thread. While it runs
a batch, new requests queue; when it finishes, it takes everything that has queued (up to a size
and token budget) as the next batch. A request alone never waits for company.

Identical requests in flight share one result, and every result goes into a size-bounded cache,
so the example on every student's screen costs one forward pass.

The three rules every batched path follows are written once, here, and used by the embedded Batcher,
the Ray Serve replicas (labs.core.work.ray_passes) and streaming generation (labs.next_token.streaming):
- where a queue is cut into batches: `batch_size` / `cut`;
- identical requests in flight share one computation: `InFlight` (the claim);
- a batch that fails runs again one item at a time, so a failure belongs to its own request:
  `run_alone_on_failure`."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Callable

import cachetools
import numpy as np

log = logging.getLogger(__name__)


# ---------------------------------------------------------------- the rules, written once


def batch_size(costs: Iterable[int], max_batch: int, max_cost: int) -> int:
    """How many requests from the front of a queue (their costs, in order) form the next batch: the first
    always (a request over the budget runs alone), then each next one while the batch has fewer than
    max_batch requests and their total cost stays within max_cost."""
    n = total = 0
    for cost in costs:
        if n and (n >= max_batch or total + cost > max_cost):
            break
        n += 1
        total += cost
    return n


def cut(costs: list[int], max_batch: int, max_cost: int) -> list[list[int]]:
    """The indices of a whole queue in consecutive batches, each cut by `batch_size`."""
    batches, start = [], 0
    while start < len(costs):
        n = batch_size(costs[start:], max_batch, max_cost)
        batches.append(list(range(start, start + n)))
        start += n
    return batches


COMPUTE_NICE = int(os.environ.get("LAB_COMPUTE_NICE", "5"))


def lower_priority() -> None:
    """This batch worker (and the intra-op threads its forward passes start, which inherit it) a few steps below
    the threads that answer requests: a class's answers and polls (a millisecond each) go first, a model's batch
    (a second) a moment later, when the two cores are shared (measured: tests/loadtest_class.py at 500). Linux
    gives each thread its own niceness; elsewhere, or with LAB_COMPUTE_NICE=0, nothing changes."""
    if COMPUTE_NICE <= 0 or not hasattr(os, "setpriority"):
        return
    try:
        thread = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, thread, min(19, os.getpriority(os.PRIO_PROCESS, thread) + COMPUTE_NICE))
    except OSError:  # not allowed here: the worker runs as it is
        log.debug("the batch worker's priority could not be lowered")


def run_alone_on_failure(run_batch: Callable[[list], list], items: list, name: str = "batch") -> list:
    """run_batch(items) -> results in the same order; if it raises, every item runs again alone, so a
    failure belongs to its own item. Returns one outcome per item: its result, or the exception it raised."""
    try:
        results = run_batch(items)
        if len(results) != len(items):
            raise RuntimeError(f"{name}: {len(results)} results for {len(items)} items")
        return list(results)
    except Exception as exc:
        if len(items) == 1:
            return [exc]
        log.warning("%s: a batch of %d failed (%s); running its items one at a time", name, len(items),
                    type(exc).__name__)
    outcomes = []
    for item in items:
        try:
            outcomes.append(run_batch([item])[0])
        except Exception as exc:
            outcomes.append(exc)
    return outcomes


def deliver(future: Future, outcome) -> None:
    """An outcome (a result, or the exception it raised) into its future."""
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)


def resolve(found):
    """A claimed value: a result as it is, a future's result (or its exception raised)."""
    return found.result() if isinstance(found, Future) else found


class InFlight:
    """The claim: identical requests (the same key) share one computation. The first to ask for a key owns
    it and computes it; the others wait on its future. A result is cached before its key leaves the table,
    so a request arriving later never computes it again; a failure is not cached (the next request tries
    again). `cache` has get(key) (None when absent) and put(key, value); None: results are not kept."""

    def __init__(self, cache=None):
        self.cache = cache
        self._futures: dict[Any, Future] = {}
        self._lock = threading.Lock()

    def _cached(self, key):
        return self.cache.get(key) if self.cache is not None else None

    def claim(self, key) -> tuple[Any, Future | None]:
        """(the cached result or an identical request's future, None), or (None, a new future) when the
        caller owns the key: it computes the result and passes it to settle()."""
        hit = self._cached(key)
        if hit is not None:
            return hit, None
        with self._lock:
            future = self._futures.get(key)
            if future is not None:
                return future, None
            hit = self._cached(key)  # it may have been settled while we waited for the lock
            if hit is not None:
                return hit, None
            future = self._futures[key] = Future()
            return None, future

    def settle(self, key, future: Future, outcome) -> None:
        """The owner's outcome (a result or an exception) to everyone waiting on the key: cached first."""
        if self.cache is not None and not isinstance(outcome, BaseException):
            self.cache.put(key, outcome)
        with self._lock:
            self._futures.pop(key, None)
        deliver(future, outcome)

    def clear(self) -> None:
        """Forget every claim (tests: the computations behind them are gone)."""
        with self._lock:
            self._futures.clear()


# ---------------------------------------------------------------- the result cache


class ResultCache:
    """A thread-safe LRU of results bounded by their total size in bytes (numpy arrays count their
    nbytes; anything else counts as 1 KB): cachetools' LRUCache, sized by `size`, behind a lock."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._items = cachetools.LRUCache(max_bytes, getsizeof=self.size)
        self._lock = threading.Lock()

    @staticmethod
    def size(value) -> int:
        if isinstance(value, np.ndarray):
            return value.nbytes
        if isinstance(value, tuple):
            return sum(ResultCache.size(v) for v in value)
        return 1024

    def get(self, key):
        with self._lock:
            return self._items.get(key)

    def put(self, key, value) -> None:
        with self._lock:
            if key not in self._items:
                try:
                    self._items[key] = value
                except ValueError:  # larger than the whole cache: not kept
                    pass

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    @property
    def nbytes(self) -> int:
        return self._items.currsize


class Activity:
    """How many requests wait for or are in a forward pass, across every batcher. A long job (a fine-tune)
    waits between its steps while there are any: light requests go first, and a class clicking while a
    run trains gets its answers as fast as without the run (the job loses a fraction of a second each)."""

    def __init__(self):
        self._pending = 0
        self._quiet = threading.Condition()

    def add(self, n: int) -> None:
        with self._quiet:
            self._pending += n
            if self._pending == 0:
                self._quiet.notify_all()

    @property
    def pending(self) -> int:
        return self._pending

    def wait_for_quiet(self, max_wait: float) -> float:
        """Block until no request is pending, or max_wait seconds (a job is never starved); returns the
        seconds waited."""
        started = time.perf_counter()
        with self._quiet:
            self._quiet.wait_for(lambda: self._pending == 0, max_wait)
        return time.perf_counter() - started


activity = Activity()


# ---------------------------------------------------------------- the serving micro-batcher


@dataclass
class Request:
    key: Any  # None: neither cached nor shared (start())
    item: Any
    cost: int  # what the item adds to the batch's budget (e.g. its padded tokens)
    future: Future


class Batcher:
    """Runs `run_batch(items) -> results` (same order) over whatever has queued, one batch at a time
    per worker (one worker by default).

    `max_batch` items and `max_cost` total cost per batch bound the memory of one forward pass (`batch_size`).
    A batch that fails is retried one item at a time (`run_alone_on_failure`), so a failure belongs to its
    own request; identical requests share one run (`InFlight`)."""

    def __init__(self, name: str, run_batch: Callable[[list], list], cache: ResultCache | None = None, *,
                 max_batch: int = 32, max_cost: int = 8192, workers: int = 1):
        self.name, self.run_batch, self.cache = name, run_batch, cache
        self.max_batch, self.max_cost, self.workers = max_batch, max_cost, workers
        self.stats = {"batches": 0, "items": 0, "largest": 0}
        self.claims = InFlight(cache)
        self._queue: deque[Request] = deque()
        self._lock = threading.Condition()
        self._threads: list[threading.Thread] = []

    def submit(self, key, item, cost: int = 1):
        """The result for `item` (cached, shared with an identical request in flight, or computed
        in the next batch); the item's own exception if it failed."""
        return self.submit_many([(key, item, cost)])[0]

    def submit_many(self, requests: list[tuple]) -> list:
        """The results for several (key, item, cost) at once: queued together, so that they run in
        one batch (a lab that needs many rows for one student, e.g. several sentences)."""
        found, mine = [], []
        for key, item, cost in requests:
            value, future = self.claims.claim(key)
            if future is not None:
                mine.append(Request(key, item, cost, future))
            found.append(value if future is None else future)
        if mine:
            self._enqueue(mine)
        return [resolve(f) for f in found]

    def start(self, item, cost: int = 1) -> Future:
        """Queue `item` without waiting for it, neither cached nor shared (e.g. a generation whose
        tokens stream out while it runs); the future holds its result or exception."""
        request = Request(None, item, cost, Future())
        self._enqueue([request])
        return request.future

    def _enqueue(self, requests: list[Request]) -> None:
        with self._lock:
            self._queue.extend(requests)
            activity.add(len(requests))
            if len(self._threads) < self.workers:
                thread = threading.Thread(target=self._work, name=f"batcher {self.name}", daemon=True)
                self._threads.append(thread)
                thread.start()
            self._lock.notify()

    def _next_batch(self) -> list[Request]:
        with self._lock:
            while not self._queue:
                self._lock.wait()
            n = batch_size((r.cost for r in self._queue), self.max_batch, self.max_cost)
            return [self._queue.popleft() for _ in range(n)]

    def _work(self) -> None:
        lower_priority()
        while True:
            batch = self._next_batch()
            started = time.perf_counter()
            try:
                outcomes = run_alone_on_failure(self.run_batch, [r.item for r in batch], self.name)
            except Exception as exc:  # only if the rule itself failed (e.g. logging): the worker goes on
                outcomes = [exc] * len(batch)
            self.stats["batches"] += 1
            self.stats["items"] += len(batch)
            self.stats["largest"] = max(self.stats["largest"], len(batch))
            log.debug("%s: %d items in %.3f s, %d waiting", self.name, len(batch), time.perf_counter() - started,
                      len(self._queue))
            activity.add(-len(batch))
            for request, outcome in zip(batch, outcomes):
                if request.key is None:
                    deliver(request.future, outcome)
                else:
                    self.claims.settle(request.key, request.future, outcome)
