"""Measured here: LM Lab's own training speed, from a short real training burst on this server.

A few real AdamW steps of all-MiniLM-L6-v2 (with a sequence-classification head) on one fixed batch,
timed after one warm-up step. Achieved FLOP/s = 6 · N · tokens/s, the same rule the calculator uses
for the published runs. Measured once per process behind a lock: a class of 100 pressing the button
at once gets one burst and shares its result."""

from __future__ import annotations

import platform
import threading
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone

BATCH, LENGTH, STEPS = 8, 64, 3  # 8 sequences × 64 tokens = 512 tokens a step

_lock = threading.Lock()
_result: "Burst | None" = None
runs = 0  # how many bursts this process has run (tests check that it stays at one)


@dataclass(frozen=True)
class Burst:
    model: str
    params: int
    batch: int
    length: int
    steps: int
    seconds_per_step: float
    tokens_per_second: float
    flops_per_second: float  # achieved: 6 · params · tokens/s
    device: str  # in words: what ran it
    measured_at: str  # ISO time, UTC

    def to_json(self) -> dict:
        return asdict(self)


def measured() -> Burst | None:
    """The burst's result if this process has measured it, else None (never starts one)."""
    return _result


def measure() -> Burst:
    """Run the burst once per process (the first caller runs it; everyone else waits and shares it)."""
    global _result, runs
    with _lock:
        if _result is None:
            _result = _run_burst()
            runs += 1
    return _result


def device_words(device) -> str:
    """What ran the burst, in words: the GPU's name, or the CPU's model and thread count."""
    import torch

    if device.type == "cuda":
        return f"GPU: {torch.cuda.get_device_name(device)}"
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            name = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), name)
    except OSError:
        pass
    return f"CPU: {name}, {torch.get_num_threads()} threads"


def _run_burst() -> Burst:
    import torch

    from labs.core.models import models

    model, _ = models.load_for_task(models.MINILM_NAME, "sequence_classification", num_labels=2)
    device = next(model.parameters()).device
    params = sum(p.numel() for p in model.parameters())
    generator = torch.Generator().manual_seed(0)
    vocab = model.config.vocab_size
    ids = torch.randint(1000, vocab, (BATCH, LENGTH), generator=generator).to(device)  # [batch, length]
    labels = torch.randint(0, 2, (BATCH,), generator=generator).to(device)  # [batch]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    model.train()

    def step():
        loss = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    step()  # warm-up: allocations, kernel choice
    started = time.perf_counter()
    for _ in range(STEPS):
        step()
    seconds = (time.perf_counter() - started) / STEPS
    tokens_per_second = BATCH * LENGTH / seconds
    words = device_words(device)
    model = optimizer = None  # freed now (step() holds them too), not when the caller lets go
    return Burst(models.MINILM_NAME, params, BATCH, LENGTH, STEPS, seconds, tokens_per_second,
                 6 * params * tokens_per_second, words,
                 datetime.now(timezone.utc).isoformat(timespec="seconds"))
