"""The switch: with LAB_RAY_ADDRESS unset nothing changes and ray is never imported; what the Serve side
takes from the registered passes (batch limits, how a batch is cut) agrees with the embedded batcher."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from concurrent.futures import Future
from pathlib import Path

import pytest

from labs.core.work import lm, ray_backend, ray_passes
from labs.core.work.batching import Batcher, Request

ROOT = Path(__file__).resolve().parent.parent


def test_without_the_variable_the_app_never_imports_ray():
    env = {k: v for k, v in os.environ.items() if k != "LAB_RAY_ADDRESS"}
    code = ("import sys, app; from labs.core.work import lm, jobs; "
            "from labs.finetune import shared_runs; sys.exit(3 if 'ray' in sys.modules else 0)")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=False,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-2000:] or "ray was imported"


def test_the_switch_is_read_on_every_call(monkeypatch):
    monkeypatch.delenv("LAB_RAY_ADDRESS", raising=False)
    assert not ray_backend.enabled()
    monkeypatch.setenv("LAB_RAY_ADDRESS", " ray://head:10001 ")
    assert ray_backend.enabled() and ray_backend.address() == "ray://head:10001"


def test_a_replica_takes_at_least_the_largest_registered_batch():
    for module in ("labs.choosing.few_shot", "labs.pretraining.nsp"):  # the labs that register passes
        importlib.import_module(module)

    assert ray_passes.MAX_ONGOING >= max(limits["max_batch"] for limits in lm.LIMITS.values())


def embedded_batches(costs: list[int], max_batch: int, max_cost: int) -> list[list[int]]:
    """The oracle: how the embedded Batcher cuts the same queue (its own _next_batch)."""
    batcher = Batcher("oracle", lambda items: items, max_batch=max_batch, max_cost=max_cost)
    for i, c in enumerate(costs):
        batcher._queue.append(Request(i, i, c, Future()))
    batches = []
    while batcher._queue:
        batches.append([r.item for r in batcher._next_batch()])
    return batches


@pytest.mark.parametrize("costs", [[10] * 70, [4000, 4000, 300, 8000, 1, 1, 9000], [1], list(range(1, 200, 7))])
def test_a_replica_cuts_batches_where_the_embedded_batcher_does(costs):
    requests = [(i, c) for i, c in enumerate(costs)]
    assert ray_passes._cut(requests, 64, 8192) == embedded_batches(costs, 64, 8192)


def test_a_failing_item_fails_alone():
    def runner(loaded, items):
        if "bad" in items:
            raise ValueError("bad item")
        return [item.upper() for item in items]

    outcomes = ray_passes.run_batch(runner, None, [("a", 1), ("bad", 1), ("c", 1)], 8, 100)
    assert [s for s, _ in outcomes] == ["ok", "error", "ok"]
    assert outcomes[0][1] == "A" and str(outcomes[1][1]) == "bad item"


def test_app_names_are_valid_and_distinct():
    names = {ray_passes.app_name(m, h) for m in ("bert-base-uncased", "google/electra-small-generator", "a b")
             for h in ("mlm", "encoder")}
    assert len(names) == 6 and all(n.replace("-", "").isalnum() for n in names)


def test_job_slots_follow_the_cluster_or_lab_job_slots(monkeypatch):
    monkeypatch.setattr(ray_backend, "cluster_resources", lambda: {"CPU": 12.0, "GPU": 0})
    monkeypatch.delenv("LAB_JOB_SLOTS", raising=False)
    assert ray_backend.job_slots() == 12
    monkeypatch.setenv("LAB_RAY_JOB_CPUS", "4")
    assert ray_backend.job_slots() == 3
    monkeypatch.setenv("LAB_JOB_SLOTS", "5")
    assert ray_backend.job_slots() == 5
    monkeypatch.setattr(ray_backend, "cluster_resources", lambda: {"CPU": 16.0, "GPU": 2.0})
    monkeypatch.delenv("LAB_JOB_SLOTS")
    monkeypatch.delenv("LAB_RAY_JOB_CPUS")
    assert ray_backend.job_options() == {"num_cpus": 1.0, "num_gpus": 0.5} and ray_backend.job_slots() == 4
    assert ray_backend.pass_actor_options()["num_gpus"] == 0.25
