"""A model built from its config on PyTorch's meta device: every module and parameter shape, no memory and no
download. How the labs count a published model's parameters that this server cannot (or need not) load."""

from __future__ import annotations


def build_on_meta(config_class: str, model_class: str, sizes: dict):
    """(model, config): transformers' `config_class(**sizes)` and `model_class(config)` built on the meta
    device, in eval mode."""
    import torch
    import transformers

    config = getattr(transformers, config_class)(**sizes)
    with torch.device("meta"):
        return getattr(transformers, model_class)(config).eval(), config
