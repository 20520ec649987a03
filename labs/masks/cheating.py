"""Masks, the encoder that cheats: one tiny character-level transformer trained to predict the next character twice,
from the same seed and the same batches, once with the causal mask and once without it (bidirectional, an encoder's
attention), then evaluated the honest way, asked to generate, and its attention read.

Without the mask, position t can attend to position t + 1, which is the very character it must predict: the
training loss falls to almost nothing because the model learns to copy the answer, not to predict it. Evaluated
honestly (each character predicted from the characters before it only, as generation always must), it has
learned nothing useful. The model is written out here (token + position embeddings, pre-norm blocks of multi-head
self-attention and an MLP, an output head) so that its attention weights can be read directly.

The corpus is LM Lab's own: the short reviews in assets/sentiment.csv (every tenth held out, as the Next token
lab's n-gram panel splits them) or the everyday sentences in assets/everyday_sentences.txt (every tenth held out),
read character by character; a text is one line, its end the newline character."""

from __future__ import annotations

import csv
import math
import threading
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from labs.core.errors import BadInput, check_choice, check_int, check_text

ASSETS = Path(__file__).resolve().parents[2] / "assets"
CORPORA = {
    "reviews": "assets/sentiment.csv: the 352 short reviews written for LM Lab (films, restaurants, products, travel)",
    "everyday": "assets/everyday_sentences.txt: 400 everyday sentences written for LM Lab from ten templates",
}
HELD_OUT_EVERY = 10
END = "\n"  # the end of a text: one character of the vocabulary like any other
UNKNOWN = "?"  # a character seen fewer than MIN_COUNT times in training is read as this
MIN_COUNT = 3
BLOCK = 48  # characters a model reads at once (its positions)
D_MODEL, HEADS, LAYERS = 32, 2, 2
BATCH, LR = 32, 1e-2
MIN_STEPS, DEFAULT_STEPS, MAX_STEPS = 100, 300, 1500
DEFAULT_SEED = 0
EXAMPLE = "The food was"
MAX_NEW = 120
DEFAULT_NEW = 60
MAX_PROMPT = 200


# ---------------------------------------------------------------- the corpus, character by character


def corpus_texts(corpus: str) -> tuple[str, ...]:
    if corpus == "reviews":
        with (ASSETS / "sentiment.csv").open(newline="") as f:
            return tuple(row["text"].strip() for row in csv.DictReader(f))
    lines = (ASSETS / "everyday_sentences.txt").read_text().splitlines()
    return tuple(line.strip() for line in lines if line.strip() and not line.startswith("#"))


def split(texts) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(train, held out): every tenth text held out (the 10th, 20th, …). Deterministic."""
    held = tuple(t for i, t in enumerate(texts) if i % HELD_OUT_EVERY == HELD_OUT_EVERY - 1)
    return tuple(t for i, t in enumerate(texts) if i % HELD_OUT_EVERY != HELD_OUT_EVERY - 1), held


@dataclass(frozen=True)
class Data:
    corpus: str
    chars: tuple[str, ...]  # the vocabulary: id → character
    train_ids: torch.Tensor  # the training texts, one stream, each ended by END
    held_ids: torch.Tensor
    train_texts: int
    held_texts: int

    def encode(self, text: str) -> list[int]:
        index = {c: i for i, c in enumerate(self.chars)}
        return [index.get(c, index[UNKNOWN]) for c in text]

    def decode(self, ids) -> str:
        return "".join(self.chars[int(i)] for i in ids)


def load_data(corpus: str) -> Data:
    train, held = split(corpus_texts(corpus))
    stream = "".join(t + END for t in train)
    counts: dict[str, int] = {}
    for c in stream:
        counts[c] = counts.get(c, 0) + 1
    chars = tuple(sorted({c for c, n in counts.items() if n >= MIN_COUNT} | {UNKNOWN, END}))
    data = Data(corpus, chars, torch.empty(0), torch.empty(0), len(train), len(held))
    held_stream = "".join(t + END for t in held)
    return Data(corpus, chars, torch.tensor(data.encode(stream)), torch.tensor(data.encode(held_stream)),
                len(train), len(held))


# ---------------------------------------------------------------- the model


class Attention(nn.Module):
    """Multi-head self-attention, written out: weights = softmax(Q Kᵀ / √d_head, with −∞ above the diagonal when
    causal); the weights are returned so that they can be shown."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads, self.d_head = heads, d // heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x: torch.Tensor, causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.heads, self.d_head).transpose(1, 2) for z in self.qkv(x).split(d, dim=-1))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        if causal:
            future = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
            scores = scores.masked_fill(future, float("-inf"))
        weights = scores.softmax(dim=-1)  # (batch, head, query, key)
        return self.out((weights @ v).transpose(1, 2).reshape(b, t, d)), weights


class Block(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.ln1, self.attn, self.ln2 = nn.LayerNorm(d), Attention(d, heads), nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x, causal: bool):
        a, weights = self.attn(self.ln1(x), causal)
        x = x + a
        return x + self.mlp(self.ln2(x)), weights


class TinyLM(nn.Module):
    """Token + position embeddings, `layers` blocks, a final LayerNorm and an output head over the characters."""

    def __init__(self, vocab: int, d: int = D_MODEL, heads: int = HEADS, layers: int = LAYERS, block: int = BLOCK):
        super().__init__()
        self.block = block
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(block, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)

    def forward(self, ids: torch.Tensor, causal: bool) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """(logits (batch, position, vocab), each layer's attention weights (batch, head, query, key))."""
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))
        found = []
        for block in self.blocks:
            x, weights = block(x, causal)
            found.append(weights)
        return self.head(self.ln(x)), found


# ---------------------------------------------------------------- training: twice, the same seed and batches


def batches(data: Data, steps: int, seed: int, batch: int = BATCH, block: int = BLOCK):
    """The training windows, step by step: (inputs, targets), the targets the inputs shifted by one character."""
    g = torch.Generator().manual_seed(seed)
    offsets = torch.arange(block + 1)
    for _ in range(steps):
        starts = torch.randint(0, len(data.train_ids) - block - 1, (batch,), generator=g)
        windows = data.train_ids[starts[:, None] + offsets]
        yield windows[:, :-1], windows[:, 1:]


def loss_of(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def train(data: Data, causal: bool, steps: int, seed: int, **shape) -> tuple[TinyLM, list[float]]:
    """A TinyLM trained for the next character with (causal) or without the causal mask: its training losses."""
    # devices=[]: the CPU generator only (on ZeroGPU, spaces makes CUDA look available in the app's process, where
    # forking its generator would start CUDA)
    with torch.random.fork_rng(devices=[]):  # the same initial weights for both runs; the app's global RNG left alone
        torch.manual_seed(seed)
        model = TinyLM(len(data.chars), **shape)
    opt = torch.optim.AdamW(model.parameters(), lr=LR)
    losses = []
    model.train()
    for x, y in batches(data, steps, seed, block=model.block):
        loss = loss_of(model(x, causal)[0], y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    return model, losses


# ---------------------------------------------------------------- evaluation: as trained, and the honest ways


def windows(ids: torch.Tensor, block: int) -> torch.Tensor:
    """Non-overlapping windows of block + 1 characters (inputs and the next character of each)."""
    n = (len(ids) - 1) // (block + 1)
    return ids[: n * (block + 1)].view(n, block + 1)


@torch.inference_mode()
def loss_with_mask(model: TinyLM, w: torch.Tensor, causal: bool) -> float:
    """Mean cross-entropy (nats per character) of every position's next character, the whole window read at once."""
    return loss_of(model(w[:, :-1], causal)[0], w[:, 1:]).item()


@torch.inference_mode()
def loss_future_cut(model: TinyLM, w: torch.Tensor, causal: bool) -> float:
    """Mean cross-entropy with the future cut off: position t is predicted by running the model on characters 0…t
    only (its last position), as generation does. Nothing after t exists, whatever the mask."""
    total = 0.0
    for t in range(w.shape[1] - 1):
        logits = model(w[:, : t + 1], causal)[0][:, -1]
        total += F.cross_entropy(logits, w[:, t + 1], reduction="sum").item()
    return total / (w.shape[0] * (w.shape[1] - 1))


def unigram_loss(data: Data) -> float:
    """The held-out loss of a model that ignores context: each character's training frequency (add-one)."""
    counts = torch.bincount(data.train_ids, minlength=len(data.chars)).double() + 1
    logp = (counts / counts.sum()).log()
    return -logp[data.held_ids].mean().item()


@torch.inference_mode()
def attention_shares(model: TinyLM, w: torch.Tensor, causal: bool) -> list[list[dict]]:
    """For each layer and head, over every query position that has a next one: the mean weight on the next
    position (key i + 1) and the mean weight on all later positions (above the diagonal)."""
    found = []
    for weights in model(w[:, :-1], causal)[1]:  # (batch, head, query, key)
        t = weights.shape[-1]
        nxt = weights.diagonal(offset=1, dim1=-2, dim2=-1)  # (batch, head, t - 1): weight of i on i + 1
        future = (weights * torch.ones(t, t).triu(1)).sum(-1)[..., :-1]  # (batch, head, t - 1)
        found.append([{"next": nxt[:, h].mean().item(), "future": future[:, h].mean().item()}
                      for h in range(weights.shape[1])])
    return found


@torch.inference_mode()
def generate(model: TinyLM, data: Data, prompt: str, new: int, causal: bool) -> str:
    """Greedy generation, one character at a time: each step reads the prompt and what it has written so far (the
    last `block` characters), the past only, and appends the most likely next character."""
    ids = data.encode(prompt)
    for _ in range(new):
        logits = model(torch.tensor([ids[-model.block:]]), causal)[0][0, -1]
        ids.append(int(logits.argmax()))
    return data.decode(ids[len(prompt):])


@torch.inference_mode()
def future_change(model: TinyLM, data: Data, prompt: str, causal: bool) -> float:
    """Change the prompt's last character: the largest change it makes to the logits at the positions before it.
    Under the causal mask, 0 (they never saw it); without it, the earlier positions read it."""
    ids = data.encode(prompt)[-model.block:]
    if len(ids) < 2:
        return 0.0
    other = list(ids)
    other[-1] = (ids[-1] + 1) % len(data.chars)
    a, b = (model(torch.tensor([x]), causal)[0][0, :-1] for x in (ids, other))
    return (a - b).abs().max().item()


# ---------------------------------------------------------------- both models, trained once per settings


@dataclass(frozen=True)
class Trained:
    data: Data
    steps: int
    seed: int
    shape: tuple[tuple[str, int], ...]  # d, heads, layers, block
    models: dict  # "masked" / "cheater" → TinyLM
    losses: dict  # → the training loss at every step
    evaluation: dict  # → {"train", "held_out": {"as_trained", "causal_mask", "future_cut"}, "attention"}
    seconds: float  # both trainings, wall clock, as measured here


CAUSAL = {"masked": True, "cheater": False}
_trained: dict[tuple, Trained] = {}
_lock = threading.Lock()
KEEP = 4  # trained pairs kept (the oldest is dropped)


def evaluate(model: TinyLM, data: Data, causal: bool) -> dict:
    held, train_w = windows(data.held_ids, model.block), windows(data.train_ids, model.block)[:64]
    return {"train": loss_with_mask(model, train_w, causal),
            "held_out": {"as_trained": loss_with_mask(model, held, causal),
                         "causal_mask": loss_with_mask(model, held, True),
                         "future_cut": loss_future_cut(model, held, causal)},
            "attention": attention_shares(model, held, causal)}


def trained(corpus: str, steps: int, seed: int, **shape) -> Trained:
    """Both models for these settings: trained once (a class asking for the same thing waits for the first)."""
    import time

    key = (corpus, steps, seed, tuple(sorted(shape.items())))
    with _lock:
        if key not in _trained:
            start = time.perf_counter()
            data = load_data(corpus)
            pairs = {name: train(data, causal, steps, seed, **shape) for name, causal in CAUSAL.items()}
            models = {name: m for name, (m, _) in pairs.items()}
            evaluation = {name: evaluate(models[name], data, CAUSAL[name]) for name in CAUSAL}
            _trained[key] = Trained(data, steps, seed, key[3], models, {n: ls for n, (_, ls) in pairs.items()},
                                    evaluation, time.perf_counter() - start)
            while len(_trained) > KEEP:
                _trained.pop(next(iter(_trained)))
        return _trained[key]


# ---------------------------------------------------------------- the student's prompt


def check_prompt(prompt, data: Data) -> str:
    """The prompt as typed, less leading whitespace: a trailing space is a character the model reads."""
    check_text(prompt, EXAMPLE, max_chars=MAX_PROMPT, what="prompt")
    prompt = prompt.lstrip()
    unknown = sorted({c for c in prompt if c not in data.chars or c == UNKNOWN})
    if unknown:
        raise BadInput(f"These characters are not in the model's vocabulary (the characters of its corpus): "
                       f"{' '.join(unknown)}. Leave them out, for example “{EXAMPLE}”.")
    return prompt


@torch.inference_mode()
def prompt_attention(model: TinyLM, data: Data, prompt: str, causal: bool) -> list:
    """Each layer's attention weights on the prompt (its last `block` characters): [layer][head][query][key]."""
    ids = data.encode(prompt)[-model.block:]
    return [w[0].tolist() for w in model(torch.tensor([ids]), causal)[1]]


@dataclass(frozen=True)
class Cheating:
    trained: Trained
    prompt: str
    generations: dict  # name → the characters it wrote after the prompt
    attention: dict  # name → [layer][head][query][key] on the prompt
    future_change: dict  # name → the largest logit change before the prompt's last character when it changes

    @property
    def prompt_chars(self) -> list[str]:
        return list(self.prompt[-self.trained.models["masked"].block:])

    def to_json(self) -> dict:
        t, d = self.trained, self.trained.data
        shape = dict(t.shape)
        masked = t.models["masked"]
        models = {name: {"mask": "causal" if CAUSAL[name] else "none (bidirectional)",
                         "train_losses": t.losses[name], **t.evaluation[name],
                         "generation": self.generations[name], "prompt_attention": self.attention[name],
                         "future_change": self.future_change[name]} for name in CAUSAL}
        return {"corpus": d.corpus, "corpus_description": CORPORA[d.corpus], "train_texts": d.train_texts,
                "held_out_texts": d.held_texts, "train_characters": len(d.train_ids),
                "held_out_characters": len(d.held_ids), "vocabulary": "".join(d.chars),
                "model": {"d_model": masked.tok.embedding_dim, "heads": masked.blocks[0].attn.heads,
                          "layers": len(masked.blocks), "block": masked.block,
                          "parameters": sum(p.numel() for p in masked.parameters()), **shape},
                "steps": t.steps, "seed": t.seed, "batch": BATCH, "learning_rate": LR,
                "training_seconds": t.seconds, "unigram_loss": unigram_loss(d), "uniform_loss": math.log(len(d.chars)),
                "prompt": self.prompt, "prompt_characters": self.prompt_chars, "models": models}


def check_settings(corpus, steps, seed) -> tuple[str, int, int]:
    return (check_choice(corpus, list(CORPORA), "corpus"), check_int(steps, "Training steps", MIN_STEPS, MAX_STEPS),
            check_int(seed, "Seed", 0, 10_000))


def run(prompt=EXAMPLE, corpus="everyday", steps=DEFAULT_STEPS, seed=DEFAULT_SEED, new_chars=DEFAULT_NEW,
        **shape) -> Cheating:
    """Both models (trained once per settings), then the prompt: each one's greedy continuation, its attention on
    the prompt, and what changing the prompt's last character does to the logits before it."""
    corpus, steps, seed = check_settings(corpus, steps, seed)
    new = check_int(new_chars, "Characters to generate", 1, MAX_NEW)
    check_text(prompt, EXAMPLE, max_chars=MAX_PROMPT, what="prompt")  # before training: bad input trains nothing
    t = trained(corpus, steps, seed, **shape)
    prompt = check_prompt(prompt, t.data)
    ms = t.models
    return Cheating(t, prompt, {n: generate(ms[n], t.data, prompt, new, CAUSAL[n]) for n in CAUSAL},
                    {n: prompt_attention(ms[n], t.data, prompt, CAUSAL[n]) for n in CAUSAL},
                    {n: future_change(ms[n], t.data, prompt, CAUSAL[n]) for n in CAUSAL})


def cheating_json(prompt: str = EXAMPLE, corpus: str = "everyday", steps: int = DEFAULT_STEPS,
                  seed: int = DEFAULT_SEED, new_chars: int = DEFAULT_NEW) -> dict:
    """The `cheating` API: the same tiny transformer trained with and without the causal mask, its losses (as
    trained and the honest ways), its attention on the next position, and each one's greedy continuation."""
    return run(prompt, corpus, steps, seed, new_chars).to_json()
