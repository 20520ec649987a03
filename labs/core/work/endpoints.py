"""An API endpoint, declared with its compute: each lab lists its own in `labs/<lab>/endpoints.py`.

    ENDPOINTS = (
        Endpoint("fill_mask", compute.fill_mask_json, "fill_mask(text, model, top_k) -> {...}"),
    )

One list per lab, imported by app.py (core never imports a lab) and written nowhere else: app.py registers every
endpoint of the labs it is built with (`ui.register`) and hands them to `services`, which makes their functions
callable by name in this process (the workbook calls the Fine-tune lab's run without importing it);
tools/api_docs.py writes docs/api.md from app.py's list. No Gradio here: a lab's endpoints module imports its
compute and this, nothing else."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Endpoint:
    """A pure-JSON endpoint at /<name>: its compute function, whose type hints describe the inputs (it checks
    every value itself: an API caller can send anything), and what it returns."""

    name: str
    fn: Callable
    description: str
    # The caller's session is the student a job is asked for (labs.core.work.jobs: one waiting job per student).
    per_student: bool = False
    queue: bool = True  # False: a few milliseconds of work that skips Gradio's queue (its bookkeeping costs more)
    concurrency_id: str | None = None  # endpoints (and events) with one id share one concurrency limit
    concurrency_limit: int | None | Literal["default"] = "default"  # None: no limit; "default": the app's

