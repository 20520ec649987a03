"""Fine-tune, bottleneck adapters (Houlsby et al., 2019): after each Transformer sub-layer's output projection
(the attention's and the feed-forward's), before the residual and LayerNorm, a small module h + W_up·GELU(W_down·h)
with W_down: d → m and W_up: m → d. Only the adapters and the task head train.

Written here because no library here offers it: peft 0.21.2 has no bottleneck adapter (its tuners are LoRA and
its variants, IA³, prompt, prefix and others), and AdapterHub's `adapters` 1.3.0 requires transformers ~=4.57.6
and does not import beside transformers 5.23 (`from huggingface_hub import HfFolder`: huggingface_hub 1.x has no
HfFolder). W_up starts at zero, so an inserted adapter is the identity until it trains (tests check the logits)."""

from __future__ import annotations

import re

from labs.core.errors import BadInput

# BERT-style layers (BERT, MiniLM): each layer's attention output and feed-forward output projections
SUBLAYER_OUTPUTS = re.compile(r"(^|\.)layer\.\d+\.(attention\.output|output)\.dense$")
HOULSBY = "Adapters (Houlsby et al., 2019)"


def adapter_params(hidden: int, size: int) -> int:
    """One adapter's numbers: W_down (m × d) and its bias (m), W_up (d × m) and its bias (d)."""
    return 2 * hidden * size + hidden + size


def expected_params(layers: int, hidden: int, size: int) -> int:
    """Two adapters per layer (after attention, after the feed-forward)."""
    return 2 * layers * adapter_params(hidden, size)


def _modules():
    import torch

    class Bottleneck(torch.nn.Module):
        def __init__(self, hidden: int, size: int):
            super().__init__()
            self.down, self.up = torch.nn.Linear(hidden, size), torch.nn.Linear(size, hidden)
            torch.nn.init.zeros_(self.up.weight)  # the identity at the start: the pre-trained model unchanged
            torch.nn.init.zeros_(self.up.bias)

        def forward(self, h):
            return h + self.up(torch.nn.functional.gelu(self.down(h)))

    class WithAdapter(torch.nn.Module):
        """A sub-layer's output projection, then its adapter (the residual and LayerNorm come after, as before)."""

        def __init__(self, dense, adapter):
            super().__init__()
            self.dense, self.adapter = dense, adapter

        def forward(self, x):
            return self.adapter(self.dense(x))

    return Bottleneck, WithAdapter


def insert(model, size: int):
    """Put an adapter of bottleneck size `size` after every sub-layer output of a BERT-style model; freeze every
    other weight but the task head's. Returns the model (changed in place)."""
    Bottleneck, WithAdapter = _modules()
    targets = [name for name, _ in model.named_modules() if SUBLAYER_OUTPUTS.search(name)]
    if not targets:
        raise BadInput("Bottleneck adapters are inserted here into BERT-style layers (BERT, MiniLM); this model "
                       "has none.")
    for param in model.parameters():
        param.requires_grad_(False)
    for name in targets:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name)
        dense = getattr(parent, child)
        adapter = Bottleneck(dense.out_features, size).to(dense.weight.device, dense.weight.dtype)
        setattr(parent, child, WithAdapter(dense, adapter))
    for name, param in model.named_parameters():
        if ".adapter." in name or any(part in ("pooler", "classifier") for part in name.split(".")):
            param.requires_grad_(True)
    return model


def counts(model) -> dict:
    """{"adapter": the adapters' numbers, "head": the task head's, "total"} of a model with adapters inserted."""
    adapter = sum(p.numel() for n, p in model.named_parameters() if ".adapter." in n)
    head = sum(p.numel() for n, p in model.named_parameters()
               if any(part in ("pooler", "classifier") for part in n.split(".")))
    return {"adapter": adapter, "head": head, "total": sum(p.numel() for p in model.parameters())}


def bert_base_counts(size: int = 64) -> dict:
    """The count on BERT-Base's architecture (BertConfig's defaults: 12 layers, 768 wide), built on the meta
    device: no weights needed, so it needs no download. Percent of the model without adapters."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    with torch.device("meta"):
        model = BertForSequenceClassification(BertConfig(num_labels=2))
        base = sum(p.numel() for p in model.parameters())
        found = counts(insert(model, size))
    return {"size": size, "adapter_params": found["adapter"], "base_params": base,
            "percent": 100 * found["adapter"] / base}
