"""Choosing a model, benchmark: the few-shot curve (0, 1, 2, 4, 8 shots × 3 orders × 40 reviews) on
SmolLM2, batched with shared demonstration prefixes, against the bare loop a user would write (one
model(ids) per prompt), timed on a sample of the same prompts and scaled up.

    python -m tests.bench_choosing
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    import torch

    from labs.choosing import few_shot
    from labs.core.models import models
    from labs.core.work import lm
    from labs.core.work.jobs import JOBS

    loaded = models.load(models.SMOLLM2_NAME, "causal")
    print(f"torch threads: {torch.get_num_threads()}, cores: {os.cpu_count()}")
    few_shot.few_shot(loaded, [1], "natural", [0])  # warm-up
    results = {}
    for labels in ("natural", "arbitrary"):
        lm.cache.clear()
        JOBS.clear()  # the curve itself is kept as a job's result too: measure it computed
        started = time.perf_counter()
        r = few_shot.few_shot(loaded, few_shot.SHOTS, labels, few_shot.SEEDS)
        results[labels] = (time.perf_counter() - started, r)
    pool, evaluation = few_shot.dataset()
    prompts = [few_shot.prompt(few_shot.demonstrations(k, s), t, ("positive", "negative"))
               for k in few_shot.SHOTS for s in few_shot.SEEDS for t, _ in evaluation]
    sample = prompts[::25]
    started = time.perf_counter()
    with torch.inference_mode():
        for p in sample:
            loaded.model(loaded.tokenizer(p, return_tensors="pt")["input_ids"])
    bare = (time.perf_counter() - started) / len(sample) * len(prompts)
    for labels, (seconds, r) in results.items():
        curve = ", ".join(f"{c['shots']}: {100 * c['accuracy']:.1f} %" for c in r.curve)
        print(f"{labels:9s} curve in {seconds:6.1f} s   ({curve})")
    print(f"bare loop, one model(ids) per prompt ({len(prompts)} prompts, timed on {len(sample)}): {bare:6.1f} s")
    print(f"ratio bare / batched (natural): {bare / results['natural'][0]:.1f}x")


if __name__ == "__main__":
    main()
