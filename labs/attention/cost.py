"""Attention, what it costs: one forward pass of the real model timed at growing input lengths, one layer taken
apart, the attention matrix's bytes, and what happens past the position limit. In the layer, the Q/K/V and output
projections and the feed-forward grow with n, and the scores QKᵀ, the softmax and the weighted sum with n²; the
attention matrix's bytes go beside the feed-forward's activations; past the model's position limit comes the real
error, or the truncation.

Measured live, once per model and server (a shared job: identical requests wait for the one in flight and
then get the kept curve). Timings are wall-clock medians on this server's CPU while other students may be
using it; the sizes are the real tensors' bytes. Text: the built-in long document, cut to each length."""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from labs.attention import layers
from labs.core.models import models
from labs.core.work import lm
from labs.core.work.jobs import JOBS

LENGTHS = (16, 32, 64, 128, 256, 512)
REPEATS = 3  # each time is the median of this many runs, after one warm-up run
DOCUMENT = Path(__file__).resolve().parents[2] / "assets" / "long_review.txt"
FAMILIES = ("masked", "encoder", "causal")
BYTES_NOTE = ("Sizes are the bytes of the real tensors (float32) for one layer; the model has as many layers. "
              "Peak process memory is not measured here: PyTorch keeps no peak-memory counter on a CPU.")


@dataclass(frozen=True)
class CostPoint:
    tokens: int
    forward_ms: float  # the whole model, one forward pass
    projections_ms: float  # one layer: Q, K, V and the output projection (n × hidden × hidden)
    attention_ms: float  # one layer: QKᵀ, the softmax and the weighted sum with V (n² per head)
    ffn_ms: float  # one layer: the feed-forward (n × hidden × intermediate)
    attention_bytes: int  # one layer's attention weights, every head: heads × n × n × 4 bytes
    ffn_bytes: int  # one layer's feed-forward activations: n × intermediate × 4 bytes
    attention_flops: int  # one layer, QKᵀ and AV: 2 × 2 × heads × n² × d_k
    ffn_flops: int  # one layer: 2 × (2 or 3 matrices) × n × hidden × intermediate


@dataclass(frozen=True)
class Limit:
    positions: int | None  # the position table's rows, or the trained context for rotary positions
    kind: str  # "table" (learned positions: a hard limit) or "rotary"
    tried_tokens: int | None  # the length sent to the model to show what happens (None: not run)
    error: str | None  # the model's own error at that length, as raised
    truncated_to: int  # what the tokenizer keeps with truncation=True
    note: str


@dataclass(frozen=True)
class AttentionCost:
    model: str
    source: str
    architecture: str
    layers: int
    heads: int
    hidden: int
    intermediate: int
    device: str
    threads: int
    points: tuple[CostPoint, ...]
    limit: Limit

    def to_json(self) -> dict:
        result = asdict(self)
        result["points"] = [asdict(p) for p in self.points]
        result["bytes_note"] = BYTES_NOTE
        return result


def special_tokens(tokenizer) -> tuple[list[int], list[int]]:
    """The special tokens the tokenizer puts before and after a text ([CLS] … [SEP] for BERT; none for GPT-2)."""
    full = tokenizer("word")["input_ids"]
    bare = tokenizer("word", add_special_tokens=False)["input_ids"]
    start = next(i for i in range(len(full)) if full[i:i + len(bare)] == bare)
    return full[:start], full[start + len(bare):]


def with_specials(tokenizer, pieces: list[int]) -> list[int]:
    before, after = special_tokens(tokenizer)
    return before + list(pieces) + after


def document_ids(loaded, count: int) -> list[int]:
    """`count` tokens of the built-in document (repeated if needed), with the model's own special tokens."""
    tokenizer = loaded.tokenizer
    pieces = tokenizer(DOCUMENT.read_text(), add_special_tokens=False, verbose=False)["input_ids"]
    while len(pieces) < count:
        pieces = pieces + pieces
    return with_specials(tokenizer, pieces[:count - len(with_specials(tokenizer, []))])


def median_ms(run, warm_up: bool = True) -> float:
    if warm_up:  # the first call pays for allocations
        run()
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 3)


def measure(loaded, arch: layers.Layers, n: int, first: bool) -> CostPoint:
    """One length: the whole pass (warmed up at the first length only: a pass is the costly part), then
    layer 0's parts on its real input."""
    import torch

    ids = torch.tensor(document_ids(loaded, n), device=loaded.device)
    encoder = lm.encoder_of(loaded)
    with torch.inference_mode():
        forward = median_ms(lambda: encoder(input_ids=ids[None]), warm_up=first)
        x = arch.embeddings(ids, torch.zeros_like(ids))["embedded"]
        parts = arch.qkv(0, x)
        core = layers.attention_core(parts["q_heads"], parts["k_heads"], parts["v_heads"], arch.scale(0), arch.causal)
        concat = layers.merge_heads(core["context"])
        h = arch.after_attention(0, x, concat)["attention_out"]
        ffn = arch.feed_forward(0, h)
        projections = median_ms(lambda: arch.qkv(0, x)) + median_ms(lambda: arch.after_attention(0, x, concat))
        attention = median_ms(lambda: layers.attention_core(parts["q_heads"], parts["k_heads"], parts["v_heads"],
                                                            arch.scale(0), arch.causal))
        ffn_ms = median_ms(lambda: arch.feed_forward(0, h))
    intermediate = ffn["ffn_inner"].shape[-1]
    matrices = 3 if "ffn_gate" in ffn else 2
    return CostPoint(n, forward, round(projections, 3), attention, ffn_ms,
                     core["weights"].element_size() * core["weights"].numel(),
                     ffn["ffn_inner"].element_size() * ffn["ffn_inner"].numel(),
                     4 * arch.heads * n * n * arch.head_dim, 2 * matrices * n * arch.hidden * intermediate)


def past_the_limit(loaded, arch: layers.Layers) -> Limit:
    """A learned position table has a last row: send a few more tokens than it has and keep the model's
    own error. Rotary positions have no table (nothing to run off); that is said, not run."""
    config = loaded.model.config
    positions = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
    tokenizer = loaded.tokenizer
    long_text = " ".join([DOCUMENT.read_text()] * (1 + (positions or 0) // 800))
    truncated = len(tokenizer(long_text, truncation=True, max_length=loaded.max_tokens, verbose=False)["input_ids"])
    if isinstance(arch, layers.Llama):
        return Limit(positions, "rotary", None, None, truncated,
                     f"{loaded.name} has no position table: rotary positions can be computed for any length, so "
                     f"nothing fails at a fixed length. {positions:,} is the context it was trained for; past it, "
                     "quality drops rather than the code failing. Not run here: at that length one layer's "
                     f"attention weights alone would take {arch.heads * positions**2 * 4 / 1e9:.1f} GB.")
    tried = positions + 10
    error = error_past_the_table(loaded, document_ids(loaded, tried))
    note = (f"Its position table has {positions:,} rows: token {positions + 1:,} has no position embedding. "
            f"With truncation=True the tokenizer keeps {truncated:,} tokens and drops the rest.")
    return Limit(positions, "table", tried, error, truncated, note)


def error_past_the_table(loaded, ids: list[int]) -> str | None:
    """The model's own error for ids longer than its position table (None if it runs). Called with a few
    more tokens than the table has: a learned table fails at the lookup, before any costly layer."""
    import torch

    try:
        with torch.inference_mode():
            lm.encoder_of(loaded)(input_ids=torch.tensor([ids], device=loaded.device))
    except Exception as exc:  # the point: show the model's own failure as it is
        return f"{type(exc).__name__}: {exc}"
    return None


def _attention_cost(loaded) -> AttentionCost:
    import torch

    arch = layers.for_model(loaded)
    lengths = [n for n in LENGTHS if n <= loaded.max_tokens]
    points = tuple(measure(loaded, arch, n, i == 0) for i, n in enumerate(lengths))
    return AttentionCost(loaded.name, loaded.source, layers.ARCHITECTURES[layers.architecture_of(loaded)],
                         arch.num_layers, arch.heads, arch.hidden, arch.intermediate, loaded.device,
                         torch.get_num_threads(), points, past_the_limit(loaded, arch))


def attention_cost(loaded) -> AttentionCost:
    """The curve for this model: measured once per server, shared by everyone who asks."""
    loaded = models.load(loaded, *FAMILIES)
    layers.architecture_of(loaded)  # a clear message before anything is measured
    return JOBS.shared("attention_cost", (loaded.name, loaded.head), lambda: _attention_cost(loaded),
                       gpu_units=len(LENGTHS) * 10)  # on ZeroGPU, measured on the GPU


def attention_cost_json(model: str) -> dict:
    """The `attention_cost` API."""
    return attention_cost(models.load(model, *FAMILIES)).to_json()
