"""Where a run's CPU goes: every process on the machine sampled every 3 s, the growth of its CPU time summed by
kind (Chromium's renderers, the app servers, Ray, the pytest workers and the Python they start…), written as JSON
while the run goes on. Started beside the suite, it says which part of the machine a change to the suite should
make cheaper (docs/measurements.md, "The test suite"):

    python -m tools.cpu_by_process 2700 cpu.json &   # for 45 minutes
    ./lab test --durations
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

import psutil

CHROMIUM_TYPES = ("renderer", "gpu-process", "utility")


def kind(process: psutil.Process) -> str | None:
    """The kind of process, from its command line; None when it is gone."""
    try:
        command = " ".join(process.cmdline())
        name = process.name()
    except psutil.Error:
        return None
    if "chrom" in command:
        return "chromium-" + next((t for t in CHROMIUM_TYPES if f"--type={t}" in command), "browser")
    if "playwright" in command and "node" in name:
        return "playwright-driver"
    if "app.py" in command or "zerogpu_emulator" in command:
        return "app-server"
    if "ray" in command or "raylet" in command or "gcs_server" in command:
        return "ray"
    if "postgres" in command:
        return "postgres"
    if "python" in name or "python" in command:
        return "python (pytest workers and what they start)"
    return "other"


def sample(seconds: float, out: Path, every: float = 3.0) -> Counter:
    seen: dict[tuple[int, float], list] = {}  # (pid, start) -> [kind, CPU seconds at the last sample]
    totals: Counter = Counter()
    end = time.time() + seconds
    while time.time() < end:
        for process in psutil.process_iter():
            try:
                times = process.cpu_times()
                cpu = times.user + times.system
                key = (process.pid, process.create_time())
                if key not in seen:  # a process older than the sampler counts from now; a new one from its start
                    seen[key] = [kind(process), cpu if time.time() - process.create_time() > every else 0.0]
                name, last = seen[key]
                if name:
                    totals[name] += cpu - last
                seen[key][1] = cpu
            except psutil.Error:
                continue
        out.write_text(json.dumps({k: round(v, 1) for k, v in totals.most_common()}, indent=1))
        time.sleep(every)
    return totals


if __name__ == "__main__":
    sample(float(sys.argv[1]), Path(sys.argv[2] if len(sys.argv) > 2 else "cpu.json"))
