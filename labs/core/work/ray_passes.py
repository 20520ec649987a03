"""The shared passes on Ray Serve (LAB_RAY_ADDRESS set; see labs.core.work.ray_backend).

One Serve application per (model, head), named by `app_name`: its replicas load the model themselves, by its
choice name, with labs.core.models (the loader the app uses), and run the registered runner of each pass
(labs.core.work.passes.RUNNERS[kind]) on what `@serve.batch` gathers, so a result is the one the embedded batcher
gives. Each kind of pass has its own batch queue in the replica, sized by the pass's registered limits
(passes.LIMITS: at most max_batch requests, and the batch is cut where their cost passes max_cost, by the embedded
batcher's own rule, batching.cut); max_ongoing_requests is at least the largest batch, or batches would stay
small. Replicas scale with the load (autoscaling_config) and ask for a share of a GPU where the cluster has one.

The front-end (this process) keeps what the embedded path does before a pass: the result cache (lm.cache) and
the claim of requests in flight (batching.InFlight, lm.ray_claims), so identical requests still cost one
pass. It calls the deployment's handle from the handler's thread; a replica that dies under a request (a killed
actor, a lost node) is asked again once, and Serve has started its replacement by then.

Nothing here imports ray at module level: it is imported when the switch is on."""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import logging
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from labs.core.work import batching, passes, ray_backend

log = logging.getLogger(__name__)

BATCH_WAIT_S = 0.002  # a request alone hardly waits for company (the embedded batcher never waits)
MAX_ONGOING = 128  # requests one replica takes at once: at least the largest registered max_batch
TARGET_ONGOING = 32  # the autoscaler adds a replica when each has more than this in flight


# ---------------------------------------------------------------- inside a replica


def run_batch(runner, loaded, requests: list, max_batch: int, max_cost: int) -> list:
    """[result or exception] for [(item, cost)]: the batches cut where the embedded batcher cuts them
    (batching.cut), each run by the same rule (batching.run_alone_on_failure: a failure belongs to its item)."""
    outcomes = []
    for group in batching.cut([cost for _, cost in requests], max_batch, max_cost):
        outcomes += batching.run_alone_on_failure(partial(runner, loaded), [requests[i][0] for i in group], "replica")
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
            importlib.import_module(module)  # the module that registered this kind (a lab's compute, or lm)
            runner, limits = passes.RUNNERS[kind], passes.LIMITS[kind]

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


def _ask(handle_, kind: str, module: str, requests: list[tuple]) -> list:
    """[result or exception] for [(item, cost)], all sent before any is awaited, so that they can share a batch."""
    def send(item, cost):
        return handle_.run.remote(kind, module, item, cost)

    responses = [send(item, cost) for item, cost in requests]
    outcomes = []
    for (item, cost), response in zip(requests, responses):
        try:
            outcomes.append(_result(response, lambda item=item, cost=cost: send(item, cost)))
        except Exception as exc:  # Ray's own failure: it belongs to this request
            outcomes.append(exc)
    return outcomes


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def submit_many(loaded, kind: str, module: str, requests: list[tuple], claims: batching.InFlight) -> list:
    """The results for [(key, item, cost)] of pass `kind`: from the cache, shared with an identical request in
    flight (`claims`, the front-end's batching.InFlight over the result cache), or asked of the (model, head)'s
    deployment (DeploymentResponse.result() refuses an event loop's thread: from there, a helper thread waits)."""
    found, mine = [], []
    for key, item, cost in requests:
        value, future = claims.claim(key)
        if future is not None:
            mine.append((key, item, cost, future))
        found.append(value if future is None else future)
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
            outcomes = [exc] * len(mine)
        for (key, _, _, future), outcome in zip(mine, outcomes):
            claims.settle(key, future, outcome)
    return [batching.resolve(f) for f in found]


def replica_info(model: str, head: str) -> dict:
    """A replica's node, actor name and batch counts (tests and the load test)."""
    ask = lambda: handle(model, head).where.remote().result()  # noqa: E731
    return _calls.submit(ask).result() if _in_event_loop() else ask()
