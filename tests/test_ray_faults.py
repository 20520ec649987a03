"""Faults on a local multi-node Ray (ray.cluster_utils.Cluster: a head and two worker nodes on this machine,
one CPU each): jobs spread over the nodes; a worker node killed in the middle of jobs loses no student's result
(the task is retried: the work is a pure function of its settings, so the run gives the same events again and
the follower sees each event once); a Serve replica killed in the middle of a batch is replaced and the
front-end's request is answered (asked again once)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import ray_support

from labs.core.models import models
from labs.core.work import lm, ray_passes
from labs.core.work.jobs import Jobs

STEPS = 8


def counting(seed: int, pause: float):
    """A job's work: STEPS events that depend on its seed only, `pause` seconds apart."""
    def work(control):
        for step in range(STEPS):
            time.sleep(pause)
            yield (seed, step, seed * 1000 + step * step)
            if control.is_set():
                return
    return work


def where(ticket):
    """Where the ticket's job runs (labs.core.work.ray_jobs.Started), once its task has started."""
    return getattr(ticket.job, "where", None)


def expected(seed: int) -> list:
    return [(seed, step, seed * 1000 + step * step) for step in range(STEPS)]


@pytest.fixture(scope="module")
def cluster(tiny_models):
    cluster, workers = ray_support.start_cluster(workers=2)
    yield cluster, workers
    ray_support.shutdown()
    cluster.shutdown()


@pytest.fixture(autouse=True)
def through_ray(cluster, monkeypatch):
    monkeypatch.setenv("LAB_RAY_ADDRESS", "auto")
    lm.cache.clear()


def follow(jobs: Jobs, seeds: list[int], pause: float) -> tuple[list, list, list]:
    """Three students, each following a different job, in threads: (tickets, events seen, errors)."""
    tickets = [jobs.submit("count", ("count", seed, pause), counting(seed, pause), owner=f"student {seed}")
               for seed in seeds]
    seen, errors = [[] for _ in seeds], []

    def read(ticket, into):
        try:
            into.extend(ticket)
        except Exception as exc:
            errors.append(exc)
        ticket.read_at = time.time()

    threads = [threading.Thread(target=read, args=(t, s)) for t, s in zip(tickets, seen)]
    for thread in threads:
        thread.start()
    return tickets, seen, errors, threads


def test_jobs_spread_over_the_nodes_and_run_at_once(cluster):
    import ray

    jobs = Jobs(slots=1, cluster_slots=True)  # with Ray: as many slots as the cluster holds
    tickets, seen, errors, threads = follow(jobs, [1, 2, 3], pause=0.5)
    for thread in threads:
        thread.join(120)
    assert not errors and seen == [expected(1), expected(2), expected(3)]
    assert jobs.slots == int(ray.cluster_resources()["CPU"]) == 3
    nodes = {t.job.where.node_id for t in tickets}
    assert len(nodes) == 3  # one job on each node
    assert max(t.job.where.at for t in tickets) < min(t.read_at for t in tickets)  # all three ran at once


def test_a_worker_node_killed_in_the_middle_of_jobs_loses_no_result(cluster):
    c, workers = cluster
    jobs = Jobs(slots=1, cluster_slots=True)
    tickets, seen, errors, threads = follow(jobs, [4, 5, 6], pause=0.5)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all(where(t) and len(t.job.events) >= 2 for t in tickets):
        time.sleep(0.1)
    by_node = {t.job.where.node_id: t for t in tickets}
    victim = next(w for w in workers if w.node_id in by_node)
    lost = by_node[victim.node_id]
    assert len(lost.job.events) < STEPS  # in the middle of its run
    c.remove_node(victim)
    for thread in threads:
        thread.join(180)
    assert not errors, errors
    assert seen == [expected(4), expected(5), expected(6)]  # every event once, in order, for every student
    assert lost.job.state == lost.job.DONE


def test_a_replica_killed_in_the_middle_of_a_batch_is_replaced_and_the_request_answered(cluster, tiny_models):
    import ray

    loaded = models.load(tiny_models["causal"])
    ids = (5, 6, 7, 8)
    first = ray_passes.replica_info(loaded.name, loaded.head)
    outcome = {}
    asking = threading.Thread(target=lambda: outcome.update(got=lm.submit(loaded, "ray_test_slow", ids, len(ids))))
    asking.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and ray_passes.replica_info(loaded.name, loaded.head)["batches"] <= \
            first["batches"]:
        time.sleep(0.05)
    retried = ray_passes.stats["retried"]
    ray.kill(ray.get_actor(first["actor_name"], namespace="serve"))
    asking.join(120)
    assert ray_passes.stats["retried"] == retried + 1
    lm.cache.clear()
    answer = lm.next_token_logits(loaded, list(ids))  # the front-end keeps answering, from the new replica
    assert ray_passes.replica_info(loaded.name, loaded.head)["actor_name"] != first["actor_name"]
    np.testing.assert_allclose(outcome["got"], answer, atol=1e-6)
    own = lm.RUNNERS["next"](loaded, [ids])[0]  # the embedded runner, in this process
    np.testing.assert_allclose(answer, own, atol=1e-5)
