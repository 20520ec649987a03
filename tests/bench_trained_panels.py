"""Benchmark: the first click of each panel that trains on the spot (#55: at most a minute on 2 cores), the time a
student waits when nobody asked for the same settings before. The offline models are loaded first (a running
server has them), then each panel's default request runs once, cold (its own cache empty), and once more (cached).

    python -m tests.bench_trained_panels
    python -m tests.bench_trained_panels cheating theta_distance     # only the panels named
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
TARGET_SECONDS = 60.0


async def _last(events):
    """The last event of a streaming endpoint (its result)."""
    last = None
    async for last in events:
        pass
    return last


def panels() -> dict:
    from labs.choosing import features
    from labs.core.models import models
    from labs.embeddings import elmo, word2vec_glove
    from labs.finetune import theta_distance
    from labs.masks import cheating

    return {
        "word2vec": lambda: word2vec_glove.word2vec_json(),
        "elmo": lambda: elmo.elmo_json(),
        "cheating": lambda: cheating.cheating_json(),
        "features": lambda: features.features_api(),
        "theta_distance": lambda: asyncio.run(_last(theta_distance.theta_distance_stream(models.MINILM_NAME))),
    }


def main(names: list[str]) -> int:
    import torch

    from labs.core.models import models

    for name in (models.MINILM_NAME, models.SMOLLM2_NAME):
        models.load(name)
    chosen = panels()
    rows = []
    for name, run in chosen.items():
        if names and name not in names:
            continue
        start = time.perf_counter()
        run()
        cold = time.perf_counter() - start
        start = time.perf_counter()
        run()
        warm = time.perf_counter() - start
        rows.append((name, cold, warm))
        print(f"{name:16s} first click {cold:6.1f} s   again {warm:6.2f} s   "
              f"{'within' if cold <= TARGET_SECONDS else 'OVER'} {TARGET_SECONDS:.0f} s", flush=True)
    print(f"torch threads {torch.get_num_threads()}, {os.cpu_count()} CPUs")
    return 0 if all(cold <= TARGET_SECONDS for _, cold, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
