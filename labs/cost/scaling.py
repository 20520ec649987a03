"""Scaling laws: for a compute budget C, the Chinchilla compute-optimal model size N and data size D.

Hoffmann et al. 2022: at the compute-optimal point D ≈ 20·N (20 tokens per parameter; their table 3
gives 1B parameters → 20.2B tokens). With C ≈ 6·N·D = 6·N·(20·N) = 120·N²:
    N = √(C / 120),   D = 20·N.
(The rule is sometimes printed the wrong way round, "N ≈ 20 D": that would train 1B parameters on 50M tokens.)"""

from __future__ import annotations

import math

from labs.core.errors import check_number
from labs.cost import presets
from labs.cost.compute import training_flops

MIN_COMPUTE, MAX_COMPUTE = 1e6, 1e32


def optimal_split(compute: float) -> tuple[float, float]:
    """(N, D) with 6·N·D = compute and D = 20·N."""
    params = math.sqrt(compute / (6 * presets.TOKENS_PER_PARAM))
    return params, presets.TOKENS_PER_PARAM * params


def placed(name: str) -> dict:
    """A preset on the plot: its own N, D and compute, and the compute-optimal split of that compute."""
    model = presets.MODELS[name]
    compute = training_flops(model.params, model.tokens)
    params, tokens = optimal_split(compute)
    return {"model": name, "params": model.params, "tokens": model.tokens, "compute": compute,
            "tokens_per_param": model.tokens / model.params, "optimal_params": params, "optimal_tokens": tokens}


def chinchilla(compute: float) -> dict:
    """The compute-optimal N and D for a budget of `compute` FLOPs, and every preset placed beside it."""
    c = check_number(compute, "The compute budget C (FLOPs)", MIN_COMPUTE, MAX_COMPUTE,
                     hint=" (for example 3.15e23, GPT-3's training compute)")
    params, tokens = optimal_split(c)
    return {"compute": c, "params": params, "tokens": tokens, "tokens_per_param": tokens / params,
            "formula": f"N = √(C / 120) = √({c:.3g} / 120) = {params:.3g};  D = 20·N = {tokens:.3g}",
            "source": "Hoffmann et al. 2022 (Chinchilla): D ≈ 20·N; C ≈ 6·N·D",
            "models": [placed(name) for name in presets.MODELS]}
