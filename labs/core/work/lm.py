"""The batched forward passes several labs share: next-token and masked-LM logits, attention weights, hidden states,
every token's log-probability and the encoder-decoder pass. Next-token logits serve Next token and Fill in the
blank's left-only panel; masked-LM logits at chosen positions, Fill in the blank; attention weights, Attention and
Masks; hidden states, Embeddings and the logit lens; log-probabilities, sentence scores; the encoder-decoder pass,
T5 (encoder, decoder and cross-attention, the decoder's logits). A lab adds a kind of its own with `register_pass`
(labs.core.work.passes: its runner and its limits).

Every function takes a loaded model (resolved once by the caller) and token ids, and returns numpy
arrays. Concurrent requests for the same model, head and pass run as one padded forward pass (see
labs.core.work.batching); results are cached here, and only here, keyed by the model, head, pass and the
exact ids.

Padding is on the right with an attention mask (labs.core.work.padding), so every real token keeps its
position: an encoder ignores the padded keys (their weight is exactly 0), and a causal LM's real
tokens never see the padding after them. Each request reads its own rows back, cut to its own
length: a result does not depend on what it was batched with (up to float rounding, about 1e-6)."""

from __future__ import annotations

import re
import threading
from functools import partial

import numpy as np

from labs.core.errors import BadInput
from labs.core.models.device import in_gpu_call
from labs.core.models.models import LoadedModel
from labs.core.work import ray_backend, ray_passes
from labs.core.work.batching import Batcher, InFlight, ResultCache
from labs.core.work.padding import pad_rows
from labs.core.work.passes import LIMITS, RUNNERS, register_pass  # noqa: F401 (labs register through lm)

CACHE_BYTES = 256 * 1024 * 1024  # every cached result together; the oldest are dropped first

cache = ResultCache(CACHE_BYTES)
ray_claims = InFlight(cache)  # with Ray Serve: identical requests in flight share one (as each Batcher's claims)
_batchers: dict[tuple[str, str, str], Batcher] = {}
_batchers_lock = threading.Lock()


def forward_passes() -> int:
    """How many forward passes (batches) the shared passes have run: tests count them."""
    return sum(b.stats["batches"] for b in list(_batchers.values()))


def batch_stats() -> dict[str, dict]:
    return {b.name: dict(b.stats) for b in list(_batchers.values())}


def _batcher(loaded: LoadedModel, kind: str) -> Batcher:
    key = (loaded.name, loaded.head, kind)
    batcher = _batchers.get(key)
    if batcher is None:
        with _batchers_lock:
            batcher = _batchers.setdefault(key, Batcher(f"{loaded.name}/{loaded.head}/{kind}",
                                                        partial(RUNNERS[kind], loaded), cache, **LIMITS[kind]))
    return batcher


def submit(loaded: LoadedModel, kind: str, item, cost: int):
    """The result of pass `kind` for one hashable item: cached, shared with an identical request in
    flight, or computed in the next batch with whatever else has queued (on Ray Serve when LAB_RAY_ADDRESS is set;
    at once, alone, inside a ZeroGPU call, whose process has one student's work and no batcher threads)."""
    if in_gpu_call():
        return RUNNERS[kind](loaded, [item])[0]
    if ray_backend.enabled():
        return ray_passes.submit_many(loaded, kind, RUNNERS[kind].__module__,
                                      [((loaded.name, loaded.head, kind, item), item, cost)], ray_claims)[0]
    return _batcher(loaded, kind).submit((loaded.name, loaded.head, kind, item), item, cost)


def submit_many(loaded: LoadedModel, kind: str, items: list, costs: list[int]) -> list:
    """Several items of one student's request, queued together so that they share a batch."""
    if in_gpu_call():
        return list(RUNNERS[kind](loaded, list(items)))
    if ray_backend.enabled():
        return ray_passes.submit_many(loaded, kind, RUNNERS[kind].__module__,
                                      [((loaded.name, loaded.head, kind, i), i, c) for i, c in zip(items, costs)],
                                      ray_claims)
    return _batcher(loaded, kind).submit_many([((loaded.name, loaded.head, kind, i), i, c)
                                               for i, c in zip(items, costs)])


def padded(loaded: LoadedModel, rows: list, segments: list | None = None) -> dict:
    """Right-padded ids, attention mask (and segment ids when given), on the model's device."""
    return pad_rows(rows, loaded.tokenizer.pad_token_id, segments=segments, device=loaded.device)


def encoder_of(loaded: LoadedModel):
    """The part that reads the whole input: the base model, or an encoder-decoder's encoder."""
    return loaded.model.get_encoder() if loaded.family == "seq2seq" else loaded.model.base_model


def _frozen(array: np.ndarray) -> np.ndarray:
    """A result of its own (not a view into the batch's array), read-only: students share it."""
    array = np.array(array, copy=True)
    array.setflags(write=False)
    return array


# ---------------------------------------------------------------- next-token logits


def next_token_logits(loaded: LoadedModel, ids: list[int]) -> np.ndarray:
    """A causal LM's logits for the token after `ids` (float32, one per vocabulary entry)."""
    return submit(loaded, "next", tuple(ids), len(ids))


@register_pass("next", max_batch=64, max_cost=8192)
def _run_next(loaded: LoadedModel, items: list[tuple]) -> list[np.ndarray]:
    """The output head runs at each row's last real position only."""
    import torch

    inputs = padded(loaded, items)
    with torch.inference_mode():
        hidden = loaded.model.base_model(**inputs).last_hidden_state  # [batch, n, hidden]
        last = hidden[torch.arange(len(items), device=hidden.device), inputs["attention_mask"].sum(dim=1) - 1]
        logits = loaded.model.get_output_embeddings()(last).float().cpu().numpy()  # [batch, vocab]
    return [_frozen(row) for row in logits]


# ---------------------------------------------------------------- masked-LM logits


def mlm_logits(loaded: LoadedModel, ids: list[int], positions: list[int]) -> np.ndarray:
    """A masked LM's logits at `positions` ([positions, vocab], float32)."""
    return submit(loaded, "mlm", (tuple(ids), tuple(positions)), len(ids))


def mlm_head(model):
    """The layers after the encoder that turn a hidden state into vocabulary logits (BERT: cls,
    RoBERTa: lm_head, DistilBERT: four modules); None for an architecture not known here."""
    if hasattr(model, "cls"):
        return model.cls
    if hasattr(model, "lm_head"):
        return model.lm_head
    if hasattr(model, "vocab_projector"):
        return lambda h: model.vocab_projector(model.vocab_layer_norm(model.activation(model.vocab_transform(h))))
    return None


@register_pass("mlm", max_batch=64, max_cost=8192)
def _run_mlm(loaded: LoadedModel, items: list[tuple]) -> list[np.ndarray]:
    """The vocabulary head (the costliest layer, 30,522 outputs for BERT) runs at the asked
    positions only, when the architecture's head is known."""
    import torch

    inputs = padded(loaded, [i for i, _ in items])
    device = inputs["input_ids"].device
    rows = torch.tensor([b for b, (_, pos) in enumerate(items) for _ in pos], device=device)
    cols = torch.tensor([p for _, pos in items for p in pos], device=device)
    head = mlm_head(loaded.model)
    with torch.inference_mode():
        if head is not None:
            hidden = loaded.model.base_model(**inputs).last_hidden_state  # [batch, n, hidden]
            logits = head(hidden[rows, cols])  # [asked positions, vocab]
        else:
            logits = loaded.model(**inputs).logits[rows, cols]
    logits = logits.float().cpu().numpy()
    bounds = np.cumsum([0] + [len(pos) for _, pos in items])
    return [_frozen(logits[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]


# ---------------------------------------------------------------- attention weights


def attentions(loaded: LoadedModel, ids: list[int], token_type_ids: list[int] | None = None) -> np.ndarray:
    """Every layer's and head's self-attention, [layers, heads, n, n] float32 (rows sum to 1); for an
    encoder-decoder, its encoder's (see seq2seq_attentions for the decoder's and the cross-attention)."""
    item = (tuple(ids), tuple(token_type_ids) if token_type_ids is not None else None)
    return submit(loaded, "attn", item, len(ids) ** 2)


@register_pass("attn", max_batch=16, max_cost=8 * 128 * 128)
def _run_attn(loaded: LoadedModel, items: list[tuple]) -> list[np.ndarray]:
    """The encoder only: no vocabulary head over every position."""
    import torch

    with_segments = any(segments is not None for _, segments in items)  # absent segments: 0, the default
    inputs = padded(loaded, [i for i, _ in items], [s for _, s in items] if with_segments else None)
    with torch.inference_mode():
        out = encoder_of(loaded)(**inputs, output_attentions=True)
    weights = torch.stack(out.attentions, dim=1).float().cpu().numpy()  # [batch, layers, heads, n, n]
    return [_frozen(weights[b, :, :, :len(i), :len(i)]) for b, (i, _) in enumerate(items)]


# ---------------------------------------------------------------- hidden states


def hidden_states(loaded: LoadedModel, rows: list[list[int]]) -> list[np.ndarray]:
    """Every layer's output for each row of ids, [layers + 1, n, hidden] float32 (index 0: the
    embeddings; an encoder-decoder's encoder). The rows are queued together, so one student's
    sentences share one forward pass."""
    return submit_many(loaded, "hidden", [tuple(r) for r in rows], [len(r) for r in rows])


@register_pass("hidden", max_batch=32, max_cost=4096)
def _run_hidden(loaded: LoadedModel, items: list[tuple]) -> list[np.ndarray]:
    """The encoder only: no vocabulary head over every position."""
    import torch

    with torch.inference_mode():
        out = encoder_of(loaded)(**padded(loaded, items), output_hidden_states=True)
    states = torch.stack(out.hidden_states, dim=1).float().cpu().numpy()  # [batch, layers + 1, n, hidden]
    return [_frozen(states[b, :, :len(i)]) for b, i in enumerate(items)]


# ---------------------------------------------------------------- every token's log-probability


def token_logprobs(loaded: LoadedModel, ids: list[int]) -> np.ndarray:
    """A causal LM's log P(token t | tokens before t) for t = 1 .. n-1 (float32, n-1 values): the
    teacher-forced pass that training uses."""
    return submit(loaded, "logprobs", tuple(ids), len(ids))


@register_pass("logprobs", max_batch=16, max_cost=4096)
def _run_logprobs(loaded: LoadedModel, items: list[tuple]) -> list[np.ndarray]:
    import torch

    inputs = padded(loaded, items)  # right padding: a causal LM's real tokens never see it
    ids = inputs["input_ids"]
    results = []
    with torch.inference_mode():
        logits = loaded.model(**inputs).logits  # [batch, n, vocab]
        for b, row in enumerate(items):  # one row at a time: [n, vocab] in float32 is large
            logp = torch.log_softmax(logits[b, :len(row) - 1].float(), dim=-1)
            results.append(_frozen(logp.gather(1, ids[b, 1:len(row), None])[:, 0].cpu().numpy()))
    return results


# ---------------------------------------------------------------- encoder-decoder (T5)


def decoder_input(loaded: LoadedModel, target: list[int]) -> list[int]:
    """What a teacher-forced decoder reads for `target`: the start token, then the target less its
    last token (T5 starts from <pad>)."""
    start = loaded.model.config.decoder_start_token_id
    return [start if start is not None else loaded.tokenizer.pad_token_id] + list(target[:-1])


def seq2seq_attentions(loaded: LoadedModel, ids: list[int], decoder_ids: list[int]) -> tuple:
    """An encoder-decoder's three kinds of attention for encoder input `ids` and decoder input
    `decoder_ids` (see decoder_input): (encoder [layers, heads, n, n], decoder [layers, heads, m, m],
    cross [layers, heads, m, n]), float32."""
    return submit(loaded, "seq2seq_attn", (tuple(ids), tuple(decoder_ids)), (len(ids) + len(decoder_ids)) ** 2)


def seq2seq_logits(loaded: LoadedModel, ids: list[int], decoder_ids: list[int]) -> np.ndarray:
    """The decoder's logits at every decoder position, [m, vocab] float32: what a teacher-forced
    encoder-decoder predicts for each next target token."""
    return submit(loaded, "seq2seq_logits", (tuple(ids), tuple(decoder_ids)), len(ids) + len(decoder_ids))


def _run_seq2seq(loaded: LoadedModel, items: list[tuple], **kwargs):
    import torch

    encoder = padded(loaded, [i for i, _ in items])
    decoder = padded(loaded, [d for _, d in items])
    with torch.inference_mode():
        return loaded.model(**encoder, decoder_input_ids=decoder["input_ids"],
                            decoder_attention_mask=decoder["attention_mask"], **kwargs)


@register_pass("seq2seq_attn", max_batch=16, max_cost=8 * 256 * 256)
def _run_seq2seq_attn(loaded: LoadedModel, items: list[tuple]) -> list[tuple]:
    import torch

    out = _run_seq2seq(loaded, items, output_attentions=True)
    kinds = [torch.stack(a, dim=1).float().cpu().numpy()  # [batch, layers, heads, rows, cols]
             for a in (out.encoder_attentions, out.decoder_attentions, out.cross_attentions)]
    results = []
    for b, (i, d) in enumerate(items):
        n, m = len(i), len(d)
        enc, dec, cross = kinds[0][b, :, :, :n, :n], kinds[1][b, :, :, :m, :m], kinds[2][b, :, :, :m, :n]
        results.append((_frozen(enc), _frozen(dec), _frozen(cross)))
    return results


@register_pass("seq2seq_logits", max_batch=16, max_cost=4096)
def _run_seq2seq_logits(loaded: LoadedModel, items: list[tuple]) -> list[np.ndarray]:
    logits = _run_seq2seq(loaded, items).logits.float().cpu().numpy()  # [batch, m, vocab]
    return [_frozen(logits[b, :len(d)]) for b, (_, d) in enumerate(items)]


# ---------------------------------------------------------------- helpers for causal LMs and probabilities


# A blank written any of the ways students write one; each becomes the model's own mask token.
BLANK_PATTERN = re.compile(r"\[MASK\]|\[BLANK\]|<mask>|_{3,}", re.IGNORECASE)


def with_mask_token(text: str, mask_token: str) -> str:
    return BLANK_PATTERN.sub(mask_token, text)


def check_length(ids: list[int], limit: int, what: str = "Your text") -> list[int]:
    """ids, or BadInput when there are more than `limit` (what the model, or the lab, reads)."""
    if len(ids) > limit:
        raise BadInput(f"{what} is {len(ids):,} tokens long; at most {limit:,} are read here. "
                       f"Remove about {len(ids) - limit:,} tokens.")
    return ids


def causal_ids(loaded: LoadedModel, text: str, max_tokens: int) -> tuple[list[int], str]:
    """Token ids of a causal LM's prompt, at most max_tokens (and what the model reads, less one for
    the token it predicts), and a note when something was cut: a long prompt keeps its end. An empty
    prompt starts from the BOS token."""
    tokenizer = loaded.tokenizer
    ids = tokenizer(text)["input_ids"] if text.strip() else []
    if not ids:
        start = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
        ids = [start]
    limit = min(max_tokens, loaded.max_tokens - 1)
    if len(ids) > limit:
        return ids[-limit:], (f"The prompt is {len(ids)} tokens; {limit} are read here, so only the end was kept "
                              "(the last tokens matter most for the next one).")
    return ids, ""


def softmax(logits: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """softmax(logits / T) in float64, along the last axis."""
    z = np.asarray(logits, dtype=np.float64) / temperature
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def top_k(values: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The k largest (token id, value) pairs, largest first (ties: lower id first). Linear in the
    vocabulary size: a full sort of 50,000 logits per request costs more than the request's share
    of a batched forward pass."""
    values = np.asarray(values)
    k = min(k, len(values))
    if k < len(values):
        threshold = np.partition(values, len(values) - k)[len(values) - k]  # the k-th largest
        candidates = np.flatnonzero(values >= threshold)  # k of them, or more when values tie
    else:
        candidates = np.arange(len(values))
    order = candidates[np.lexsort((candidates, -values[candidates]))][:k]
    return [(int(i), float(values[i])) for i in order]
