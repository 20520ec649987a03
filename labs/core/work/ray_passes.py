"""The shared passes on Ray Serve (LAB_RAY_ADDRESS set; see labs.core.work.ray_backend).

One Serve application per (model, head), named by `app_name`: its replicas load the model themselves, by its
choice name, with labs.core.models (the loader the app uses), and run the registered runner of each pass
(labs.core.work.lm.RUNNERS[kind]) on what `@serve.batch` gathers, so a result is the one the embedded batcher
gives. Each kind of pass has its own batch queue in the replica, sized by the pass's registered limits
(lm.LIMITS: at most max_batch requests, and the batch is cut where their cost passes max_cost, as the embedded
batcher does); max_ongoing_requests is at least the largest batch, or batches would stay small. Replicas scale
with the load (autoscaling_config) and ask for a share of a GPU where the cluster has one.

The front-end (this process) keeps what the embedded path does before a pass: the result cache (lm.cache) and
the table of requests in flight, so identical requests still cost one pass. It calls the deployment's handle
from the handler's thread; a replica that dies under a request (a killed actor, a lost node) is asked again
once, and Serve has started its replacement by then.

Nothing here imports ray at module level: it is imported when the switch is on."""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import logging
import re
import threading
from concurrent.futures import Future, ThreadPoolExecutor

from labs.core.work import ray_backend

log = logging.getLogger(__name__)

BATCH_WAIT_S = 0.002  # a request alone hardly waits for company (the embedded batcher never waits)
MAX_ONGOING = 128  # requests one replica takes at once: at least the largest registered max_batch
TARGET_ONGOING = 32  # the autoscaler adds a replica when each has more than this in flight
LM_MODULE = "labs.core.work.lm"


# ---------------------------------------------------------------- inside a replica


def _cut(requests: list, max_batch: int, max_cost: int) -> list[list[int]]:
    """The indices of `requests` [(item, cost)] in consecutive batches within the pass's limits."""
    groups, cost = [[]], 0
    for index, (_, c) in enumerate(requests):
        if groups[-1] and (len(groups[-1]) >= max_batch or cost + c > max_cost):
            groups.append([])
            cost = 0
        groups[-1].append(index)
        cost += c
    return groups


def run_batch(runner, loaded, requests: list, max_batch: int, max_cost: int) -> list:
    """[("ok", result) or ("error", exception)] for [(item, cost)]: one runner call per batch within the
    limits; a batch that fails is run again one item at a time, so a failure belongs to its own request."""
    outcomes = [None] * len(requests)
    for group in _cut(requests, max_batch, max_cost):
        items = [requests[i][0] for i in group]
        try:
            results = [("ok", r) for r in runner(loaded, items)]
        except Exception:
            results = []
            for item in items:
                try:
                    results.append(("ok", runner(loaded, [item])[0]))
                except Exception as exc:
                    results.append(("error", exc))
        for i, outcome in zip(group, results):
            outcomes[i] = outcome
    return outcomes


class PassReplica:
    """One replica: a model with one head, and a batch queue per kind of pass asked of it."""

    def __init__(self, model: str, head: str):
        from labs.core.models import models

        self.loaded = models.load(model, head=head)
        self.queues: dict = {}
        self.stats = {"batches": 0, "items": 0, "largest": 0}

    def _queue(self, kind: str, module: str):
        from ray import serve

        queue = self.queues.get(kind)
        if queue is None:
            importlib.import_module(module)  # the lab's compute module that registered this kind
            lm = importlib.import_module(LM_MODULE)
            runner, limits = lm.RUNNERS[kind], lm.LIMITS[kind]

            async def batch(requests: list) -> list:
                self.stats["batches"] += 1
                self.stats["items"] += len(requests)
                self.stats["largest"] = max(self.stats["largest"], len(requests))
                return await asyncio.to_thread(run_batch, runner, self.loaded, requests, **limits)

            queue = self.queues[kind] = serve.batch(max_batch_size=limits["max_batch"],
                                                    batch_wait_timeout_s=BATCH_WAIT_S)(batch)
        return queue

    async def run(self, kind: str, module: str, item, cost: int):
        return await self._queue(kind, module)((item, cost))

    def where(self) -> dict:
        """This replica's node and actor (tests kill it) and its batch counts."""
        import ray

        context = ray.get_runtime_context()
        return {"node_id": context.get_node_id(), "actor_name": context.get_actor_name(), **self.stats}


def app_name(model: str, head: str) -> str:
    """The Serve application of a (model, head): readable, and unique (a hash of the exact pair)."""
    slug = re.sub(r"[^A-Za-z0-9]+", "-", f"{model}-{head}").strip("-")[:60]
    return f"lmlab-{slug}-{hashlib.sha256(f'{model}|{head}'.encode()).hexdigest()[:8]}"


def deployment(model: str, head: str):
    """The deployment (bound, ready for serve.run) of one (model, head)."""
    from ray import serve

    return serve.deployment(PassReplica).options(
        name="passes", num_replicas="auto",
        autoscaling_config={"min_replicas": 1, "max_replicas": ray_backend.max_replicas(),
                            "target_ongoing_requests": TARGET_ONGOING},
        max_ongoing_requests=MAX_ONGOING, ray_actor_options=ray_backend.pass_actor_options(),
        max_constructor_retry_count=3).bind(model, head)


def app_builder(args: dict):
    """For a Serve config file (deploy/rayservice.yaml): import_path labs.core.work.ray_passes:app_builder,
    args {model, head}."""
    return deployment(str(args["model"]), str(args.get("head", "")))


# ---------------------------------------------------------------- in the front-end

_handles: dict = {}
_handles_lock = threading.Lock()
_in_flight: dict = {}
_in_flight_lock = threading.Lock()
_calls = ThreadPoolExecutor(max_workers=8, thread_name_prefix="ray pass")  # for a caller inside an event loop
stats = {"requests": 0, "retried": 0}


def start_serve() -> None:
    from ray import serve

    ray_backend.connect()
    serve.start(proxy_location="Disabled")  # Gradio is the front-end: no HTTP proxy is needed


def handle(model: str, head: str):
    """The deployment handle of (model, head): the running application (started by another front-end or
    by the RayService's Serve config), or deployed now."""
    key = (model, head)
    found = _handles.get(key)
    if found is not None:
        return found
    with _handles_lock:
        if key not in _handles:
            from ray import serve
            from ray.serve.exceptions import RayServeException

            start_serve()
            name = app_name(model, head)
            try:
                found = serve.get_app_handle(name)
            except (RayServeException, KeyError, ValueError):
                found = serve.run(deployment(model, head), name=name, route_prefix=None)
            _handles[key] = found
        return _handles[key]


def _result(response, again):
    """A response's outcome; asked again once (`again()`) if the replica died under it."""
    from ray.exceptions import ActorUnavailableError, RayActorError

    try:
        return response.result()
    except (RayActorError, ActorUnavailableError) as exc:
        stats["retried"] += 1
        log.warning("a pass replica died under a request (%s); asking again", type(exc).__name__)
        return again().result()


def _ask(handle_, kind: str, module: str, requests: list[tuple]) -> list[tuple]:
    """[(status, value)] for [(item, cost)], all sent before any is awaited, so that they can share a batch."""
    def send(item, cost):
        return handle_.run.remote(kind, module, item, cost)

    responses = [send(item, cost) for item, cost in requests]
    outcomes = []
    for (item, cost), response in zip(requests, responses):
        try:
            outcomes.append(_result(response, lambda item=item, cost=cost: send(item, cost)))
        except Exception as exc:  # Ray's own failure: it belongs to this request
            outcomes.append(("error", exc))
    return outcomes


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def submit_many(loaded, kind: str, module: str, requests: list[tuple], cache) -> list:
    """The results for [(key, item, cost)] of pass `kind`: from the cache, shared with an identical request in
    flight, or asked of the (model, head)'s deployment (DeploymentResponse.result() refuses an event loop's
    thread: from there, a helper thread waits)."""
    claims, mine = [], []
    with _in_flight_lock:
        for key, item, cost in requests:
            hit = cache.get(key)
            if hit is None:
                hit = _in_flight.get(key)
                if hit is None:
                    hit = _in_flight[key] = Future()
                    mine.append((key, item, cost, hit))
            claims.append(hit)
    if mine:
        stats["requests"] += len(mine)
        try:
            handle_ = handle(loaded.name, loaded.head)
            asked = [(item, cost) for _, item, cost, _ in mine]
            if _in_event_loop():
                outcomes = _calls.submit(_ask, handle_, kind, module, asked).result()
            else:
                outcomes = _ask(handle_, kind, module, asked)
        except Exception as exc:  # no deployment: every request of this call learns why
            outcomes = [("error", exc)] * len(mine)
        for (key, _, _, future), (status, value) in zip(mine, outcomes):
            if status == "ok":
                cache.put(key, value)
            with _in_flight_lock:
                _in_flight.pop(key, None)
            (future.set_result if status == "ok" else future.set_exception)(value)
    return [c.result() if isinstance(c, Future) else c for c in claims]


def replica_info(model: str, head: str) -> dict:
    """A replica's node, actor name and batch counts (tests and the load test)."""
    ask = lambda: handle(model, head).where.remote().result()  # noqa: E731
    return _calls.submit(ask).result() if _in_event_loop() else ask()
