"""Memory for training and inference: bytes per parameter (weights, gradients, an fp32 master copy,
the optimizer's states), activations for a batch × length, and full fine-tuning vs LoRA.

Usual accounting (Rajbhandari et al. 2020, ZeRO): mixed-precision Adam keeps 16-bit weights (2 bytes)
and gradients (2), an fp32 master copy (4) and Adam's two fp32 moments (4 + 4) = 16 bytes per parameter.
Activations (Korthikanti et al. 2022): s·b·h·(34 + 5·a·s/h) bytes per layer with 16-bit activations
(twice that in fp32); approximate for models with a gated (SwiGLU) MLP. LoRA (Hu et al. 2021) trains
B·A beside each adapted d_out × d_in weight: r·(d_in + d_out) parameters per matrix."""

from __future__ import annotations

from labs.core.errors import BadInput, check_choice, check_int
from labs.cost import presets
from labs.cost.compute import check_params

OPTIMIZERS = ("adam", "sgd")
# bytes per parameter: (weights, gradients, master copy) by precision; optimizer states by (optimizer, precision)
PARTS = {"fp32": (4, 4, 0), "fp16": (2, 2, 0), "bf16": (2, 2, 0), "mixed": (2, 2, 4)}
STATES = {"adam": {"fp32": 8, "fp16": 4, "bf16": 4, "mixed": 8}, "sgd": {p: 0 for p in PARTS}}
MAX_RANK, MAX_BATCH, MAX_LENGTH = 4096, 100_000, 1_000_000


def bytes_per_param(precision: str, optimizer: str) -> dict:
    weights, grads, master = PARTS[precision]
    states = STATES[optimizer][precision]
    return {"weights": weights, "gradients": grads, "master_copy": master, "optimizer": states,
            "total": weights + grads + master + states}


def adapted_matrices(arch: presets.Architecture, targets: str) -> list[tuple[str, int, int]]:
    """(name, d_in, d_out) of every matrix LoRA adapts in one layer."""
    h = arch.hidden
    attention = {"query": (h, h), "key": (h, arch.kv_dim), "value": (h, arch.kv_dim), "output": (h, h)}
    names = {"query, value": ("query", "value")}.get(targets, ("query", "key", "value", "output"))
    matrices = [(name, *attention[name]) for name in names]
    if targets == "all linear":
        mlp = [("up", h, arch.ffn), ("down", arch.ffn, h)] + ([("gate", h, arch.ffn)] if arch.gated else [])
        matrices += mlp
    return matrices


def lora_params(arch: presets.Architecture, rank: int, targets: str = "query, value") -> int:
    """LoRA's trainable parameters: r·(d_in + d_out) per adapted matrix, in every layer."""
    return arch.layers * sum(rank * (d_in + d_out) for _, d_in, d_out in adapted_matrices(arch, targets))


def activation_bytes(arch: presets.Architecture, batch: int, length: int, precision: str) -> float:
    """Korthikanti et al. 2022: s·b·h·(34 + 5·a·s/h) bytes per layer (16-bit), × 2 in fp32."""
    s, b, h, a = length, batch, arch.hidden, arch.heads
    per_layer = s * b * h * (34 + 5 * a * s / h)
    return arch.layers * per_layer * (2 if precision == "fp32" else 1)


def part_bytes(params: float, per_param: dict) -> dict:
    return {key: params * value for key, value in per_param.items() if key != "total"}


def check_memory_inputs(precision, optimizer, lora_rank, batch, length, model, lora_targets):
    precision = check_choice(precision, presets.PRECISIONS, "The precision")
    optimizer = check_choice(optimizer, OPTIMIZERS, "The optimizer")
    rank = check_int(lora_rank, "The LoRA rank r (0 = full fine-tuning)", 0, MAX_RANK)
    batch = check_int(batch, "The batch size", 1, MAX_BATCH)
    length = check_int(length, "The sequence length", 1, MAX_LENGTH)
    arch = presets.ARCHITECTURES[check_choice(model, tuple(presets.ARCHITECTURES), "The model")]
    targets = check_choice(lora_targets, presets.LORA_TARGETS, "The LoRA matrices")
    return precision, optimizer, rank, batch, length, arch, targets


def memory(params: float, precision: str = "mixed", optimizer: str = "adam", lora_rank: int = 0, batch: int = 8,
           length: int = 512, model: str = presets.DEFAULT_ARCHITECTURE, lora_targets: str = "query, value") -> dict:
    """Bytes by part and in total: full training, LoRA (when lora_rank > 0) and inference. `params` counts
    the weights; `model` gives the shape (layers, width, heads) for activations and LoRA's matrices."""
    n = check_params(params)
    precision, optimizer, rank, batch, length, arch, targets = check_memory_inputs(
        precision, optimizer, lora_rank, batch, length, model, lora_targets)
    per_param = bytes_per_param(precision, optimizer)
    activations = activation_bytes(arch, batch, length, precision)
    full = {**part_bytes(n, per_param), "activations": activations}
    full["total"] = sum(full.values())
    weight_bytes = per_param["weights"]
    kv_cache = 2 * arch.layers * batch * length * arch.kv_dim * weight_bytes
    result = {"params": n, "precision": precision, "optimizer": optimizer, "model": arch.name, "batch": batch,
              "length": length, "bytes_per_param": per_param, "training": full,
              "inference": {"weights": n * weight_bytes, "kv_cache": kv_cache, "total": n * weight_bytes + kv_cache},
              "lora": None}
    if rank:
        trainable = lora_params(arch, rank, targets)
        if trainable >= n:
            raise BadInput(f"LoRA with rank {rank} would add {trainable:,} parameters, more than the model's {n:,.0f}: "
                           "pick a smaller rank.")
        lora = {**part_bytes(trainable, per_param), "activations": activations}
        lora["weights"] += n * weight_bytes  # the frozen model, beside the adapters' own weights
        lora["total"] = sum(lora.values())
        result["lora"] = {"rank": rank, "targets": targets, "trainable_params": trainable,
                          "trainable_fraction": trainable / n, "bytes": lora,
                          "matrices": [{"name": m, "d_in": i, "d_out": o, "params_per_layer": rank * (i + o)}
                                       for m, i, o in adapted_matrices(arch, targets)],
                          "formula": f"{arch.layers} layers × Σ r·(d_in + d_out) = {trainable:,}"}
    return result


def architecture_params(name: str) -> float:
    """The published parameter count of a memory preset (training presets' N, or MiniLM's)."""
    model = presets.MODELS.get(name)
    return model.params if model else presets.ARCHITECTURE_PARAMS[name]
