"""Attention, inside the transformer: the steps of each architecture in reading order, as rows
(key, the intermediate's name in labs.attention.layers, which head it is cut to, the step's name, its formula).
Names and formulas carry the model's own sizes ({H} hidden, {d} per head, {heads}, {kv} key/value heads,
{I} the feed-forward's width, {act} its activation) and the chosen head {h} (and its key/value head {g})."""

from __future__ import annotations

# pick: "" the whole tensor, "head" the chosen head's slice, "group" its key/value head's (grouped-query)
ATTENTION = (
    ("scores", "scores", "head", "Scores, head {h}", "Q_{h} K_{h}ᵀ: one row per query token, one column per key"),
    ("scaled", "scaled", "head", "Divided by √d_k", "Q_{h} K_{h}ᵀ / √{d} (= × {scale:.4f})"),
    ("unscaled", "unscaled", "head", "Softmax without the division (for comparison)", "softmax(Q_{h} K_{h}ᵀ)"),
    ("weights", "weights", "head", "Attention weights, head {h}", "A = softmax(Q_{h} K_{h}ᵀ / √{d}): rows sum to 1"),
    ("context", "context", "head", "Weighted sum of the values", "A V_{h}"),
    ("concat", "concat", "", "All {heads} heads concatenated", "[A₀V₀ | A₁V₁ | … ]: {heads} × {d} = {H} columns"),
)
CAUSAL_ATTENTION = (ATTENTION[0],
                    ("masked", "masked", "head", "Causal mask", "scores above the diagonal (later tokens) → −∞"),
                    *ATTENTION[1:])

BERT = (
    ("token", "token", "", "Token embeddings", "E_token[id]: one row of the {V}-row table per token"),
    ("segment", "segment", "", "Segment embeddings", "E_segment[0 for sentence A, 1 for sentence B]"),
    ("position", "position", "", "Position embeddings", "E_position[0 … n−1]: learned, one row per position"),
    ("sum", "sum", "", "Their sum", "e = token + segment + position"),
    ("embedded", "embedded", "", "LayerNorm", "h₀ = LayerNorm(e)"),
    ("x", "x", "", "Layer {layer}'s input", "x = h_{layer}: the output of the layer below"),
    ("q", "q", "", "Queries, all heads", "Q = x W_Q + b_Q   ({H} × {H})"),
    ("k", "k", "", "Keys, all heads", "K = x W_K + b_K"),
    ("v", "v", "", "Values, all heads", "V = x W_V + b_V"),
    ("q_head", "q_heads", "head", "Head {h}'s queries", "Q_{h}: columns {h}·{d} … of Q (d_k = {d})"),
    ("k_head", "k_heads", "head", "Head {h}'s keys", "K_{h}"),
    ("v_head", "v_heads", "head", "Head {h}'s values", "V_{h}"),
    *ATTENTION,
    ("projected", "projected", "", "Output projection", "concat W_O + b_O"),
    ("attention_out", "attention_out", "", "Residual + LayerNorm", "x′ = LayerNorm(x + attention output)"),
    ("ffn_inner", "ffn_inner", "", "Feed-forward: first layer and {act}", "{act}(x′ W₁ + b₁)   ({H} → {I})"),
    ("ffn", "ffn", "", "Feed-forward: second layer", "… W₂ + b₂   ({I} → {H})"),
    ("out", "out", "", "Residual + LayerNorm: the layer's output", "h_{next} = LayerNorm(x′ + FFN(x′))"),
)

GPT2 = (
    ("token", "token", "", "Token embeddings", "E_token[id]: one row of the {V}-row table per token"),
    ("position", "position", "", "Position embeddings", "E_position[0 … n−1]: learned, one row per position"),
    ("embedded", "embedded", "", "Their sum (no norm here)", "h₀ = token + position"),
    ("x", "x", "", "Layer {layer}'s input", "x = h_{layer}: the output of the layer below"),
    ("normed", "normed", "", "LayerNorm first (pre-norm)", "LayerNorm(x)"),
    ("q", "q", "", "Queries, all heads", "Q = LayerNorm(x) W_Q + b_Q (one matrix gives Q, K and V)"),
    ("k", "k", "", "Keys, all heads", "K = LayerNorm(x) W_K + b_K"),
    ("v", "v", "", "Values, all heads", "V = LayerNorm(x) W_V + b_V"),
    ("q_head", "q_heads", "head", "Head {h}'s queries", "Q_{h} (d_k = {d})"),
    ("k_head", "k_heads", "head", "Head {h}'s keys", "K_{h}"),
    ("v_head", "v_heads", "head", "Head {h}'s values", "V_{h}"),
    *CAUSAL_ATTENTION,
    ("projected", "projected", "", "Output projection", "concat W_O + b_O"),
    ("attention_out", "attention_out", "", "Residual (no norm after: pre-norm)", "x′ = x + attention output"),
    ("ffn_normed", "ffn_normed", "", "LayerNorm before the feed-forward", "LayerNorm(x′)"),
    ("ffn_inner", "ffn_inner", "", "Feed-forward: first layer and {act}", "{act}(LayerNorm(x′) W₁ + b₁)   ({H} → {I})"),
    ("ffn", "ffn", "", "Feed-forward: second layer", "… W₂ + b₂   ({I} → {H})"),
    ("out", "out", "", "Residual: the layer's output", "h_{next} = x′ + FFN(LayerNorm(x′))"),
)

LLAMA = (
    ("embedded", "embedded", "", "Token embeddings (no position table)", "h₀ = E_token[id]: positions enter by rotation, below"),
    ("x", "x", "", "Layer {layer}'s input", "x = h_{layer}: the output of the layer below"),
    ("normed", "normed", "", "RMSNorm first (pre-norm)", "x / √(mean(x²) + ε) · g"),
    ("q", "q", "", "Queries, all {heads} heads", "Q = RMSNorm(x) W_Q   ({H} → {heads} × {d})"),
    ("k", "k", "", "Keys: {kv} key/value heads only", "K = RMSNorm(x) W_K   ({H} → {kv} × {d})"),
    ("v", "v", "", "Values: {kv} key/value heads", "V = RMSNorm(x) W_V   ({H} → {kv} × {d})"),
    ("q_head", "q_unrotated", "head", "Head {h}'s queries", "Q_{h} (d_k = {d})"),
    ("k_head", "k_unrotated", "group", "Head {h}'s keys: key/value head {g}", "K_{g}, shared by {groups} query heads"),
    ("q_rotated", "q_heads", "head", "Queries rotated by position (RoPE)", "Q_{h} · cos(pθ) + rotate_half(Q_{h}) · sin(pθ)"),
    ("k_rotated", "k_heads", "group", "Keys rotated by position (RoPE)", "K_{g} · cos(pθ) + rotate_half(K_{g}) · sin(pθ)"),
    ("v_head", "v_heads", "group", "Head {h}'s values: key/value head {g}", "V_{g}"),
    *CAUSAL_ATTENTION,
    ("projected", "projected", "", "Output projection", "concat W_O"),
    ("attention_out", "attention_out", "", "Residual (no norm after: pre-norm)", "x′ = x + attention output"),
    ("ffn_normed", "ffn_normed", "", "RMSNorm before the feed-forward", "RMSNorm(x′)"),
    ("ffn_gate", "ffn_gate", "", "Feed-forward: gate", "RMSNorm(x′) W_gate   ({H} → {I})"),
    ("ffn_up", "ffn_up", "", "Feed-forward: up", "RMSNorm(x′) W_up   ({H} → {I})"),
    ("ffn_inner", "ffn_inner", "", "{act}(gate) · up", "element by element"),
    ("ffn", "ffn", "", "Feed-forward: down", "… W_down   ({I} → {H})"),
    ("out", "out", "", "Residual: the layer's output", "h_{next} = x′ + FFN(RMSNorm(x′))"),
)

PARTS = {"bert": BERT, "gpt2": GPT2, "llama": LLAMA}


def describe(template: str, sizes: dict, head: int, group: int, layer: int) -> str:
    """A step's name or formula with the model's sizes, the chosen layer and head (and its key/value head)."""
    return template.format(H=sizes["hidden"], d=sizes["head_dim"], heads=sizes["heads"], kv=sizes["kv_heads"],
                           I=sizes["intermediate"], V=f"{sizes['vocab']:,}", act=sizes["activation"].split(" ")[0],
                           scale=sizes["scale"], h=head, g=group, groups=sizes["heads"] // sizes["kv_heads"],
                           layer=layer, next=layer + 1)
