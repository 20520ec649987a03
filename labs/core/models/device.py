"""Which device a model goes to: LAB_DEVICE, else CUDA, then Apple's MPS, then the CPU; and ZeroGPU's two
sides (labs.core.work.zerogpu): the app's own process, where `spaces` fakes CUDA and everything stays on the
CPU, and a worker forked for GPU calls, where CUDA is real."""

from __future__ import annotations

import os

_in_gpu_call = False  # set in a ZeroGPU worker process, which exists only to run GPU calls


def on_zero_gpu() -> bool:
    """Is this a ZeroGPU Space? (the `spaces` package's own test: SPACES_ZERO_GPU is 1, t or true)"""
    return os.environ.get("SPACES_ZERO_GPU", "").lower() in ("1", "t", "true")


def in_gpu_call() -> bool:
    """Is this process a ZeroGPU worker running GPU calls?"""
    return _in_gpu_call


def enter_gpu_call() -> None:
    """This process is a ZeroGPU worker, forked from the app to run GPU calls: real CUDA from now on (and the
    passes run one at a time: the batchers' threads were not forked, labs.core.work.lm)."""
    global _in_gpu_call
    _in_gpu_call = True


def pick_device() -> str:
    """LAB_DEVICE if set, else cuda, then mps, then cpu. On ZeroGPU, outside a GPU call, cpu: there `spaces`
    fakes CUDA in the app's process (is_available() is True, but a tensor moved there can only be used inside
    a GPU call), so the models the CPU paths use stay on the CPU."""
    wanted = os.environ.get("LAB_DEVICE", "").strip()
    if wanted:
        return wanted
    if on_zero_gpu() and not _in_gpu_call:
        return "cpu"
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return "mps"
    return "cpu"
