"""Benchmark of the Pre-training lab (to merge into tests/benchmarks.py): NSP against one bare
BertForPreTraining forward, and the 8-rate × 2-seed mask-rate curve on the 20 built-in sentences
(320 sentence passes), at bert-base size (random weights, real uncased vocabulary), on 2 threads.

    python -m tests.bench_pretraining
"""

from __future__ import annotations

import atexit
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from tests.timing import interleaved_medians

os.environ.setdefault("HF_HUB_OFFLINE", "1")
WORK = Path(tempfile.mkdtemp(prefix="lmlab-bench-pt-"))
atexit.register(shutil.rmtree, WORK, True)
BERT_PT = WORK / "bert-base-pretraining-size"
os.environ["LAB_EXTRA_MODELS"] = str(BERT_PT)


def build() -> None:
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForPreTraining

    from labs.core.models.models import MINILM_NAME, offline_models

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(next(c for c in offline_models() if c.name == MINILM_NAME).location)
    BertForPreTraining(BertConfig()).save_pretrained(BERT_PT)  # bert-base-uncased's shape with both heads
    tokenizer.save_pretrained(BERT_PT)


def bench_pretraining() -> list[tuple[str, float, float | None]]:
    """(what, our seconds, the bare call's seconds or None) rows."""
    import torch

    torch.set_num_threads(2)
    build()
    from labs.core.models import models
    from labs.core.work import lm
    from labs.core.work.jobs import JOBS
    from labs.pretraining import mask_rate, nsp

    loaded = nsp.load(BERT_PT.name)
    a, b = nsp.EXAMPLE_A, nsp.EXAMPLE_B
    enc = loaded.tokenizer(a, b, return_tensors="pt")

    def ours():
        lm.cache.clear()
        nsp.predict(loaded, a, b)

    def bare():
        with torch.inference_mode():
            torch.softmax(loaded.model(**enc).seq_relationship_logits, -1)

    nsp_ours, nsp_bare = interleaved_medians(ours, bare, repeats=15)
    mlm = models.load(BERT_PT.name, "masked")
    mask_rate.curve(mlm, "", [15], False, 1)  # warm-up
    times = []
    for _ in range(3):
        lm.cache.clear()
        JOBS.clear()  # the curve itself is kept as a job's result too: measure it computed
        started = time.perf_counter()
        result = mask_rate.curve(mlm, "", mask_rate.DEFAULT_RATES, False, 2)
        times.append(time.perf_counter() - started)
    assert result.passes == 320
    return [("NSP, one pair (vs BertForPreTraining forward)", nsp_ours, nsp_bare),
            ("mask-rate curve, 8 rates x 2 seeds x 20 sentences = 320 passes", statistics.median(times), None)]


def main() -> None:
    print(f"{'what':<66} {'ours (s)':>9} {'bare (s)':>9} {'ratio':>6}")
    for what, ours, bare in bench_pretraining():
        ratio = f"{ours / bare:.2f}" if bare else ""
        print(f"{what:<66} {ours:>9.4f} {bare if bare is not None else float('nan'):>9.4f} {ratio:>6}")


if __name__ == "__main__":
    main()
