"""What the server says about itself: the `/models` API and the header's status line (device,
online or offline, loaded models, and any set-up problem a lecturer should fix)."""

from __future__ import annotations

import os

from labs.core.models import models, offline_cache
from labs.core.work import zerogpu


def describe_models() -> dict:
    """The `models` API: every model offered here, its family and source, and whether it is loaded."""
    loaded = set(models.loaded_names())
    return {
        "online": models.hub_online(),
        "device": models.pick_device(),
        "models": [{"name": c.name, "family": c.family, "task": c.task, "source": c.source,
                    "description": c.description, "loaded": c.name in loaded} for c in models.registry().values()],
    }


def status_line() -> str:
    """Device, online/offline and the loaded models; then one line per set-up problem (a cache folder
    that cannot be written, a damaged converted model, LAB_EXTRA_MODELS entries left out)."""
    online = "online (Hugging Face Hub reachable)" if models.hub_online() else "offline (using the built-in models)"
    loaded = ", ".join(f"{m.name} [{m.source}]" for m in models.loaded_models()) or \
        "none yet (they load on first use)"
    line = f"Device: {models.pick_device()} · {online} · Loaded models: {loaded}"
    if os.environ.get("SPACE_ID"):  # set by Hugging Face Spaces
        line = f"Running on the Hugging Face Space {os.environ['SPACE_ID']} · {line}"
    if zerogpu.enabled():
        line = f"{line} · {zerogpu.SERVED.words()}"
    problems = offline_cache.notes() + [f"LAB_EXTRA_MODELS: left out {s}" for s in models.skipped_extra_models()]
    return "\n\n".join([line] + [f"⚠️ {p}" for p in problems])
