"""Attention, the computation: every layer's and head's attention for a text (or a pair A/B), each
head's entropy, and a label for what each head does. An encoder-decoder (T5) has three kinds of
attention: the encoder's self-attention over the text, the decoder's (causal) self-attention over
what it reads, and the cross-attention from each decoder token to the encoder's tokens."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from labs.core.errors import BadInput, check_int, check_text
from labs.core.models import models
from labs.core.work import lm

MAX_TOKENS = 128
EXAMPLE = "I sat on the river bank."
EXAMPLES = [
    ["I sat on the river bank and watched the water.", "I went to the bank to open an account."],
    ["The cat sat on the mat because it was tired.", ""],
    ["The keys to the cabinet are on the table.", ""],
]

# The pattern labels, in the order the labeller tries them. "mixed": focused, but on no fixed position
# (often content: a verb looking at its subject).
PATTERNS = ("previous token", "next token", "self", "first token / [CLS]", "separator / end token", "broad", "mixed")
FOCUSED = 0.5  # a head is "previous token" etc. when, on average, half its attention goes there
BROAD = 0.8  # ... and "broad" when its entropy is at least this share of the most it could be
FAMILIES = ("masked", "encoder", "causal", "seq2seq")  # the families this lab serves
PARTS = ("encoder", "decoder", "cross")  # an encoder-decoder's three kinds of attention
DECODER_READS = ("The decoder reads your own text, teacher-forced as in training: its start token, then your "
                 "text shifted one place to the right.")


@dataclass(frozen=True)
class AttentionRun:
    """One forward pass: every layer's and head's attention for one text (or pair)."""

    model: str
    source: str
    family: str
    tokens: tuple[str, ...]  # readable (␣ for a leading space)
    segments: tuple[int, ...]  # 0 for sentence A, 1 for sentence B
    sentence_b_start: int | None
    special_positions: tuple[int, ...]  # [CLS], [SEP], <|endoftext|> ...
    weights: np.ndarray  # [layers, heads, n, n], float32, rows sum to 1 (cross: [layers, heads, m, n])
    note: str  # "your text was cut to 128 tokens" and the like
    # An encoder-decoder's other two kinds of attention (None for the other families):
    decoder_tokens: tuple[str, ...] = ()  # what the decoder reads: the start token, then the text less its end
    decoder_weights: np.ndarray | None = None  # [layers, heads, m, m], causal: 0 above the diagonal
    cross_weights: np.ndarray | None = None  # [layers, heads, m, n]: decoder rows over encoder columns
    decoder_special_positions: tuple[int, ...] = ()  # the decoder's start token and the like
    part: str = "encoder"  # which of them `tokens`/`weights` hold (see select)
    columns: tuple[str, ...] | None = None  # the key tokens when they are not `tokens` (cross-attention)

    @property
    def num_layers(self) -> int:
        return self.weights.shape[0]

    @property
    def num_heads(self) -> int:
        return self.weights.shape[1]

    @property
    def causal(self) -> bool:
        """Is this attention masked to the past (a causal LM, or an encoder-decoder's decoder)?"""
        return self.family == "causal" or self.part == "decoder"

    @property
    def seq2seq(self) -> bool:
        return self.decoder_weights is not None

    @property
    def key_tokens(self) -> tuple[str, ...]:
        """The columns' tokens (what is attended to): the rows' own, except for cross-attention."""
        return self.tokens if self.columns is None else self.columns


def encode(tokenizer, text: str, text_b: str):
    """Token ids, segment ids and where sentence B starts. Tokenizers with a separator (BERT) get
    `[CLS] A [SEP] B [SEP]`; the others (GPT-2, SmolLM2) read A and B as one running text."""
    if not text_b:
        ids = tokenizer(text)["input_ids"]
        return ids, [0] * len(ids), None
    if tokenizer.sep_token is not None:
        enc = tokenizer(text, text_b)
        ids = enc["input_ids"]
        segments = enc.get("token_type_ids") or [0] * len(ids)
        if 1 not in segments:  # a separator but no segment ids: B starts after the first separator
            first_sep = ids.index(tokenizer.sep_token_id) + 1
            segments = [0] * first_sep + [1] * (len(ids) - first_sep)
        return ids, segments, segments.index(1)
    ids_a = tokenizer(text)["input_ids"]
    if ids_a and tokenizer.eos_token_id is not None and ids_a[-1] == tokenizer.eos_token_id:
        ids = tokenizer(text, text_b)["input_ids"]  # T5 closes each text: A </s> B </s>
        return ids, [0] * len(ids_a) + [1] * (len(ids) - len(ids_a)), len(ids_a)
    ids_b = tokenizer(" " + text_b, add_special_tokens=False)["input_ids"]
    return ids_a + ids_b, [0] * len(ids_a) + [1] * len(ids_b), len(ids_a)


def run(loaded: models.LoadedModel, text, text_b="") -> AttentionRun:
    """Every view of this lab comes from this one (cached) forward pass; for an encoder-decoder, one
    pass gives all three kinds of attention, the decoder reading the text itself (DECODER_READS)."""
    text = check_text(text, EXAMPLE, what="sentence")
    text_b = check_text(text_b if text_b is not None else "", EXAMPLE, what="sentence B", allow_empty=True)
    # The caller resolved the model; a LoadedModel passes straight through (the family check only).
    # A name is still accepted from older callers (tests/test_batching.py) and resolved here.
    loaded = models.load(loaded, *FAMILIES)
    ids, segments, b_start = encode(loaded.tokenizer, text, text_b)
    limit = min(MAX_TOKENS, loaded.max_tokens)
    note = ""
    if len(ids) > limit:
        note = f"Your text has {len(ids)} tokens; the views show the first {limit}."
        ids, segments = ids[:limit], segments[:limit]
        b_start = b_start if b_start is not None and b_start < limit else None  # B may be cut off entirely
    tokens = tuple(models.readable_tokens(loaded.tokenizer, ids))
    special = set(loaded.tokenizer.all_special_ids)
    common = (loaded.name, loaded.source, loaded.family, tokens, tuple(segments), b_start,
              tuple(i for i, t in enumerate(ids) if t in special))
    if loaded.family == "seq2seq":
        decoder_ids = lm.decoder_input(loaded, ids)
        weights, decoder, cross = lm.seq2seq_attentions(loaded, ids, decoder_ids)
        return AttentionRun(*common, weights, note, tuple(models.readable_tokens(loaded.tokenizer, decoder_ids)),
                            decoder, cross, tuple(i for i, t in enumerate(decoder_ids) if t in special))
    with_segments = (b_start is not None and loaded.tokenizer.sep_token is not None
                     and "token_type_ids" in loaded.tokenizer.model_input_names)
    return AttentionRun(*common, lm.attentions(loaded, ids, segments if with_segments else None), note)


def check_part(r: AttentionRun, part) -> str:
    """The kind of attention asked for: "encoder" (the only one a model without a decoder has),
    "decoder" or "cross"."""
    part = "encoder" if part in (None, "") else part
    if part not in PARTS:
        raise BadInput(f"The part is one of {', '.join(PARTS)}, not '{str(part)[:40]}'.")
    if part != "encoder" and not r.seq2seq:
        raise BadInput(f"{r.model} has no decoder, so it has no {part} attention: ask for part 'encoder', "
                       "or pick an encoder-decoder such as t5-small.")
    return part


def select(r: AttentionRun, part) -> AttentionRun:
    """The run as one kind of attention: its rows in `tokens`, its weights in `weights`, the key
    positions of special tokens in `special_positions` (what the heatmaps, entropy and labels read)."""
    part = check_part(r, part)
    if part == r.part:
        return r
    if r.part != "encoder":
        raise ValueError("select() takes the whole run, as run() returns it")
    if part == "decoder":
        return replace(r, part=part, tokens=r.decoder_tokens, weights=r.decoder_weights, segments=(0,) * len(
            r.decoder_tokens), sentence_b_start=None, special_positions=r.decoder_special_positions)
    # Rows: the decoder's tokens; columns: the encoder's, whose special positions the labeller reads.
    return replace(r, part=part, tokens=r.decoder_tokens, weights=r.cross_weights, segments=(0,) * len(
        r.decoder_tokens), sentence_b_start=None, columns=r.tokens)


def check_layer_head(r: AttentionRun, layer: int, head: int | None) -> None:
    if not isinstance(layer, (int, np.integer)) or not 0 <= layer < r.num_layers:
        raise BadInput(f"{r.model} has layers 0–{r.num_layers - 1}; layer {layer} does not exist.")
    if head is not None and (not isinstance(head, (int, np.integer)) or not 0 <= head < r.num_heads):
        raise BadInput(f"{r.model} has heads 0–{r.num_heads - 1}; head {head} does not exist.")


def clamp_layer_head(r: AttentionRun, layer, head) -> tuple[int, int | None]:
    """Layer and head clamped to what the model has (the sliders may still show another model's range)."""
    layer = min(max(check_int(layer, "The layer"), 0), r.num_layers - 1)
    head = None if head is None else min(max(check_int(head, "The head"), 0), r.num_heads - 1)
    return layer, head


def head_weights(r: AttentionRun, layer: int, head: int | None) -> np.ndarray:
    """One head's n × n attention, or the average over the layer's heads when head is None."""
    check_layer_head(r, layer, head)
    return r.weights[layer].mean(axis=0) if head is None else r.weights[layer, head]


def row_entropy_bits(weights: np.ndarray) -> np.ndarray:
    """−Σ p log₂ p along the last axis (0 log 0 = 0)."""
    p = np.clip(weights.astype(np.float64), 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log2(p), 0.0)
    return terms.sum(axis=-1)


def entropy_map(r: AttentionRun) -> np.ndarray:
    """Each head's attention entropy in bits, averaged over its query rows: layers × heads."""
    return row_entropy_bits(r.weights).mean(axis=-1)


def label_head(w: np.ndarray, special_positions=(), causal: bool = False) -> str:
    """Name what one head does from its n × n attention matrix (rows = queries).

    Row 0 is left out of every score: under a causal mask it can only attend to itself, which
    says nothing about the head. A fixed target that gets at least half the attention on average
    names the head; otherwise it is "broad" when its rows are close to uniform over what they may
    see, and "mixed" when it focuses on positions that change from row to row (content). Cross-attention
    (rows from another text than the columns) has no previous, next or self pattern."""
    w = np.asarray(w, dtype=np.float64)
    n, keys = w.shape
    if n < 2:
        return "self" if keys == n else ("first token / [CLS]" if w[0, 0] >= FOCUSED else "broad")
    rows = np.arange(1, n)
    separators = [p for p in special_positions if p > 0]
    scores = {"first token / [CLS]": w[rows, 0].mean(),
              "separator / end token": w[1:, separators].sum(axis=1).mean() if separators else 0.0}
    if keys == n:  # positions relative to the query exist only when rows and columns are one text
        scores = {"previous token": w[rows, rows - 1].mean(),
                  "next token": w[rows[:-1], rows[:-1] + 1].mean() if n > 2 else 0.0,
                  "self": w[rows, rows].mean(), **scores}
    best = max(scores, key=scores.get)  # ties go to the earlier (simpler) pattern
    if scores[best] >= FOCUSED:
        return best
    allowed = rows + 1 if causal else np.full(n - 1, keys)  # how many keys each row may attend to
    most = np.log2(allowed)
    spread = row_entropy_bits(w[1:]) / np.where(most > 0, most, 1)
    return "broad" if spread.mean() >= BROAD else "mixed"


def pattern_map(r: AttentionRun) -> list[list[str]]:
    return [[label_head(r.weights[layer, head], r.special_positions, r.causal) for head in range(r.num_heads)]
            for layer in range(r.num_layers)]


def summary(r: AttentionRun) -> tuple[np.ndarray, list[list[str]]]:
    """Every head's entropy (bits) and pattern label."""
    return entropy_map(r), pattern_map(r)


def pattern_counts(patterns: list[list[str]]) -> dict[str, int]:
    flat = [p for row in patterns for p in row]
    return {p: flat.count(p) for p in PATTERNS if p in flat}


def run_json(r: AttentionRun, layer: int, head: int, part: str = "encoder") -> dict:
    """The API's JSON: `weights`, `entropy` and `patterns` are those of `part` (the encoder's, or the
    only attention a model without a decoder has); `tokens` are always the text's (the encoder's)."""
    shown = select(r, part)
    weights = head_weights(shown, layer, head)
    entropy, patterns = summary(shown)
    result = {"model": r.model, "source": r.source, "tokens": list(r.tokens), "num_layers": shown.num_layers,
              "num_heads": shown.num_heads, "layer": layer, "head": head, "weights": weights.tolist(),
              "entropy": np.round(entropy, 4).tolist(), "patterns": patterns, "note": r.note}
    if r.seq2seq:
        result.update(part=shown.part, decoder_tokens=list(r.decoder_tokens), decoder_reads=DECODER_READS,
                      decoder_attention=_head_or_none(select(r, "decoder"), layer, head),
                      cross_attention=_head_or_none(select(r, "cross"), layer, head))
    return result


def _head_or_none(r: AttentionRun, layer: int, head: int) -> list | None:
    """This part's weights at layer and head, or None when it has fewer layers or heads (BART-style
    models may have more encoder than decoder layers)."""
    return r.weights[layer, head].tolist() if layer < r.num_layers and head < r.num_heads else None


def attention_result(text: str, model: str, text_b: str = "", layer: int = 0, head: int = 0,
                     part: str = "encoder") -> dict:
    """The `attention` API: one head's weights, every head's entropy and pattern label. For an
    encoder-decoder, `part` picks the encoder's self-attention, the decoder's or the cross-attention,
    and the decoder's tokens and the chosen head's decoder and cross-attention come too."""
    layer, head = check_int(layer, "The layer (counted from 0)"), check_int(head, "The head (counted from 0)")
    return run_json(run(models.load(model, *FAMILIES), text, text_b), layer, head, part)


def above_diagonal(r: AttentionRun) -> float:
    """The last layer's average attention above the diagonal (to later tokens): 0 for a causal LM."""
    weights = head_weights(r, r.num_layers - 1, None)
    return float(weights[np.triu_indices(len(r.tokens), k=1)].sum())
