"""The switch: with LAB_RAY_ADDRESS unset nothing changes and ray is never imported; a replica takes its batch
limits from the registered passes and runs them by the batching core's rules (tests/test_batching.py)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

from labs.core.errors import BadInput
from labs.core.work import batching, lm, ray_backend, ray_passes

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


def test_a_replica_runs_each_batch_the_core_cuts_and_a_failing_item_fails_alone():
    calls = []

    def runner(loaded, items):
        calls.append(list(items))
        if "bad" in items:
            raise BadInput("bad item")
        return [item.upper() for item in items]

    requests = [("a", 4000), ("b", 4000), ("bad", 300), ("c", 8000), ("d", 1)]
    outcomes = ray_passes.run_batch(runner, None, requests, 64, 8192)
    assert outcomes[:2] == ["A", "B"] and outcomes[3:] == ["C", "D"] and str(outcomes[2]) == "bad item"
    batches = [[requests[i][0] for i in group] for group in batching.cut([c for _, c in requests], 64, 8192)]
    assert calls == [["a", "b"], ["bad"], ["c", "d"]] == batches


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
