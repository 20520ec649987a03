"""The one switch that takes work out of the Gradio process: LAB_RAY_ADDRESS.

Unset (the default, and a Hugging Face Space): nothing here runs and `ray` is never imported; the passes
run in the embedded batcher (labs.core.work.batching) and the jobs on the embedded slots (labs.core.work.jobs).

Set, LM Lab is a Ray driver:
- `local`: it starts a Ray of its own on this machine (ray.init(num_cpus=<cores>, include_dashboard=False)),
  to try it out;
- `auto`: it joins the Ray already running on this machine (`ray start --head`, a KubeRay head pod);
- `ray://host:10001`: it joins a remote cluster through Ray Client.
The shared passes then run in Ray Serve deployments (labs.core.work.ray_passes) and the jobs as Ray tasks
(labs.core.work.ray_jobs); Gradio stays here, outside Serve, and calls them.

What a pass replica or a job asks for is set with LAB_RAY_PASS_CPUS / LAB_RAY_PASS_GPUS and LAB_RAY_JOB_CPUS /
LAB_RAY_JOB_GPUS (defaults below: GPUs only where the cluster has some); LAB_RAY_MAX_REPLICAS bounds each pass
deployment's autoscaling. The variables that pick models (LAB_EXTRA_MODELS, LAB_CACHE_DIR, HF_*) travel to
the workers in the job's runtime_env, so a replica loads the same model under the same name."""

from __future__ import annotations

import logging
import os
import threading

log = logging.getLogger(__name__)

VARIABLE = "LAB_RAY_ADDRESS"
# What travels to the workers: how models are named and found, and the device.
FORWARDED = ("LAB_EXTRA_MODELS", "LAB_CACHE_DIR", "LAB_DEVICE", "HF_HUB_OFFLINE", "HF_HOME", "HF_HUB_CACHE",
             "TRANSFORMERS_OFFLINE")
NAMESPACE = "lm-lab"

_lock = threading.Lock()
_connected: str | None = None  # the address we connected with


def address() -> str:
    return os.environ.get(VARIABLE, "").strip()


def enabled() -> bool:
    """Is work to leave the process? Read on every call (a dictionary lookup): a test can switch it."""
    return bool(address())


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def runtime_env() -> dict:
    return {"env_vars": {name: os.environ[name] for name in FORWARDED if name in os.environ}}


def connect():
    """The ray module, connected once per process (thread-safe). Reuses a Ray that this process has
    started already (the tests' fixture, a notebook)."""
    global _connected
    import ray

    with _lock:
        if ray.is_initialized():
            _connected = _connected or "existing"
            return ray
        where = address()
        if where == "local":
            _start_local(ray)
        else:
            ray.init(address=where, namespace=NAMESPACE, runtime_env=runtime_env(), log_to_driver=False)
        _connected = where
        log.info("connected to Ray at %s: %s", where, ray.cluster_resources())
        return ray


def _start_local(ray) -> None:
    """ray.init(num_cpus=<cores>) from a thread that lives as long as the process. Ray's head processes (GCS,
    raylet) are killed by the kernel when the thread that started them ends (PR_SET_PDEATHSIG), and the first
    request that connects runs in one of Gradio's worker threads, which end after a while idle."""
    started, failed = threading.Event(), []

    def head() -> None:
        try:
            ray.init(num_cpus=cores(), include_dashboard=False, namespace=NAMESPACE, runtime_env=runtime_env(),
                     log_to_driver=False)
        except BaseException as exc:  # handed to the caller
            failed.append(exc)
        started.set()
        threading.Event().wait()  # never returns: the head's processes live with this thread

    threading.Thread(target=head, name="ray local head", daemon=True).start()
    started.wait()
    if failed:
        raise failed[0]


def cluster_resources() -> dict:
    return dict(connect().cluster_resources())


def _number(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        log.warning("%s must be a number; using %s", name, default)
        return default


def has_gpu() -> bool:
    return cluster_resources().get("GPU", 0) > 0


def _asks(what: str, cpus: float, gpu_share: float) -> dict:
    """Ray's resource request for one replica or job: LAB_RAY_<what>_CPUS / _GPUS, else the defaults (a GPU
    share only where the cluster has a GPU)."""
    options = {"num_cpus": _number(f"LAB_RAY_{what}_CPUS", cpus)}
    gpus = _number(f"LAB_RAY_{what}_GPUS", gpu_share if has_gpu() else 0)
    if gpus:
        options["num_gpus"] = gpus
    return options


def pass_actor_options() -> dict:
    """What one pass replica asks for. A replica mostly waits for requests, so it reserves a tenth of a CPU
    (several models' deployments fit on a small machine; the OS shares the cores); a quarter of a GPU where
    the cluster has one (four models' replicas share it)."""
    return _asks("PASS", 0.1, 0.25)


def job_options() -> dict:
    """What one job (a fine-tune run, a comparison) asks for: a CPU, or half a GPU where there is one."""
    return _asks("JOB", 1, 0.5)


def job_slots() -> int:
    """How many jobs run at once on the cluster: LAB_JOB_SLOTS if set, else as many as its CPUs (or GPUs)
    can hold at what one job asks for."""
    if os.environ.get("LAB_JOB_SLOTS", "").strip():
        try:
            return max(1, int(os.environ["LAB_JOB_SLOTS"]))
        except ValueError:
            log.warning("LAB_JOB_SLOTS must be a whole number; using the cluster's size")
    resources, wanted = cluster_resources(), job_options()
    fits = [resources.get("CPU" if key == "num_cpus" else "GPU", 0) / amount
            for key, amount in wanted.items() if amount]
    return max(1, int(min(fits))) if fits else 1


def max_replicas() -> int:
    default = max(1, int(cluster_resources().get("CPU", cores()) // 2))
    return max(1, int(_number("LAB_RAY_MAX_REPLICAS", default)))
