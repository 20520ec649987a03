"""Attention, inside the transformer step by step: the student's sentence through the real model, every
step with its tensor's shape and a few of its numbers. BERT (and MiniLM): the token, segment and position
embedding rows, their sum and LayerNorm; then one layer and one head: Q, K, V, QKᵀ, ÷ √d_k (and the
softmax without it), the softmax, the weighted sum of V, the heads concatenated and projected, residual +
LayerNorm, the feed-forward; and the MLM head at a [MASK]. GPT-2 and Llama (SmolLM2): the same for a
causal LM, followed at one position, with what differs said as such (rotary positions, RMSNorm,
grouped-query attention, the causal mask).

preprocess (the Attention lab's own tokenization: encode) → forward (the model's hidden states, one
registered batched pass; the attention weights are `/attention`'s own, the same cached pass) → the layer
written out on the model's weights (labs.attention.layers) → checks: the embeddings, the attention
weights, the layer's output and the predictions are compared live with the model's own."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from labs.attention import compute, layers
from labs.attention.step_table import PARTS, describe
from labs.core.errors import BadInput, check_int, check_text
from labs.core.models import models
from labs.core.work import lm

FAMILIES = ("masked", "encoder", "causal")
MAX_TOKENS = 64
EXAMPLE = "The cat sat on the [MASK]."
CAUSAL_EXAMPLE = "The cat sat on the"
SHOWN_VALUES = 8  # "a few numbers": the first values of the followed token's row
TOP_K = 5


@dataclass(frozen=True)
class Check:
    """One step compared with the model's own tensor."""
    against: str
    max_abs_diff: float

    def to_json(self) -> dict:
        return {"against": self.against, "max_abs_diff": self.max_abs_diff}


@dataclass
class Step:
    key: str
    name: str
    formula: str
    values: np.ndarray  # the whole tensor ([n, width] or [n, n]), float32; −∞ where a mask put it
    check: Check | None = None

    @property
    def shape(self) -> list[int]:
        return list(self.values.shape)

    def row(self, position: int, count: int = SHOWN_VALUES) -> list[float | None]:
        """The followed token's first values (a 1-row tensor has one row); None stands for −∞."""
        values = self.values[min(position, len(self.values) - 1)][:count] if self.values.ndim > 1 else \
            self.values[:count]
        return [round(float(v), 4) if np.isfinite(v) else None for v in values]

    def to_json(self, position: int) -> dict:
        return {"key": self.key, "name": self.name, "formula": self.formula, "shape": self.shape,
                "row": self.row(position), "check": self.check.to_json() if self.check else None}


@dataclass
class ForwardSteps:
    model: str
    source: str
    family: str
    architecture: str
    tokens: list[str]
    ids: list[int]
    segments: list[int]
    layer: int
    head: int
    position: int  # the token whose row every step shows (a causal LM: the query position)
    sizes: dict
    steps: list[Step]
    predictions: list[dict] | None  # MLM head at the [MASK], or the next token after `position`
    prediction_check: Check | None
    prediction_note: str
    notes: list[str] = field(default_factory=list)
    attention: np.ndarray | None = None  # /attention's own weights for this layer and head (the shared pass)

    def step(self, key: str) -> Step:
        return next(s for s in self.steps if s.key == key)

    @property
    def checks(self) -> list[Step]:
        return [s for s in self.steps if s.check is not None]

    def to_json(self) -> dict:
        def matrix(key):
            return [[float(v) if np.isfinite(v) else None for v in row] for row in self.step(key).values]

        return {"model": self.model, "source": self.source, "family": self.family,
                "architecture": self.architecture, "tokens": self.tokens, "ids": self.ids,
                "segments": self.segments, "layer": self.layer, "head": self.head, "position": self.position,
                "sizes": self.sizes, "steps": [s.to_json(self.position) for s in self.steps],
                "scores": matrix("scores"), "scaled_scores": matrix("scaled"),
                "attention": self.attention.tolist(), "attention_unscaled": matrix("unscaled"),
                "predictions": self.predictions,
                "prediction_check": self.prediction_check.to_json() if self.prediction_check else None,
                "prediction_note": self.prediction_note, "notes": self.notes}


# ---------------------------------------------------------------- the model's own hidden states


@lm.register_pass("steps_hidden", max_batch=8, max_cost=8 * MAX_TOKENS)
def _run_hidden(loaded: models.LoadedModel, items: list[tuple]) -> list[np.ndarray]:
    """output_hidden_states for (ids, segment ids or None): [layers + 1, n, hidden] per item."""
    import torch

    with_segments = any(segments is not None for _, segments in items)
    inputs = lm.padded(loaded, [i for i, _ in items], [s for _, s in items] if with_segments else None)
    with torch.inference_mode():
        out = lm.encoder_of(loaded)(**inputs, output_hidden_states=True)
    states = torch.stack(out.hidden_states, dim=1).float().cpu().numpy()  # [batch, layers + 1, n, hidden]
    results = []
    for b, (ids, _) in enumerate(items):
        state = np.array(states[b, :, :len(ids)], copy=True)
        state.setflags(write=False)  # shared by every student who asks for the same text
        results.append(state)
    return results


def model_hidden_states(loaded, ids: list[int], segments: list[int] | None) -> np.ndarray:
    item = (tuple(ids), tuple(segments) if segments is not None else None)
    return lm.submit(loaded, "steps_hidden", item, len(ids))


# ---------------------------------------------------------------- preprocess


def sizes_of(arch: layers.Layers) -> dict:
    config = arch.config
    table = getattr(config, "max_position_embeddings", None)
    return {"hidden": arch.hidden, "layers": arch.num_layers, "heads": arch.heads, "kv_heads": arch.kv_heads,
            "head_dim": arch.head_dim, "intermediate": arch.intermediate, "vocab": config.vocab_size,
            "max_positions": table, "activation": layers.ACTIVATIONS[arch.act], "scale": arch.scale(0)}


def choose_position(tokenizer, ids: list[int], position, causal: bool) -> int:
    """The followed token: as asked (−1 = the last), else the first [MASK], else the last real token."""
    n = len(ids)
    if position not in (None, ""):
        position = check_int(position, "The position (counted from 0; −1 for the last token)", -n, n - 1)
        return position % n
    mask = getattr(tokenizer, "mask_token_id", None)
    if not causal and mask is not None and mask in ids:
        return ids.index(mask)
    last = n - 1
    if not causal and ids[last] == getattr(tokenizer, "sep_token_id", None) and n > 2:
        last -= 1  # BERT's last real token is before [SEP]
    return last


def checked_layer_head(arch: layers.Layers, name: str, layer, head) -> tuple[int, int]:
    layer = check_int(layer, "The layer (counted from 0)")
    head = check_int(head, "The head (counted from 0)")
    if not 0 <= layer < arch.num_layers:
        raise BadInput(f"{name} has layers 0–{arch.num_layers - 1}; layer {layer} does not exist.")
    if not 0 <= head < arch.heads:
        raise BadInput(f"{name} has heads 0–{arch.heads - 1}; head {head} does not exist.")
    return layer, head


# ---------------------------------------------------------------- the steps


def largest_diff(mine, theirs) -> float:
    return float(np.max(np.abs(np.asarray(mine, dtype=np.float64) - np.asarray(theirs, dtype=np.float64))))


def build_steps(arch: layers.Layers, kind: str, parts: dict, sizes: dict, layer: int, head: int) -> list[Step]:
    """The architecture's steps in reading order (step_table), each its tensor for the chosen head."""
    group = head // (arch.heads // arch.kv_heads)
    steps = []
    for key, part, pick, name, formula in PARTS[kind]:
        tensor = parts[part]
        if pick:
            tensor = tensor[head if pick == "head" else group]
        steps.append(Step(key, describe(name, sizes, head, group, layer), describe(formula, sizes, head, group, layer),
                          tensor.detach().float().cpu().numpy()))
    return steps


def run_layer(arch: layers.Layers, loaded, ids, segments, hidden: np.ndarray, layer: int) -> dict:
    """Every intermediate: the embeddings written out, then layer `layer` on the model's own input to it."""
    import torch

    device = loaded.device
    ids_t = torch.tensor(ids, device=device)
    segments_t = torch.tensor(segments if segments is not None else [0] * len(ids), device=device)
    with torch.inference_mode():
        parts = arch.embeddings(ids_t, segments_t)
        x = torch.tensor(np.array(hidden[layer]), device=device)  # the model's own input to the layer
        parts["x"] = x
        parts.update(arch.layer(layer, x))
        parts["final"] = arch.final_norm(parts["out"]) if layer == arch.num_layers - 1 else parts["out"]
    return parts


def add_checks(r: ForwardSteps, parts: dict, hidden: np.ndarray, last: bool) -> None:
    """The steps the model's own outputs show, compared live (the tests compare every other step too)."""
    r.step("embedded").check = Check("the model's output_hidden_states[0] (its embeddings output)",
                                     largest_diff(parts["embedded"].cpu().numpy(), hidden[0]))
    r.step("weights").check = Check(f"/attention's weights for layer {r.layer}, head {r.head} "
                                    "(the model's output_attentions)", largest_diff(r.step("weights").values,
                                                                                    r.attention))
    final = parts["final"].cpu().numpy()
    after = " (after the model's final norm, which output_hidden_states applies to the last layer)" \
        if last and r.family == "causal" else ""
    r.step("out").check = Check(f"the model's output_hidden_states[{r.layer + 1}]{after}",
                                largest_diff(final, hidden[r.layer + 1]))


def forward_steps(loaded, text, layer=0, head=0, position=None, text_b="") -> ForwardSteps:
    """Every step of one layer and head for a text (or a BERT pair), checked against the model's own."""
    loaded = models.load(loaded, *FAMILIES)
    causal = loaded.family == "causal"
    text = check_text(text, CAUSAL_EXAMPLE if causal else EXAMPLE, what="sentence")
    text_b = check_text(text_b if text_b is not None else "", EXAMPLE, what="sentence B", allow_empty=True)
    arch = layers.for_model(loaded)
    kind = layers.architecture_of(loaded)
    layer, head = checked_layer_head(arch, loaded.name, layer, head)
    ids, segments, b_start = compute.encode(loaded.tokenizer, text, text_b)
    lm.check_length(ids, MAX_TOKENS, "Your text (with its special tokens)")
    with_segments = kind == "bert" and b_start is not None and "token_type_ids" in loaded.tokenizer.model_input_names
    hidden = model_hidden_states(loaded, ids, segments if with_segments else None)
    attention = compute.run(loaded, text, text_b).weights[layer, head]  # exactly what /attention shows
    parts = run_layer(arch, loaded, ids, segments if kind == "bert" else None, hidden, layer)
    sizes = sizes_of(arch)
    shown = segments if kind == "bert" else [0] * len(ids)
    r = ForwardSteps(loaded.name, loaded.source, loaded.family, layers.ARCHITECTURES[kind],
                     models.readable_tokens(loaded.tokenizer, ids), list(ids), list(shown), layer, head,
                     choose_position(loaded.tokenizer, ids, position, causal), sizes,
                     build_steps(arch, kind, parts, sizes, layer, head), None, None, "", notes_for(kind, sizes),
                     attention)
    add_checks(r, parts, hidden, layer == arch.num_layers - 1)
    predict(r, arch, loaded, hidden, with_segments)
    return r


def notes_for(kind: str, sizes: dict) -> list[str]:
    if kind == "llama":
        groups = sizes["heads"] // sizes["kv_heads"]
        return [
            "Rotary positions (RoPE): there is no position table. Each head's queries and keys are rotated by an "
            "angle that grows with the token's position, so QKᵀ depends on how far apart two tokens are.",
            "RMSNorm, before each sublayer (pre-norm): x / √(mean(x²) + ε) · g, no mean subtracted and no bias; "
            "the residual adds the sublayer's output to its un-normalised input.",
            f"Grouped-query attention: {sizes['heads']} query heads share {sizes['kv_heads']} key/value heads "
            f"(head h reads key/value head h // {groups}).",
            "A causal mask: scores above the diagonal are set to −∞ before the softmax, so a token attends only to "
            "itself and the tokens before it (exactly 0 after them).",
            f"The feed-forward is gated: down(SiLU(gate(x)) · up(x)), {sizes['hidden']} → {sizes['intermediate']} "
            f"→ {sizes['hidden']}."]
    if kind == "gpt2":
        return ["Learned position embeddings (a table, as BERT's); no segments.",
                "LayerNorm before each sublayer (pre-norm), residual after it.",
                "A causal mask: scores above the diagonal are set to −∞ before the softmax."]
    return ["Post-norm, as the textbook's walkthrough writes it: LayerNorm(x + sublayer(x)) after attention and "
            "after the feed-forward."]


def predict(r: ForwardSteps, arch: layers.Layers, loaded, hidden: np.ndarray, with_segments: bool) -> None:
    """The MLM head's top tokens at the followed [MASK], or a causal LM's next token after the position."""
    import torch

    final = torch.tensor(np.array(hidden[-1][r.position]), device=loaded.device)
    mask = getattr(loaded.tokenizer, "mask_token_id", None)
    with torch.inference_mode():
        if r.family == "causal":
            logits = layers.linear(final, loaded.model.get_output_embeddings()).float().cpu().numpy()
            theirs = lm.next_token_logits(loaded, r.ids[:r.position + 1])
            against = "the shared next-token pass on the tokens up to the position"
        elif r.ids[r.position] != mask:
            r.prediction_note = "Put a [MASK] in the sentence (and follow it) to see the MLM head's predictions."
            return
        elif loaded.family != "masked" or (logits := arch.mlm_logits(final)) is None:
            r.prediction_note = (f"{loaded.name} has no masked-LM head (all-MiniLM-L6-v2, for one, was trained as a "
                                 "sentence encoder): the MLM head's predictions at [MASK] need a masked LM such as "
                                 "bert-base-uncased from the Hub (not measured here).")
            return
        else:
            logits = logits.float().cpu().numpy()
            theirs = None if with_segments else lm.mlm_logits(loaded, r.ids, [r.position])[0]
            against = "the shared masked-LM pass (Fill in the blank's)"
    probs = lm.softmax(logits)
    r.predictions = [{"token": models.readable_tokens(loaded.tokenizer, [i])[0], "token_id": i, "prob": float(probs[i])}
                     for i, _ in lm.top_k(probs, TOP_K)]
    if theirs is not None:
        r.prediction_check = Check(f"{against}: its logits", largest_diff(logits, theirs))


def forward_steps_json(text: str, model: str, layer: int = 0, head: int = 0, text_b: str = "",
                       position: int = -1) -> dict:
    """The `forward_steps` API: the model is resolved once, here."""
    return forward_steps(models.load(model, *FAMILIES), text, layer, head, position, text_b).to_json()
