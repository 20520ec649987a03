"""Attention, one transformer layer written out: the operations of a BERT, GPT-2 or Llama (SmolLM2) layer
as explicit tensor operations on the model's own weights, every intermediate returned by name.

"Inside the transformer" (steps.py) shows them; "What attention costs" (cost.py) times them. The tests
compare every intermediate with the model's own (forward hooks, output_attentions, output_hidden_states),
so what is shown is what the model computes. Shapes: one text, no batch axis: x is [n, hidden]; per-head
tensors are [heads, n, head_dim]. torch is imported inside the functions: the app starts without it."""

from __future__ import annotations

import math

from labs.core.errors import BadInput
from labs.core.work import lm

ARCHITECTURES = {"bert": "BERT", "gpt2": "GPT-2", "llama": "Llama"}
ACTIVATIONS = {"gelu": "GELU", "gelu_new": "GELU (tanh approximation)", "gelu_pytorch_tanh": "GELU (tanh approximation)",
               "silu": "SiLU", "relu": "ReLU"}


def architecture_of(loaded) -> str:
    """The model's architecture as this module writes it out, or BadInput naming the ones it knows."""
    config = loaded.model.config
    kind = getattr(config, "model_type", "")
    if kind == "bert" and getattr(config, "position_embedding_type", "absolute") != "absolute":
        kind = "bert with relative positions"
    rope = getattr(config, "rope_parameters", None) or {}
    if kind == "llama" and rope.get("rope_type", "default") != "default":
        kind = f"llama with {rope.get('rope_type')} rotary scaling"
    if kind not in ARCHITECTURES:
        raise BadInput(f"{loaded.name} is a {kind or 'model of unknown type'} model. The step-by-step view is "
                       f"written out for {', '.join(ARCHITECTURES.values())} layers (bert-base-uncased and "
                       "all-MiniLM-L6-v2 are BERT; gpt2; SmolLM2 is Llama).")
    act = getattr(config, "hidden_act", None) or getattr(config, "activation_function", None)
    if act not in ACTIVATIONS:
        raise BadInput(f"{loaded.name} uses the activation {act!r}, which this view does not write out.")
    return kind


def activate(name: str, x):
    from torch.nn import functional as F

    if name == "gelu":
        return F.gelu(x)  # exact: x · Φ(x)
    if name in ("gelu_new", "gelu_pytorch_tanh"):
        return F.gelu(x, approximate="tanh")
    return F.silu(x) if name == "silu" else F.relu(x)


def layer_norm(x, module):
    """(x − mean) / √(variance + ε) · γ + β over the hidden axis (variance without Bessel's correction)."""
    mean = x.mean(-1, keepdim=True)
    variance = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / (variance + module.eps).sqrt() * module.weight + module.bias


def rms_norm(x, module):
    """x / √(mean(x²) + ε) · g: no mean subtracted, no bias (Llama's RMSNorm)."""
    return x * (x.pow(2).mean(-1, keepdim=True) + module.variance_epsilon).rsqrt() * module.weight


def linear(x, module):
    """x Wᵀ + b for nn.Linear (W is [out, in]); GPT-2's Conv1D stores W as [in, out]: x W + b."""
    weight = module.weight if type(module).__name__ != "Conv1D" else module.weight.T
    out = x @ weight.T
    return out + module.bias if getattr(module, "bias", None) is not None else out


def split_heads(x, head_dim: int):
    """[n, heads · head_dim] -> [heads, n, head_dim]."""
    return x.view(x.shape[0], -1, head_dim).transpose(0, 1)


def attention_core(q, k, v, scale: float, causal: bool) -> dict:
    """softmax(QKᵀ · scale + mask) V for every head at once. q: [heads, n, d]; k, v: [kv_heads, n, d]
    (grouped-query attention: query head h reads key/value head h // (heads / kv_heads))."""
    import torch

    groups = q.shape[0] // k.shape[0]
    k, v = k.repeat_interleave(groups, dim=0), v.repeat_interleave(groups, dim=0)
    scores = q @ k.transpose(1, 2)  # [heads, n, n]
    masked = scores
    if causal:  # a token never sees a later one: −∞ before the softmax gives exactly 0 after it
        future = torch.ones(scores.shape[-2:], dtype=torch.bool, device=scores.device).triu(1)
        masked = scores.masked_fill(future, float("-inf"))
    weights = torch.softmax(masked * scale, dim=-1)
    return {"scores": scores, "masked": masked, "scaled": masked * scale, "weights": weights,
            "unscaled": torch.softmax(masked, dim=-1), "context": weights @ v}


def merge_heads(context):
    """[heads, n, d] -> [n, heads · d]: the heads side by side (concatenated)."""
    return context.transpose(0, 1).reshape(context.shape[1], -1)


class Layers:
    """One model's layers written out. Subclasses: Bert, Gpt2, Llama (see `for_model`)."""

    causal = False

    def __init__(self, loaded):
        self.loaded, self.config = loaded, loaded.model.config
        self.base = lm.encoder_of(loaded)
        self.heads = self.config.num_attention_heads
        self.kv_heads = getattr(self.config, "num_key_value_heads", None) or self.heads
        self.hidden = self.config.hidden_size
        self.head_dim = getattr(self.config, "head_dim", None) or self.hidden // self.heads
        self.act = getattr(self.config, "hidden_act", None) or getattr(self.config, "activation_function")
        self.intermediate = (getattr(self.config, "intermediate_size", None) or getattr(self.config, "n_inner", None)
                             or 4 * self.hidden)  # the feed-forward's width (GPT-2's n_inner None means 4 × hidden)

    @property
    def num_layers(self) -> int:
        return self.config.num_hidden_layers

    def scale(self, index: int) -> float:
        return 1 / math.sqrt(self.head_dim)

    def final_norm(self, h):
        """What the model applies after its last layer (BERT: nothing; GPT-2 and Llama: a last norm)."""
        return h

    def layer(self, index: int, x) -> dict:
        """Every intermediate of layer `index` for its input x ([n, hidden], the previous layer's output)."""
        parts = self.qkv(index, x)
        parts.update(attention_core(parts["q_heads"], parts["k_heads"], parts["v_heads"], self.scale(index),
                                    self.causal))
        parts["concat"] = merge_heads(parts["context"])
        parts.update(self.after_attention(index, x, parts["concat"]))
        parts.update(self.feed_forward(index, parts["attention_out"]))
        return parts


class Bert(Layers):
    """Post-norm: LayerNorm(x + Attention(x)), then LayerNorm(h + FFN(h)); learned positions and segments."""

    def embeddings(self, ids, segments) -> dict:
        import torch

        emb = self.base.embeddings
        positions = torch.arange(len(ids), device=ids.device)
        parts = {"token": emb.word_embeddings.weight[ids], "segment": emb.token_type_embeddings.weight[segments],
                 "position": emb.position_embeddings.weight[positions]}
        parts["sum"] = parts["token"] + parts["segment"] + parts["position"]
        parts["embedded"] = layer_norm(parts["sum"], emb.LayerNorm)
        return parts

    def qkv(self, index: int, x) -> dict:
        attention = self.base.encoder.layer[index].attention.self
        q, k, v = linear(x, attention.query), linear(x, attention.key), linear(x, attention.value)
        return {"q": q, "k": k, "v": v, **{f"{name}_heads": split_heads(t, self.head_dim)
                                           for name, t in (("q", q), ("k", k), ("v", v))}}

    def after_attention(self, index: int, x, concat) -> dict:
        output = self.base.encoder.layer[index].attention.output
        projected = linear(concat, output.dense)
        return {"projected": projected, "attention_out": layer_norm(x + projected, output.LayerNorm)}

    def feed_forward(self, index: int, h) -> dict:
        layer = self.base.encoder.layer[index]
        inner = activate(self.act, linear(h, layer.intermediate.dense))
        ffn = linear(inner, layer.output.dense)
        return {"ffn_inner": inner, "ffn": ffn, "out": layer_norm(h + ffn, layer.output.LayerNorm)}

    def mlm_logits(self, h):
        """The MLM head on final hidden states: dense, activation, LayerNorm, then the vocabulary layer."""
        head = getattr(self.loaded.model, "cls", None)
        if head is None or not hasattr(head, "predictions"):
            return None
        transform = head.predictions.transform
        t = layer_norm(activate(self.act, linear(h, transform.dense)), transform.LayerNorm)
        return linear(t, head.predictions.decoder)


class Gpt2(Layers):
    """Pre-norm: x + Attention(LayerNorm(x)), then h + FFN(LayerNorm(h)); learned positions, a causal mask."""

    causal = True

    def embeddings(self, ids, segments=None) -> dict:
        import torch

        token, position = self.base.wte.weight[ids], self.base.wpe.weight[torch.arange(len(ids), device=ids.device)]
        return {"token": token, "position": position, "sum": token + position, "embedded": token + position}

    def scale(self, index: int) -> float:
        scale = 1 / math.sqrt(self.head_dim) if self.config.scale_attn_weights else 1.0
        return scale / (index + 1) if self.config.scale_attn_by_inverse_layer_idx else scale

    def qkv(self, index: int, x) -> dict:
        block = self.base.h[index]
        normed = layer_norm(x, block.ln_1)
        q, k, v = linear(normed, block.attn.c_attn).split(self.hidden, dim=-1)
        return {"normed": normed, "q": q, "k": k, "v": v,
                **{f"{name}_heads": split_heads(t, self.head_dim) for name, t in (("q", q), ("k", k), ("v", v))}}

    def after_attention(self, index: int, x, concat) -> dict:
        projected = linear(concat, self.base.h[index].attn.c_proj)
        return {"projected": projected, "attention_out": x + projected}

    def feed_forward(self, index: int, h) -> dict:
        block = self.base.h[index]
        normed = layer_norm(h, block.ln_2)
        inner = activate(self.act, linear(normed, block.mlp.c_fc))
        ffn = linear(inner, block.mlp.c_proj)
        return {"ffn_normed": normed, "ffn_inner": inner, "ffn": ffn, "out": h + ffn}

    def final_norm(self, h):
        return layer_norm(h, self.base.ln_f)


class Llama(Layers):
    """Pre-norm with RMSNorm; rotary positions (no table: Q and K are rotated by their position); grouped-query
    attention; a causal mask; a gated feed-forward down(SiLU(gate(x)) · up(x))."""

    causal = True

    def embeddings(self, ids, segments=None) -> dict:
        token = self.base.embed_tokens.weight[ids]
        return {"token": token, "embedded": token}

    def rotary(self, n: int, device):
        """cos and sin of position · θ_i for each position and pair of dimensions, θ_i = base^(−2i/d)."""
        import torch

        d, base = self.head_dim, self.config.rope_parameters["rope_theta"]
        inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float32, device=device) / d))
        angles = torch.arange(n, dtype=torch.float32, device=device)[:, None] * inv_freq[None, :]  # [n, d/2]
        angles = torch.cat((angles, angles), dim=-1)  # [n, d]
        return angles.cos(), angles.sin()

    def qkv(self, index: int, x) -> dict:
        import torch

        attn = self.base.layers[index].self_attn
        normed = rms_norm(x, self.base.layers[index].input_layernorm)
        q, k, v = linear(normed, attn.q_proj), linear(normed, attn.k_proj), linear(normed, attn.v_proj)
        cos, sin = self.rotary(x.shape[0], x.device)

        def rotate(t):  # t · cos + rotate_half(t) · sin: each pair of dimensions turned by its angle
            half = t.shape[-1] // 2
            return t * cos + torch.cat((-t[..., half:], t[..., :half]), dim=-1) * sin

        q_heads, k_heads = split_heads(q, self.head_dim), split_heads(k, self.head_dim)
        return {"normed": normed, "q": q, "k": k, "v": v, "q_unrotated": q_heads, "k_unrotated": k_heads,
                "q_heads": rotate(q_heads), "k_heads": rotate(k_heads), "v_heads": split_heads(v, self.head_dim)}

    def after_attention(self, index: int, x, concat) -> dict:
        projected = linear(concat, self.base.layers[index].self_attn.o_proj)
        return {"projected": projected, "attention_out": x + projected}

    def feed_forward(self, index: int, h) -> dict:
        layer = self.base.layers[index]
        normed = rms_norm(h, layer.post_attention_layernorm)
        gate, up = linear(normed, layer.mlp.gate_proj), linear(normed, layer.mlp.up_proj)
        inner = activate(self.act, gate) * up
        ffn = linear(inner, layer.mlp.down_proj)
        return {"ffn_normed": normed, "ffn_gate": gate, "ffn_up": up, "ffn_inner": inner, "ffn": ffn, "out": h + ffn}

    def final_norm(self, h):
        return rms_norm(h, self.base.norm)


def for_model(loaded) -> Layers:
    return {"bert": Bert, "gpt2": Gpt2, "llama": Llama}[architecture_of(loaded)](loaded)
