"""The forward passes several labs share: next-token logits (Next token, Fill in the blank's
left-only panel), masked-LM logits at chosen positions (Fill in the blank), and attention weights
(Attention, Masks).

Every function takes a loaded model (resolved once by the caller) and token ids, and returns
numpy arrays. Results are cached here, and only here, keyed by the model and the exact ids: the
same example on every student's screen costs one forward pass."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from labs.models import LoadedModel

CACHE_BYTES = 256 * 1024 * 1024  # every cached result together; the oldest are dropped first


class ResultCache:
    """A thread-safe LRU of numpy results bounded by their total size in bytes."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._items: OrderedDict = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        return None

    def put(self, key, value: np.ndarray) -> None:
        with self._lock:
            if key in self._items:
                return
            self._items[key] = value
            self._bytes += value.nbytes
            while self._bytes > self.max_bytes and len(self._items) > 1:
                _, old = self._items.popitem(last=False)
                self._bytes -= old.nbytes

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0

    @property
    def nbytes(self) -> int:
        return self._bytes


cache = ResultCache(CACHE_BYTES)
forward_passes = {"count": 0}  # how many times a model ran (tests count them)


def _cached(key, compute) -> np.ndarray:
    hit = cache.get(key)
    if hit is not None:
        return hit
    value = compute()
    value.setflags(write=False)  # shared between students: nobody may change it
    forward_passes["count"] += 1
    cache.put(key, value)
    return value


def _tensor(loaded: LoadedModel, rows: list[list[int]]):
    import torch

    return torch.tensor(rows, device=loaded.device)


def next_token_logits(loaded: LoadedModel, ids: list[int]) -> np.ndarray:
    """A causal LM's logits for the token after `ids` (float32, one per vocabulary entry).
    The output head runs at the last position only."""
    def compute():
        import torch

        with torch.no_grad():
            hidden = loaded.model.base_model(input_ids=_tensor(loaded, [ids])).last_hidden_state[:, -1]
            return loaded.model.get_output_embeddings()(hidden)[0].float().cpu().numpy()

    return _cached((loaded.name, "next", tuple(ids)), compute)


def mlm_logits(loaded: LoadedModel, ids: list[int], positions: list[int]) -> np.ndarray:
    """A masked LM's logits at `positions` ([positions, vocab], float32). For BERT the vocabulary
    head (the costliest layer, 30,522 outputs) runs on those positions alone."""
    def compute():
        import torch

        model, inputs = loaded.model, {"input_ids": _tensor(loaded, [ids])}
        at = torch.tensor(positions, device=loaded.device)
        with torch.no_grad():
            if hasattr(model, "bert") and hasattr(model, "cls"):
                return model.cls(model.bert(**inputs).last_hidden_state[0, at]).float().cpu().numpy()
            return model(**inputs).logits[0, at].float().cpu().numpy()

    return _cached((loaded.name, "mlm", tuple(ids), tuple(positions)), compute)


def attentions(loaded: LoadedModel, ids: list[int], token_type_ids: list[int] | None = None) -> np.ndarray:
    """Every layer's and head's attention, [layers, heads, n, n] float32 (rows sum to 1). Runs the
    base model only: no vocabulary head over every position."""
    def compute():
        import torch

        inputs = {"input_ids": _tensor(loaded, [ids])}
        if token_type_ids is not None:
            inputs["token_type_ids"] = _tensor(loaded, [token_type_ids])
        with torch.no_grad():
            out = loaded.model.base_model(**inputs, output_attentions=True)
        return torch.stack([a[0] for a in out.attentions]).float().cpu().numpy()

    key = (loaded.name, "attn", tuple(ids), tuple(token_type_ids) if token_type_ids is not None else None)
    return _cached(key, compute)


def causal_ids(loaded: LoadedModel, text: str, max_tokens: int | None = None) -> tuple[list[int], str]:
    """Token ids of a causal LM's prompt, and a note when something was cut. An empty prompt starts
    from the BOS token; a prompt longer than the model reads keeps its end (room is left for the
    token it predicts)."""
    tokenizer = loaded.tokenizer
    ids = tokenizer(text)["input_ids"] if text.strip() else []
    if not ids:
        start = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
        ids = [start]
    limit = min(max_tokens or loaded.max_tokens, loaded.max_tokens - 1)
    if len(ids) > limit:
        return ids[-limit:], f"The prompt is {len(ids)} tokens; the model reads {limit}, so only the end was kept."
    return ids, ""


def softmax(logits: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """softmax(logits / T) in float64, along the last axis."""
    z = np.asarray(logits, dtype=np.float64) / temperature
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def top_k(probs: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The k most likely (token id, probability) pairs, best first (ties: lower id first)."""
    order = np.argsort(-probs, kind="stable")[:k]
    return [(int(i), float(probs[i])) for i in order]
