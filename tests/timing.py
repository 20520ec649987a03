"""Timing helpers shared by the benchmarks: medians after a warm-up, and two functions timed alternately."""

from __future__ import annotations

import statistics
import time


def median_seconds(fn, repeats: int = 15, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def interleaved_medians(ours, theirs, repeats: int = 9, warmup: int = 1) -> tuple[float, float]:
    """Medians of two functions run alternately, so drift in the machine's load hits both alike."""
    for _ in range(warmup):
        ours(), theirs()
    times: tuple[list, list] = ([], [])
    for _ in range(repeats):
        for fn, bucket in ((ours, times[0]), (theirs, times[1])):
            started = time.perf_counter()
            fn()
            bucket.append(time.perf_counter() - started)
    return statistics.median(times[0]), statistics.median(times[1])
