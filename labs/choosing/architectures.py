"""Choosing a model, published architectures counted: GPT-1, GPT-2, GPT-3, BERT, ALBERT and T5 at their published
sizes, built on PyTorch's meta device and read back as the code runs them. Each is built from its config with
transformers' own model class on the meta device (shapes only: no weights, no memory, no download), then read back:

- the parameters, by part (embeddings, the layer stack, the rest), beside the figure the course gives;
- the floating-point operations of one forward pass over `tokens` tokens (torch's FlopCounterMode);
- one layer, in the order its modules run (forward hooks): a LayerNorm before each sub-layer (pre-norm) or after
  it (post-norm), how many of its weight matrices have a bias, and where the positions come from;
- how many layers run and how many distinct layer weights there are (ALBERT shares one layer's across all);
- ALBERT's factorised embedding, V×E + E×H, from its config and from its weight matrices' shapes.

GPT-3's code was never released: its published sizes run through GPT-2's code (the same decoder block)."""

from __future__ import annotations

import functools
import re
from dataclasses import asdict, dataclass, field

from labs.core.errors import BadInput, check_number
from labs.core.models.on_meta import build_on_meta
from labs.core.ui import course_quotes

DEFAULT_TOKENS, MAX_TOKENS = 128, 512  # 512: the shortest context here (GPT-1, BERT)
STACKS = ("h", "layer", "block", "albert_layer_groups")  # the name of the list that holds the layers


@dataclass(frozen=True)
class Architecture:
    name: str
    config: str  # a transformers config class
    sizes: dict  # the published sizes (the rest are the config class's defaults)
    model: str  # a transformers model class
    course: tuple[str, int] | None = None  # (quote id, cell): the course's parameter count, in its own table
    family: str = ""


ARCHITECTURES = {a.name: a for a in (
    Architecture("GPT-1", "OpenAIGPTConfig", {}, "OpenAIGPTModel", ("specs_gpt_params", 1), "decoder"),
    Architecture("GPT-2 small", "GPT2Config", {}, "GPT2Model", None, "decoder"),
    Architecture("GPT-2 XL", "GPT2Config", {"n_embd": 1600, "n_layer": 48, "n_head": 25}, "GPT2Model",
                 ("specs_gpt_params", 2), "decoder"),
    Architecture("GPT-3 175B", "GPT2Config", {"n_embd": 12288, "n_layer": 96, "n_head": 96, "n_positions": 2048},
                 "GPT2Model", ("specs_gpt_params", 3), "decoder"),
    Architecture("BERT-base", "BertConfig", {}, "BertModel", ("specs_bert_params", 1), "encoder"),
    Architecture("BERT-large", "BertConfig", {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
                                              "intermediate_size": 4096}, "BertModel", ("specs_bert_params", 2), "encoder"),
    Architecture("ALBERT-base", "AlbertConfig", {"hidden_size": 768, "num_attention_heads": 12,
                                                 "intermediate_size": 3072}, "AlbertModel", ("specs_albert_base", 3),
                 "encoder"),
    Architecture("ALBERT-xxlarge", "AlbertConfig", {}, "AlbertModel", ("specs_albert_xxlarge", 3), "encoder"),
    Architecture("T5-small", "T5Config", {}, "T5ForConditionalGeneration", ("specs_t5_small", 1), "encoder-decoder"),
    Architecture("T5-base", "T5Config", {"d_model": 768, "d_ff": 3072, "num_heads": 12, "num_layers": 12},
                 "T5ForConditionalGeneration", ("specs_t5_base", 1), "encoder-decoder"),
    Architecture("T5-large", "T5Config", {"d_model": 1024, "d_ff": 4096, "num_heads": 16, "num_layers": 24},
                 "T5ForConditionalGeneration", ("specs_t5_large", 1), "encoder-decoder"),
    Architecture("T5-11B", "T5Config", {"d_model": 1024, "d_ff": 65536, "d_kv": 128, "num_heads": 128,
                                        "num_layers": 24}, "T5ForConditionalGeneration", ("specs_t5_11b", 1),
                 "encoder-decoder"),
)}
GROUPS = {
    "gpt": ("GPT-1 → GPT-2 → GPT-3", ("GPT-1", "GPT-2 small", "GPT-2 XL", "GPT-3 175B")),
    "albert": ("BERT and ALBERT", ("BERT-base", "ALBERT-base", "BERT-large", "ALBERT-xxlarge")),
    "t5": ("T5's sizes", ("T5-small", "T5-base", "T5-large", "T5-11B")),
    "all": ("All of them", tuple(ARCHITECTURES)),
}
QUOTES = {k: course_quotes.get(f"specs_{k}") for k in (
    "gpt_params", "bert_params", "albert_factorised", "albert_slower", "t5_relative", "t5_prenorm", "t5_no_bias")}


@dataclass
class Reading:
    name: str
    family: str
    layers: int
    hidden: int
    heads: int
    context: int | None
    vocab: int
    params: int
    params_by_part: dict[str, int]
    course_params: str | None  # the course's own figure ("117M"), from its table
    course_cite: str | None
    flops: int  # one forward pass over `tokens` tokens (T5: as many in and out)
    tokens: int
    block_order: list[str]  # the first layer's norms and weight matrices, in the order they run
    norm: str  # "pre-norm" or "post-norm"
    matrices: int  # weight matrices in one layer
    with_bias: int
    positions: list[str]
    layer_weights: int  # distinct layer weights in the (first) stack
    layers_run: int  # layers the forward pass ran in that stack
    factorised: dict | None = None  # ALBERT's embedding: V×H against V×E + E×H
    notes: list[str] = field(default_factory=list)

    @property
    def course_ratio(self) -> float | None:
        """Counted here ÷ the course's figure."""
        return self.params / amount(self.course_params) if self.course_params else None

    def to_json(self) -> dict:
        return {**asdict(self), "course_ratio": self.course_ratio,
                "gflops_per_token": round(self.flops / self.tokens / 1e9, 3)}


def course_figure(arch: Architecture) -> tuple[str | None, str | None]:
    """The course's parameter count for this architecture: one cell of its table row, as printed."""
    if arch.course is None:
        return None, None
    quote = course_quotes.get(arch.course[0])
    cells = [c.strip() for c in re.split(r"[\t|]", quote.text) if c.strip()]
    return cells[arch.course[1]], quote.cite


def amount(text: str) -> float:
    """"117M" → 117e6, "1.5B" → 1.5e9, "175B" → 175e9 (the course's way of writing a count)."""
    number, unit = re.fullmatch(r"([\d.]+)\s*([MB])", text.strip()).groups()
    return float(number) * {"M": 1e6, "B": 1e9}[unit]


def build(arch: Architecture):
    return build_on_meta(arch.config, arch.model, arch.sizes)


def stacks(model) -> list[tuple[str, object]]:
    """The lists of layers (GPT's h, BERT's encoder.layer, ALBERT's layer groups, T5's encoder and decoder
    blocks): a ModuleList named in STACKS that is not inside another one."""
    import torch

    found = []
    for name, module in model.named_modules():
        if (isinstance(module, torch.nn.ModuleList) and name.rpartition(".")[2] in STACKS
                and not any(name.startswith(f + ".") for f, _ in found)):
            found.append((name, module))
    return found


def part_of(name: str, stack_names: list[str]) -> str:
    if any(name.startswith(s + ".") for s in stack_names):
        return "layers"
    if re.search(r"embed|^wte\.|^wpe\.|^shared\.|embedding_hidden_mapping", name):
        return "embeddings"
    return "other"


def is_matrix(module) -> bool:
    weight = getattr(module, "weight", None)
    return weight is not None and weight.dim() == 2 and "Embedding" not in type(module).__name__


def is_norm(module) -> bool:
    return "norm" in type(module).__name__.lower()


def run_once(model, config, tokens: int, stack):
    """One forward pass on the meta device, counting its FLOPs and recording, with forward hooks, the order the
    first layer's modules run in and how often each layer of `stack` (the model's first list of layers) runs."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    first = stack[0]
    order, runs, hooks = [], [0] * len(stack), []
    for name, module in first.named_modules():
        if not list(module.children()):
            hooks.append(module.register_forward_hook(lambda m, i, o, name=name: order.append((name, m))))
    for index, layer in enumerate(stack):
        hooks.append(layer.register_forward_hook(lambda m, i, o, index=index: runs.__setitem__(index, runs[index] + 1)))
    ids = torch.zeros(1, tokens, dtype=torch.long, device="meta")
    extra = {"decoder_input_ids": ids} if config.is_encoder_decoder else {}
    try:
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            model(input_ids=ids, **extra)
    finally:
        for hook in hooks:
            hook.remove()
    once = []  # the first time through (ALBERT runs its one layer again and again)
    for name, module in order:
        if once and name == once[0][0]:
            break
        once.append((name, module))
    return counter.get_total_flops(), once, runs


def positions_of(model) -> list[str]:
    found = []
    for name, module in model.named_modules():
        if re.search(r"(^|\.)(wpe|positions_embed|position_embeddings|relative_attention_bias)$", name):
            kind = "relative position bias" if "relative" in name else "learned absolute positions"
            found.append(f"{name} {tuple(module.weight.shape)}: {kind}")
    return found


def albert_embedding(model, config) -> dict:
    """ALBERT's embedding both ways: V×H if the table were as wide as the layers, V×E + E×H as it is (the
    projection's bias left out, as the textbook leaves it out); and the same from the weight matrices."""
    v, e, h = config.vocab_size, config.embedding_size, config.hidden_size
    weights = model.embeddings.word_embeddings.weight.numel() + model.encoder.embedding_hidden_mapping_in.weight.numel()
    return {"V": v, "E": e, "H": h, "tied": v * h, "factorised": v * e + e * h, "from_weights": weights}


@functools.lru_cache(maxsize=64)
def read(name: str, tokens: int = DEFAULT_TOKENS) -> Reading:
    """One architecture at its published sizes, counted and run once on the meta device."""
    arch = ARCHITECTURES[name]
    model, config = build(arch)
    found = stacks(model)  # the first holds the layers run_once watches
    stack_name, stack_names = found[0][0], [n for n, _ in found]
    flops, once, runs = run_once(model, config, tokens, found[0][1])
    by_part = {"embeddings": 0, "layers": 0, "other": 0}
    for pname, p in model.named_parameters():  # a tied weight (T5's shared table) once
        by_part[part_of(pname, stack_names)] += p.numel()
    steps = [(n, m) for n, m in once if is_norm(m) or is_matrix(m)]
    matrices = [m for _, m in steps if is_matrix(m)]
    course_params, cite = course_figure(arch)
    return Reading(
        name=name, family=arch.family, layers=config.num_hidden_layers, hidden=config.hidden_size,
        heads=config.num_attention_heads, context=getattr(config, "max_position_embeddings", None),
        vocab=config.vocab_size, params=sum(by_part.values()), params_by_part=by_part, course_params=course_params,
        course_cite=cite, flops=flops, tokens=tokens,
        block_order=[f"{n} ({type(m).__name__})" for n, m in steps],
        norm="pre-norm" if steps and is_norm(steps[0][1]) else "post-norm",
        matrices=len(matrices), with_bias=sum(getattr(m, "bias", None) is not None for m in matrices),
        positions=positions_of(model), layer_weights=len(runs), layers_run=sum(runs),
        factorised=albert_embedding(model, config) if arch.model == "AlbertModel" else None,
        notes=[f"The layers counted and run are {stack_name}'s"
               + (" (the encoder's; the decoder has as many)" if config.is_encoder_decoder else "") + "."]
        + (["GPT-3's code was never released: its published sizes run through GPT-2's code."]
           if name.startswith("GPT-3") else []))


def architecture_specs(group: str = "albert", tokens: int = DEFAULT_TOKENS) -> dict:
    """API: the architectures of one group ("gpt", "albert", "t5" or "all") at their published sizes, counted
    on the meta device, and one forward pass of `tokens` tokens through each."""
    if not isinstance(group, str) or group not in GROUPS:
        raise BadInput(f"Choose a group of architectures: {', '.join(GROUPS)}.")
    tokens = check_number(tokens, "Tokens", 1, MAX_TOKENS)
    if not tokens.is_integer():
        raise BadInput(f"Tokens must be a whole number from 1 to {MAX_TOKENS}.")
    tokens = int(tokens)
    label, names = GROUPS[group]
    return {"group": group, "label": label, "tokens": tokens, "rows": [read(n, tokens).to_json() for n in names],
            "quotes": {k: {"text": q.text, "cite": q.cite} for k, q in QUOTES.items()}}
