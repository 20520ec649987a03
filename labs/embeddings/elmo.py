"""Embeddings, ELMo in miniature: a forward and a separate backward LSTM language model (torch nn.LSTM, two layers)
trained on the word corpus (labs/embeddings/word_corpus.py), each layer's vector for a word in a sentence, ELMo's
mixture γ Σ_j softmax(s)_j h_j with γ and s learned for a small task, and the same word in two sentences that share
their left context, beside the contextual encoder (all-MiniLM-L6-v2, the lab's shared hidden-states pass).

Layer 0 is the word's token embedding (a word embedding here; ELMo's is a character CNN), the forward and the backward
model's rows concatenated; layers 1 and 2 are [forward h_j; backward h_j]. The vocabulary is the corpus's most
frequent words plus <unk>; every tenth document is held out for the perplexities. The task that learns γ and s:
the sentiment of LM Lab's own reviews (trained on the file's train split, scored on its validation split), a
logistic head on the review's mean mixed vector (the mean over its words commutes with the mixture)."""

from __future__ import annotations

import functools
import math
import threading
from dataclasses import dataclass

import numpy as np

from labs.core.errors import BadInput, check_text
from labs.core.models import models
from labs.embeddings import compute, word_corpus

VOCAB, DIM, LAYERS, SEQ, BATCH, EPOCHS, LR, SEED = 1000, 48, 2, 20, 32, 3, 0.03, 0
TASK_STEPS, TASK_LR = 300, 0.05
HELD_OUT_EVERY = 10
UNK = "<unk>"
PAIR = ("I sat by the bank of the river.", "I sat by the bank to count my money.")  # LM Lab's own pair
WORD = "bank"
ENCODER = models.MINILM_NAME
_lock = threading.Lock()


def make_lm(vocab_size: int, dim: int, layers: int):
    """One direction's LM: word embedding → `layers` stacked one-layer nn.LSTMs (each layer's output kept) → logits."""
    import torch
    from torch import nn

    class LSTMLanguageModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab_size, dim)
            self.lstms = nn.ModuleList(nn.LSTM(dim, dim, batch_first=True) for _ in range(layers))
            self.out = nn.Linear(dim, vocab_size)

        def forward(self, ids):  # ids [batch, T] → (logits [batch, T, V], [layer 0, 1, …] each [batch, T, dim])
            h = [self.embed(ids)]
            for lstm in self.lstms:
                h.append(lstm(h[-1])[0])
            return self.out(h[-1]), h

    torch.manual_seed(SEED)
    return LSTMLanguageModel()


@dataclass
class BiLM:
    words: list[str]  # index → word; the last is <unk>
    forward: object  # reads left to right, predicts the next word
    backward: object  # reads right to left, predicts the previous word
    perplexity: dict  # "forward" / "backward" → held-out perplexity
    train_losses: dict  # direction → mean cross-entropy per epoch
    train_words: int
    held_out_words: int
    settings: dict

    @property
    def index(self) -> dict:
        return {w: i for i, w in enumerate(self.words)}

    def ids(self, words) -> list[int]:
        index, unk = self.index, len(self.words) - 1
        return [index.get(w, unk) for w in words]


def split_documents():
    docs = word_corpus.documents()
    train = [d for i, d in enumerate(docs) if i % HELD_OUT_EVERY != HELD_OUT_EVERY - 1]
    held = [d for i, d in enumerate(docs) if i % HELD_OUT_EVERY == HELD_OUT_EVERY - 1]
    return train, held


def cross_entropy_sum(model, docs_ids: list[list[int]]) -> tuple[float, int]:
    """(Σ −log p(next word), how many predicted), each document read alone from its first word."""
    import torch

    total, n = 0.0, 0
    with torch.inference_mode():
        for ids in docs_ids:
            if len(ids) < 2:
                continue
            logits, _ = model(torch.tensor([ids]))
            total += float(torch.nn.functional.cross_entropy(logits[0, :-1], torch.tensor(ids[1:]), reduction="sum"))
            n += len(ids) - 1
    return total, n


def train_direction(stream: list[int], vocab_size: int, dim: int, layers: int, epochs: int,
                    batch_size: int = BATCH) -> tuple[object, list]:
    import torch

    model = make_lm(vocab_size, dim, layers)
    torch.manual_seed(SEED)
    data = torch.tensor(stream)
    chunks = (len(data) - 1) // SEQ
    x = data[:chunks * SEQ].view(chunks, SEQ)
    y = data[1:chunks * SEQ + 1].view(chunks, SEQ)
    optimiser = torch.optim.Adam(model.parameters(), lr=LR)
    losses = []
    for _ in range(epochs):
        order, total = torch.randperm(chunks), 0.0
        for start in range(0, chunks, batch_size):
            batch = order[start:start + batch_size]
            logits, _ = model(x[batch])
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab_size), y[batch].reshape(-1))
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += loss.item() * len(batch)
        losses.append(total / chunks)
    model.eval()
    return model, losses


@functools.lru_cache(maxsize=2)
def _train(vocab: int, dim: int, layers: int, epochs: int, batch: int) -> BiLM:
    train, held = split_documents()
    words = word_corpus.vocabulary(train, max_size=vocab) + [UNK]
    index = {w: i for i, w in enumerate(words)}
    as_ids = [[index.get(w, len(words) - 1) for w in d] for d in train]
    held_ids = [[index.get(w, len(words) - 1) for w in d] for d in held]
    stream = [i for d in as_ids for i in d]
    fwd, fwd_losses = train_direction(stream, len(words), dim, layers, epochs, batch)
    bwd, bwd_losses = train_direction(stream[::-1], len(words), dim, layers, epochs, batch)
    perplexity = {}
    for name, model, docs in (("forward", fwd, held_ids), ("backward", bwd, [d[::-1] for d in held_ids])):
        total, n = cross_entropy_sum(model, docs)
        perplexity[name] = math.exp(total / n)
    settings = {"vocabulary": len(words), "dims": dim, "layers": layers, "epochs": epochs, "seq": SEQ,
                "batch": batch, "lr": LR, "optimiser": "Adam", "seed": SEED}
    return BiLM(words, fwd, bwd, perplexity, {"forward": fwd_losses, "backward": bwd_losses}, len(stream),
                sum(len(d) for d in held_ids), settings)


def trained(vocab: int = VOCAB, dim: int = DIM, layers: int = LAYERS, epochs: int = EPOCHS, batch: int = BATCH) -> BiLM:
    """Both directions at these settings, trained once (cached; one training at a time)."""
    with _lock:
        return _train(vocab, dim, layers, epochs, batch)


def layer_vectors(m: BiLM, words: list[str]) -> np.ndarray:
    """[layers + 1, T, 2·dim]: layer 0 = [forward embedding; backward embedding], layer j = [forward h_j; backward h_j]
    (the backward model reads the sentence reversed; its states are turned back to the sentence's order)."""
    import torch

    ids = torch.tensor([m.ids(words)])
    with torch.inference_mode():
        _, fwd = m.forward(ids)
        _, bwd = m.backward(ids.flip(1))
    return np.stack([np.concatenate([f[0].numpy(), b[0].flip(0).numpy()], axis=-1) for f, b in zip(fwd, bwd)])


def mix(layers, s, gamma):
    """ELMo's γ Σ_j softmax(s)_j h_j over the first axis of `layers` (torch tensors)."""
    import torch

    return gamma * torch.einsum("j,j...->...", torch.softmax(s, dim=0), layers)


@dataclass
class Mixture:
    task: str
    s: list[float]  # the learned raw weights
    weights: list[float]  # softmax(s)
    gamma: float
    train_accuracy: float
    test_accuracy: float
    train_examples: int
    test_examples: int
    majority: float  # the validation split's most common label's share: what always guessing it scores


def review_features(m: BiLM) -> tuple[np.ndarray, np.ndarray, list[str]]:
    reviews = [r for r in word_corpus.reviews() if r.words]
    feats = np.stack([layer_vectors(m, list(r.words)).mean(axis=1) for r in reviews])  # [n, layers + 1, 2·dim]
    return feats, np.array([r.label == "positive" for r in reviews], dtype=np.float32), [r.split for r in reviews]


@functools.lru_cache(maxsize=2)
def _mixture(vocab: int, dim: int, layers: int, epochs: int, batch: int) -> tuple[Mixture, object]:
    import torch

    m = _train(vocab, dim, layers, epochs, batch)
    feats, labels, splits = review_features(m)
    train = np.array([s == "train" for s in splits])
    x, y = torch.tensor(feats), torch.tensor(labels)
    torch.manual_seed(SEED)
    s, gamma = torch.zeros(layers + 1, requires_grad=True), torch.ones(1, requires_grad=True)
    head = torch.nn.Linear(feats.shape[-1], 1)
    optimiser = torch.optim.Adam([s, gamma, *head.parameters()], lr=TASK_LR)
    for _ in range(TASK_STEPS):
        logit = head(mix(x[train].transpose(0, 1), s, gamma)).squeeze(-1)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logit, y[train])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    with torch.no_grad():
        correct = ((head(mix(x.transpose(0, 1), s, gamma)).squeeze(-1) > 0).float() == y).numpy()
    r = Mixture("sentiment of LM Lab's own reviews (positive / negative)", s.tolist(),
                torch.softmax(s, 0).tolist(), float(gamma.detach()), float(correct[train].mean()),
                float(correct[~train].mean()), int(train.sum()), int((~train).sum()),
                float(max(labels[~train].mean(), 1 - labels[~train].mean())))
    return r, (s.detach(), gamma.detach(), head)


def mixture(vocab: int = VOCAB, dim: int = DIM, layers: int = LAYERS, epochs: int = EPOCHS, batch: int = BATCH) -> Mixture:
    with _lock:
        return _mixture(vocab, dim, layers, epochs, batch)[0]


def word_position(words: list[str], word: str, number: int) -> int:
    if word not in words:
        raise BadInput(f"Sentence {number} does not contain the word “{word}” (as a lower-cased word).")
    return words.index(word)


@dataclass
class PairResult:
    sentences: tuple[str, str]
    word: str
    positions: tuple[int, int]
    shared_left: bool  # the words before the word are the same in both
    unknown: list[str]  # the sentences' words the biLM reads as <unk>
    layers: list[dict]  # per ELMo layer: cosine of [fwd; bwd], of each half; each half's distance; forward identical?
    encoder: str
    encoder_cosines: list[float]  # per encoder layer (0 = embeddings)
    perplexity: dict
    mixture: Mixture
    mixed_cosine: float  # the two ELMo vectors γ Σ softmax(s)_j h_j, with the task's weights

    def to_json(self) -> dict:
        x = self.mixture
        return {"sentences": list(self.sentences), "word": self.word, "positions": list(self.positions),
                "shared_left_context": self.shared_left, "unknown_words": self.unknown, "elmo_layers": self.layers,
                "elmo_mixed_cosine": round(self.mixed_cosine, 6),
                "encoder": {"model": self.encoder, "cosine_by_layer": [round(c, 6) for c in self.encoder_cosines]},
                "perplexity": {k: round(v, 3) for k, v in self.perplexity.items()},
                "mixture": {"task": x.task, "s": [round(v, 4) for v in x.s], "softmax_s": [round(v, 4) for v in x.weights],
                            "gamma": round(x.gamma, 4), "train_accuracy": round(x.train_accuracy, 4),
                            "test_accuracy": round(x.test_accuracy, 4), "train_examples": x.train_examples,
                            "test_examples": x.test_examples, "majority_baseline": round(x.majority, 4)}}


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(compute.cosine_matrix(np.stack([a, b]))[0, 1])


def compare(first=PAIR[0], second=PAIR[1], word=WORD, *, vocab: int = VOCAB, dim: int = DIM, layers: int = LAYERS,
            epochs: int = EPOCHS, batch: int = BATCH) -> PairResult:
    """The word in both sentences: ELMo's layers (each half), the learned mixture, and the encoder's layers."""
    import torch

    first = check_text(first, PAIR[0], max_chars=300, what="sentence 1")
    second = check_text(second, PAIR[1], max_chars=300, what="sentence 2")
    word = check_text(word, WORD, max_chars=40, what="word").lower()
    if len(word_corpus.tokens(word)) != 1 or word_corpus.tokens(word)[0] != word:
        raise BadInput(f"Type one word of letters (2 to 15), for example “{WORD}”.")
    words = (word_corpus.tokens(first), word_corpus.tokens(second))
    positions = tuple(word_position(w, word, i + 1) for i, w in enumerate(words))
    m = trained(vocab, dim, layers, epochs, batch)
    with _lock:
        mix_result, (s, gamma, _) = _mixture(vocab, dim, layers, epochs, batch)
    vectors = [layer_vectors(m, w)[:, p] for w, p in zip(words, positions)]  # each [layers + 1, 2·dim]
    half = vectors[0].shape[-1] // 2
    rows = [{"layer": j, "cosine": round(cosine(vectors[0][j], vectors[1][j]), 6),
               "forward_cosine": round(cosine(vectors[0][j][:half], vectors[1][j][:half]), 6),
               "backward_cosine": round(cosine(vectors[0][j][half:], vectors[1][j][half:]), 6),
               "forward_distance": round(float(np.linalg.norm(vectors[0][j][:half] - vectors[1][j][:half])), 6),
               "backward_distance": round(float(np.linalg.norm(vectors[0][j][half:] - vectors[1][j][half:])), 6),
               "forward_identical": bool(np.array_equal(vectors[0][j][:half], vectors[1][j][:half]))}
              for j in range(len(vectors[0]))]
    mixed = [mix(torch.tensor(v), s, gamma).numpy() for v in vectors]
    r = compute.run(compute.check_model(ENCODER), f"{first}\n{second}", word)
    known = set(m.words)
    unknown = sorted({w for ws in words for w in ws if w not in known})
    return PairResult((first, second), word, positions, words[0][:positions[0]] == words[1][:positions[1]], unknown,
                      rows, r.model, compute.cosine_matrix(r.by_layer)[:, 0, 1].tolist(), m.perplexity, mix_result,
                      cosine(*mixed))


def elmo_json(first: str = PAIR[0], second: str = PAIR[1], word: str = WORD) -> dict:
    """The `elmo` API: trains (cached) on the first call."""
    return compare(first, second, word).to_json()
