"""Does a model fit? Checked before a model that needs the GPU loads (registry.ModelChoice.needs_gpu), against the
memory free where it would go. Its weights' bytes are counted from its config on PyTorch's meta device (no download
of the weights, no memory); the memory free is the GPU's (torch.cuda.mem_get_info), or the machine's (MemAvailable
in /proc/meminfo), which also holds the weights while they load. A model that does not fit is refused with a
sentence, instead of an out-of-memory error that could take the server's other students with it."""

from __future__ import annotations

import functools
from pathlib import Path

from labs.core.models.registry import ModelChoice, ModelUnavailable

HEADROOM = 1.25  # activations, the CUDA context, a tokenizer: a quarter more than the weights


def load_dtype(choice: ModelChoice, device: str):
    """The dtype a model loads in: bfloat16 for a GPU-only model on a GPU (half the memory), else float32."""
    import torch

    return torch.bfloat16 if choice.needs_gpu and device.startswith("cuda") else torch.float32


@functools.lru_cache(maxsize=32)
def parameters(location: str, head_class: str, local_only: bool) -> int:
    """The model's parameter count: its config's model built on the meta device."""
    import torch
    import transformers

    config = transformers.AutoConfig.from_pretrained(location, local_files_only=local_only, trust_remote_code=False)
    with torch.device("meta"):
        model = getattr(transformers, head_class).from_config(config)
    return sum(p.numel() for p in model.parameters())


def free_bytes(device: str) -> int:
    """The memory free where the weights go: the GPU's, or this machine's available memory."""
    if device.startswith("cuda"):
        import torch

        return torch.cuda.mem_get_info(torch.device(device))[0]
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 1 << 62  # not Linux: nothing to say


def check(choice: ModelChoice, head_class: str, device: str, local_only: bool) -> int:
    """The bytes the model needs on `device` (its weights and the headroom); ModelUnavailable when they are not
    free there, or on the machine while it loads."""
    import torch

    itemsize = torch.empty((), dtype=load_dtype(choice, device)).element_size()
    needed = int(parameters(choice.location, head_class, local_only) * itemsize * HEADROOM)
    for where in dict.fromkeys([device, "cpu"]):
        free = free_bytes(where)
        if needed > free:
            place = "the GPU" if where.startswith("cuda") else "this server"
            raise ModelUnavailable(f"'{choice.name}' needs about {gb(needed)} of memory and {place} has {gb(free)} "
                                   "free. Pick a smaller model, or run LM Lab on a larger GPU.")
    return needed


def gb(n: int) -> str:
    return f"{n / 1e9:.1f} GB"
