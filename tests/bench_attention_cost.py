"""Benchmark of the Attention lab's new panels (to merge into tests/benchmarks.py), on the real offline models
and 2 threads: /forward_steps against the bare forward pass a student would write (output_hidden_states and
output_attentions), uncached; and the attention_cost curve itself, printed (the timings the tests never assert).

    python -m tests.bench_attention_cost
"""

from __future__ import annotations

import os

from tests.timing import interleaved_medians

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    import torch

    torch.set_num_threads(2)
    from labs.attention import cost, steps
    from labs.core.models import models
    from labs.core.work import lm

    for name, text, layer in ((models.MINILM_NAME, "The cat sat on the [MASK].", 3),
                              (models.SMOLLM2_NAME, "The capital of France is", 29)):
        loaded = models.load(name, *steps.FAMILIES)
        ids = torch.tensor([loaded.tokenizer(text)["input_ids"]])

        def ours():
            lm.cache.clear()
            steps.forward_steps(loaded, text, layer, 0)

        def bare():
            with torch.inference_mode():
                loaded.model(input_ids=ids, output_hidden_states=True, output_attentions=True)

        a, b = interleaved_medians(ours, bare, repeats=5)
        print(f"forward_steps {name}: {a * 1000:.0f} ms, bare forward {b * 1000:.0f} ms, ratio {a / b:.1f}")
    for name in (models.MINILM_NAME, models.SMOLLM2_NAME):
        result = cost.attention_cost(models.load(name, *cost.FAMILIES))
        print(f"\n{name} ({result.layers} layers, {result.heads} heads, hidden {result.hidden})")
        print("tokens  whole pass ms  one layer: n² part ms  projections ms  feed-forward ms  attn KB  ffn KB")
        for p in result.points:
            print(f"{p.tokens:6d} {p.forward_ms:14.1f} {p.attention_ms:22.2f} {p.projections_ms:15.2f} "
                  f"{p.ffn_ms:16.2f} {p.attention_bytes / 1024:8.0f} {p.ffn_bytes / 1024:7.0f}")
        print("limit:", result.limit.error or result.limit.note)


if __name__ == "__main__":
    main()
