"""The kinds of batched forward pass, by name: each kind's runner and its batch limits. The embedded batcher
(labs.core.work.lm) and the Ray Serve replicas (labs.core.work.ray_passes) both read them from here, so neither
imports the other for them; a lab registers a kind of its own in its compute module (`@register_pass`)."""

from __future__ import annotations

from typing import Callable

# Per kind of pass: its runner, run_batch(loaded, items) -> results in the same order, and limits: at
# most max_batch requests in one batch, and a budget on their cost (tokens, or tokens² for attention,
# whose weights grow with the square of the length) that bounds its memory.
RUNNERS: dict[str, Callable] = {}
LIMITS: dict[str, dict] = {}


def register_pass(kind: str, *, max_batch: int, max_cost: int):
    """Decorator: make `runner(loaded, items) -> list of results` the batched pass called `kind`. A lab
    registers its own kind in its compute module; a second runner under a taken name is refused."""
    def register(runner: Callable) -> Callable:
        if RUNNERS.get(kind, runner) is not runner:
            raise ValueError(f"a forward pass called {kind!r} is registered already")
        RUNNERS[kind] = runner
        LIMITS[kind] = dict(max_batch=max_batch, max_cost=max_cost)
        return runner
    return register
