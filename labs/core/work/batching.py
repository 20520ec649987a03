"""Micro-batching: requests for the same model and pass that arrive together run as one padded
forward pass, whether they come from a student's click or an API call.

On a 2-core server, running requests in parallel threads does not help (torch already uses both
cores); one forward pass over a padded batch does. A Batcher has one worker thread. While it runs
a batch, new requests queue; when it finishes, it takes everything that has queued (up to a size
and token budget) as the next batch. A request alone never waits for company.

Identical requests in flight share one result, and every result goes into a size-bounded cache,
so the example on every student's screen costs one forward pass."""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict, deque
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

log = logging.getLogger(__name__)


class ResultCache:
    """A thread-safe LRU of results bounded by their total size in bytes (numpy arrays count their
    nbytes; anything else counts as 1 KB)."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._items: OrderedDict = OrderedDict()
        self._bytes = 0
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
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        return None

    def put(self, key, value) -> None:
        with self._lock:
            if key in self._items:
                return
            self._items[key] = value
            self._bytes += self.size(value)
            while self._bytes > self.max_bytes and len(self._items) > 1:
                _, old = self._items.popitem(last=False)
                self._bytes -= self.size(old)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0

    @property
    def nbytes(self) -> int:
        return self._bytes


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


@dataclass
class Request:
    key: Any
    item: Any
    cost: int  # what the item adds to the batch's budget (e.g. its padded tokens)
    future: Future


class Batcher:
    """Runs `run_batch(items) -> results` (same order) over whatever has queued, one batch at a time
    per worker (one worker by default).

    `max_batch` items and `max_cost` total cost per batch bound the memory of one forward pass.
    A batch that fails is retried one item at a time, so a failure belongs to its own request."""

    def __init__(self, name: str, run_batch: Callable[[list], list], cache: ResultCache | None = None, *,
                 max_batch: int = 32, max_cost: int = 8192, workers: int = 1):
        self.name, self.run_batch, self.cache = name, run_batch, cache
        self.max_batch, self.max_cost, self.workers = max_batch, max_cost, workers
        self.stats = {"batches": 0, "items": 0, "largest": 0}
        self._queue: deque[Request] = deque()
        self._in_flight: dict[Any, Future] = {}
        self._lock = threading.Condition()
        self._threads: list[threading.Thread] = []

    def submit(self, key, item, cost: int = 1):
        """The result for `item` (cached, shared with an identical request in flight, or computed
        in the next batch); the item's own exception if it failed."""
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        with self._lock:
            found = self._claim(key, item, cost)
        return found.result() if isinstance(found, Future) else found

    def submit_many(self, requests: list[tuple]) -> list:
        """The results for several (key, item, cost) at once: queued together, so that they run in
        one batch (a lab that needs many rows for one student, e.g. several sentences)."""
        with self._lock:
            found = [self._claim(key, item, cost) for key, item, cost in requests]
        return [f.result() if isinstance(f, Future) else f for f in found]

    def _claim(self, key, item, cost: int):
        """Under the lock: an identical request's future, the cached result (it may have finished
        while we waited for the lock), or a new request's future."""
        future = self._in_flight.get(key)
        if future is not None:
            return future
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        future = self._in_flight[key] = self._enqueue(key, item, cost)
        return future

    def start(self, item, cost: int = 1) -> Future:
        """Queue `item` without waiting for it, neither cached nor shared (e.g. a generation whose
        tokens stream out while it runs); the future holds its result or exception."""
        with self._lock:
            return self._enqueue(None, item, cost)

    def _enqueue(self, key, item, cost: int) -> Future:
        """Called with the lock held."""
        future = Future()
        self._queue.append(Request(key, item, cost, future))
        activity.add(1)
        if len(self._threads) < self.workers:
            thread = threading.Thread(target=self._work, name=f"batcher {self.name}", daemon=True)
            self._threads.append(thread)
            thread.start()
        self._lock.notify()
        return future

    def _next_batch(self) -> list[Request]:
        with self._lock:
            while not self._queue:
                self._lock.wait()
            batch = [self._queue.popleft()]
            cost = batch[0].cost
            while self._queue and len(batch) < self.max_batch and cost + self._queue[0].cost <= self.max_cost:
                cost += self._queue[0].cost
                batch.append(self._queue.popleft())
            return batch

    def _work(self) -> None:
        while True:
            batch = self._next_batch()
            started = time.perf_counter()
            try:
                outcomes = self._run([r.item for r in batch])
            except Exception as exc:  # only if even one item alone failed unexpectedly
                outcomes = [exc] * len(batch)
            self.stats["batches"] += 1
            self.stats["items"] += len(batch)
            self.stats["largest"] = max(self.stats["largest"], len(batch))
            log.debug("%s: %d items in %.3f s, %d waiting", self.name, len(batch), time.perf_counter() - started,
                      len(self._queue))
            for request, outcome in zip(batch, outcomes):
                if request.key is not None and not isinstance(outcome, BaseException):
                    self.cache.put(request.key, outcome)
            with self._lock:  # cached before it leaves the in-flight table: no identical request recomputes it
                for request in batch:
                    self._in_flight.pop(request.key, None)
            activity.add(-len(batch))
            for request, outcome in zip(batch, outcomes):
                if isinstance(outcome, BaseException):
                    request.future.set_exception(outcome)
                else:
                    request.future.set_result(outcome)

    def _run(self, items: list) -> list:
        try:
            return self.run_batch(items)
        except Exception as exc:
            if len(items) == 1:
                return [exc]
            log.warning("%s: a batch of %d failed (%s); running its items one at a time", self.name, len(items),
                        type(exc).__name__)
            outcomes = []
            for item in items:
                try:
                    outcomes.extend(self.run_batch([item]))
                except Exception as item_exc:
                    outcomes.append(item_exc)
            return outcomes
