"""Helpers for the Ray tests (tests/test_ray_*.py): a local Ray started and stopped by a fixture, and the
Ray side of LM Lab (labs.core.work.ray_*) made to forget a Ray that was shut down."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from labs.core.work import lm, ray_backend, ray_jobs, ray_passes


def needs_ray():
    """The ray module, or skip: requirements-ray.txt is installed by `./lab test` (and so in CI)."""
    return pytest.importorskip("ray", reason="pip install -r requirements-ray.txt")


def forget() -> None:
    """LM Lab's handles on a Ray that is gone (the next test module starts another)."""
    ray_passes._handles.clear()
    lm.ray_claims.clear()
    ray_jobs._remote = ray_jobs._actor = None
    ray_backend._connected = None


def shutdown() -> None:
    import ray
    from ray import serve

    try:
        serve.shutdown()
    finally:
        ray.shutdown()
        forget()
        if "PYTHONPATH" in _saved:  # as it was before importable_here()
            old = _saved.pop("PYTHONPATH")
            os.environ.pop("PYTHONPATH", None) if old is None else os.environ.update(PYTHONPATH=old)


def importable_here() -> None:
    """The Ray processes started from here (raylets, then every worker and Serve replica) find LM Lab and
    these helpers (a test pass below is registered in this module; Serve's replicas belong to Serve's own job,
    which does not get this driver's sys.path)."""
    tests = Path(__file__).resolve().parent
    _saved.setdefault("PYTHONPATH", os.environ.get("PYTHONPATH"))
    paths = [str(tests), str(tests.parent)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))


_saved: dict = {}


def start_local(num_cpus: int = 2):
    """Ray on this machine for one test module: ray.init(num_cpus=2, include_dashboard=False) and Serve,
    with the variables that name the tests' tiny models passed on to the workers."""
    ray = needs_ray()
    from ray import serve

    forget()
    importable_here()
    ray.init(num_cpus=num_cpus, include_dashboard=False, namespace=ray_backend.NAMESPACE,
             runtime_env=ray_backend.runtime_env(), log_to_driver=False)
    serve.start(proxy_location="Disabled")
    return ray


def start_cluster(workers: int = 2):
    """A head and `workers` worker nodes on this machine (num_cpus=1 each, no dashboard), LM Lab connected
    to it as a driver, and Serve started: ray.cluster_utils.Cluster, Ray's own tool for this."""
    ray = needs_ray()
    from ray import serve
    from ray.cluster_utils import Cluster

    forget()
    importable_here()
    for attempt in (1, 2, 3):  # a raylet has 30 s to start (Ray's own limit): a busy machine may miss it
        cluster = Cluster(initialize_head=False)
        try:
            cluster.add_node(num_cpus=1, include_dashboard=False)
            nodes = [cluster.add_node(num_cpus=1) for _ in range(workers)]
            cluster.wait_for_nodes()
            break
        except Exception:
            cluster.shutdown()
            if attempt == 3:
                raise
    ray.init(address=cluster.address, namespace=ray_backend.NAMESPACE, runtime_env=ray_backend.runtime_env(),
             log_to_driver=False)
    serve.start(proxy_location="Disabled")
    return cluster, nodes


SLOW_PASS_S = 3.0


@lm.register_pass("ray_test_slow", max_batch=8, max_cost=8192)
def slow_next(loaded, items):
    """A test pass: the next-token pass after SLOW_PASS_S seconds (long enough to kill its replica in it)."""
    import time

    time.sleep(SLOW_PASS_S)
    return lm.RUNNERS["next"](loaded, items)
