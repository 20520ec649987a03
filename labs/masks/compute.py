"""Masks, the computation: causal vs bidirectional attention masks for the student's own sentence,
the counts, the masked softmax, padding, encoder–decoder masks, and the proof on real models'
attention weights (exercise B1.2). An encoder-decoder (T5) serves both sides of the proof: its
encoder's self-attention (bidirectional) and its decoder's (causal), read from one forward pass."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from labs.core.errors import BadInput, check_int, check_text, each
from labs.core.models import models
from labs.core.work import lm

MAX_TOKENS = 64
MODEL_TOKENS = 128  # the real models read at most this many tokens (as in the Attention lab)
EXAMPLE = "The cat sat on the mat"
ARITHMETIC_TOKENS = 6  # the worked softmax example stays readable at this size
# What each side of the proof serves: an encoder-decoder's encoder on the bidirectional side, its decoder
# (reading the sentence itself, teacher-forced) on the causal side.
ENCODER_FAMILIES, CAUSAL_FAMILIES = ("masked", "encoder", "seq2seq"), ("causal", "seq2seq")
ROLES = (("encoder", ENCODER_FAMILIES), ("causal", CAUSAL_FAMILIES))  # the API's two sides
PART_WORDS = {"self": "self-attention", "encoder": "encoder self-attention",
              "decoder": "decoder self-attention, reading the sentence teacher-forced"}


def check_sentence(text) -> str:
    return check_text(text, EXAMPLE, what="sentence")


def word_tokens(text: str) -> list[str]:
    """Words as in the lecture's tables: [MASK] stays one token, punctuation is its own token."""
    return re.findall(r"\[MASK\]|\w+(?:'\w+)?|[^\w\s]", text)


def limit(tokens: list[str]) -> tuple[list[str], str]:
    """Keep the first MAX_TOKENS tokens, and say so when that cut something."""
    if len(tokens) > MAX_TOKENS:
        return tokens[:MAX_TOKENS], f"Your text has {len(tokens)} tokens; the masks show the first {MAX_TOKENS}."
    return tokens, ""


def sentence_tokens(text) -> tuple[list[str], str]:
    return limit(word_tokens(check_sentence(text)))


def bidirectional_mask(n: int) -> np.ndarray:
    """Encoder (BERT): every token may attend to every token. 1 = may attend."""
    return np.ones((n, n), dtype=int)


def causal_mask(n: int) -> np.ndarray:
    """Decoder (GPT): token i may attend to tokens 0..i only, never to the future."""
    return np.tril(np.ones((n, n), dtype=int))


def connections(n: int) -> dict[str, int]:
    return {"bidirectional": n * n, "causal": n * (n + 1) // 2}


def can_attend_table(tokens: list[str], row: int) -> list[list[str]]:
    """The exercise's table: from tokens[row] to each token, can it attend under each mask?"""
    causal = causal_mask(len(tokens))[row]
    return [[tok, "Yes", "Yes" if causal[j] else "No"] for j, tok in enumerate(tokens)]


def check_counts(n, bidirectional_answer, causal_answer) -> list[tuple[str, int | None, bool, str]]:
    """The student's two counts for a sentence of n tokens: (mask, answer, right?, hint) each."""
    want = connections(check_int(n, "The sentence length n", 1, 10_000))
    hints = {"bidirectional": "n × n", "causal": "1 + 2 + … + n = n(n+1)/2"}
    out = []
    for key, answer in (("bidirectional", bidirectional_answer), ("causal", causal_answer)):
        value = None if answer is None else check_int(answer, f"Your {key} answer")
        out.append((key, value, value == want[key], hints[key]))
    return out


@dataclass
class MaskedSoftmax:
    tokens: list[str]
    scores: np.ndarray  # raw attention scores q·k/√d (made up, rounded for reading)
    masked_scores: np.ndarray  # where(M = 1, scores, −∞): masked_fill, as implementations do
    weights: np.ndarray  # softmax of each row
    slide_way: np.ndarray  # the slide's scores + (1 − M)·(−∞), as written: NaN wherever M = 1 (0·(−∞) = NaN)


def masked_softmax_example(tokens: list[str], seed: int = 0) -> MaskedSoftmax:
    """where(M = 1, scores, −∞) then softmax, on the sentence's first few tokens: the masked weights come out
    exactly 0 and every row still sums to 1. The slide's scores + (1 − M)·(−∞) is computed too, as written, to
    show why implementations fill instead of multiply (ERRATA 15)."""
    tokens = tokens[:ARITHMETIC_TOKENS]
    n = len(tokens)
    mask = causal_mask(n)
    scores = np.round(np.random.default_rng(seed).normal(0, 1.5, (n, n)), 1)
    masked = np.where(mask == 1, scores, -np.inf)
    shifted = np.exp(masked - masked.max(axis=1, keepdims=True))  # exp(−∞) is exactly 0
    with np.errstate(invalid="ignore"):  # 0 · (−∞) is NaN: the point being shown
        slide_way = scores + (1 - mask) * -np.inf
    return MaskedSoftmax(tokens, scores, masked, shifted / shifted.sum(axis=1, keepdims=True), slide_way)


def padding_masks(sentence_a, sentence_b) -> dict:
    """Two sentences in one batch: the shorter is padded; padding mask and padding × causal."""
    batch = [word_tokens(check_sentence(s))[:MAX_TOKENS] for s in (sentence_a, sentence_b)]
    width = max(len(t) for t in batch)
    padded = [t + ["[PAD]"] * (width - len(t)) for t in batch]
    padding = np.array([[1] * len(t) + [0] * (width - len(t)) for t in batch])  # per key position
    combined = [causal_mask(width) * padding[b][None, :] for b in range(2)]
    return {"tokens": padded, "padding": padding, "combined": combined}


def encoder_decoder_masks(source, target) -> dict:
    """T5-style: encoder self-attention (full), decoder self-attention (causal), cross-attention
    (every target token sees every source token)."""
    src = word_tokens(check_sentence(source))[:MAX_TOKENS]
    tgt = word_tokens(check_sentence(target))[:MAX_TOKENS]
    return {"source": src, "target": tgt, "encoder": bidirectional_mask(len(src)),
            "decoder": causal_mask(len(tgt)), "cross": np.ones((len(tgt), len(src)), dtype=int)}


def model_tokens(loaded: models.LoadedModel, text) -> list[str]:
    """The model's own subword tokens (with its special tokens), for the masks' labels."""
    return models.readable_tokens(loaded.tokenizer, loaded.tokenizer(check_sentence(text))["input_ids"])


def model_attentions(loaded: models.LoadedModel, text, part: str = "self") -> tuple[list[str], np.ndarray]:
    """A real model's tokens and all its attention weights [layers, heads, n, n] (first 128 tokens).
    part: "self" (the only kind an encoder or a causal LM has), or an encoder-decoder's "encoder" or
    "decoder" (the decoder reads the sentence itself: its start token, then the sentence less its end)."""
    ids = loaded.tokenizer(check_sentence(text))["input_ids"][:min(MODEL_TOKENS, loaded.max_tokens)]
    if part != "decoder" or loaded.family != "seq2seq":
        return models.readable_tokens(loaded.tokenizer, ids), lm.attentions(loaded, ids)
    decoder_ids = lm.decoder_input(loaded, ids)
    _, decoder, _ = lm.seq2seq_attentions(loaded, ids, decoder_ids)
    return models.readable_tokens(loaded.tokenizer, decoder_ids), decoder


@dataclass
class RealAttention:
    model: str
    source: str
    tokens: list[str]
    weights: np.ndarray  # the chosen layer, one head or the mean over heads
    max_above_diagonal: float  # over every layer and head
    part: str = "self"  # "self", or an encoder-decoder's "encoder" or "decoder" (see PART_WORDS)


def part_for(loaded: models.LoadedModel, role: str) -> str:
    """Which attention shows this side's mask: an encoder-decoder's encoder (bidirectional side) or
    decoder (causal side); a model with one kind has only "self"."""
    if loaded.family != "seq2seq":
        return "self"
    return "decoder" if role == "causal" else "encoder"


def real_attention(loaded: models.LoadedModel, text, layer=-1, head=None, part: str = "self") -> RealAttention:
    tokens, weights = model_attentions(loaded, text, part)
    n_layers, n_heads = weights.shape[:2]
    layer = check_int(layer, "The layer")
    head = None if head is None else check_int(head, "The head")
    if not -n_layers <= layer < n_layers or (head is not None and not 0 <= head < n_heads):
        raise BadInput(f"This model has layers 0–{n_layers - 1} and heads 0–{n_heads - 1}.")
    chosen = weights[layer].mean(axis=0) if head is None else weights[layer, head]
    above = np.triu(np.ones(weights.shape[-2:], dtype=bool), k=1)
    return RealAttention(loaded.name, loaded.source, tokens, chosen,
                         float(weights[..., above].max()) if above.any() else 0.0,
                         part if loaded.family == "seq2seq" else "self")


def resolve_pair(encoder_model, causal_model) -> list[tuple[models.LoadedModel | None, str | None]]:
    """Both sides' models, resolved once: each (loaded, None) or (None, why it cannot be used: a
    model of a family that side does not serve, or one that cannot be loaded)."""
    return each(lambda pair: models.load(pair[0], *pair[1]),
                [(encoder_model, ENCODER_FAMILIES), (causal_model, CAUSAL_FAMILIES)])


def real_pair(text, resolved, layer=-1, head=None) -> list[tuple[RealAttention | None, str | None]]:
    """The encoder's and the causal LM's attention (from resolve_pair's models), each (result, None)
    or (None, why it failed)."""
    return [(None, error) if loaded is None else
            each(lambda m: real_attention(m, text, layer, head, part_for(m, role)), [loaded])[0]
            for (role, _), (loaded, error) in zip(ROLES, resolved)]


def masks_result(text: str, encoder_model: str, causal_model: str) -> dict:
    """The `masks` API: both masks, the counts, and the real models' largest weight above the
    diagonal (exactly 0 for a causal LM). A model that cannot be used gives an "error" entry. Each
    side's "part" says which attention it read: "self", or an encoder-decoder's "encoder" (on the
    encoder side) or "decoder" (on the causal side, its "tokens" then being what the decoder reads)."""
    tokens, _ = sentence_tokens(text)
    real = {}
    for (role, _), name, (r, error) in zip(ROLES, (encoder_model, causal_model),
                                           real_pair(text, resolve_pair(encoder_model, causal_model))):
        real[role] = ({"model": r.model, "tokens": r.tokens, "max_above_diagonal": r.max_above_diagonal,
                       "part": r.part} if r else
                      {"model": str(name)[:80], "tokens": [], "max_above_diagonal": None, "error": error})
    return {"tokens": tokens, "bidirectional": bidirectional_mask(len(tokens)).tolist(),
            "causal": causal_mask(len(tokens)).tolist(), "connections": connections(len(tokens)), "real": real}
