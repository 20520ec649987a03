"""Next token, the computation: a causal LM's next-token distribution; temperature, top-k and top-p
as generate() applies them; sampling; and softmax by hand (exercise B2)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labs.core.errors import BadInput, check_int, check_number, check_text
from labs.core.models import models
from labs.core.work import lm

TOP_N = 20
EXAMPLE = "Once upon a time, there was a"
# A long paragraph: a forward pass of SmolLM2 or GPT-2 over it stays well under a second on 2 cores,
# and a 100,000-character prompt cannot hold the model for minutes (it read 8,191 tokens in 150 s).
MAX_PROMPT_TOKENS = 256


def check_prompt(prompt, allow_empty: bool = False) -> str:
    # Not stripped: a trailing space changes the next token.
    check_text(prompt, EXAMPLE, what="prompt", allow_empty=allow_empty)
    return prompt


def check_knobs(temperature, top_k, top_p) -> tuple[float, int, float]:
    temperature = check_number(temperature, "Temperature", 0, 5, hint=" (0 = greedy)")
    top_p = check_number(top_p, "Top-p", 0, 1, low_open=True)
    top_k = check_int(top_k, "Top-k", 0, 10**6)
    return temperature, top_k, top_p


def resolved(model, *families: str) -> models.LoadedModel:
    """The loaded model a compute function runs. Handlers and the API resolve a name once per click
    (models.load) and pass the LoadedModel on: it is used as it is, with no call at all. A name (a
    script, a test) is resolved here; models.load refuses a model of another family."""
    if isinstance(model, models.LoadedModel) and model.family in families:
        return model
    return models.load(model, *families)


def causal_lm(model) -> models.LoadedModel:
    return resolved(model, "causal")


def prompt_logits(loaded: models.LoadedModel, prompt, allow_empty: bool = False) -> tuple[list[str], np.ndarray, str]:
    """The prompt's tokens, the logits for the next token (float64) and a note when the prompt was
    cut. The forward pass is cached (in labs.core.work.lm): moving a slider re-shapes without running the model."""
    ids, note = lm.causal_ids(loaded, check_prompt(prompt, allow_empty), MAX_PROMPT_TOKENS)
    logits = lm.next_token_logits(loaded, ids).astype(np.float64)
    return models.readable_tokens(loaded.tokenizer, ids), logits, note


def next_logits(loaded: models.LoadedModel, prompt, allow_empty: bool = False) -> tuple[list[str], np.ndarray, str]:
    return prompt_logits(causal_lm(loaded), prompt, allow_empty)


def shape(logits: np.ndarray, temperature: float, top_k: int, top_p: float) -> tuple[np.ndarray, np.ndarray]:
    """softmax(logits / T), and which tokens top-k and then top-p keep (as generate() applies them:
    temperature, then top-k, then top-p on what top-k left). T = 0 is greedy: all on the arg-max."""
    if temperature == 0:
        probs = np.zeros_like(logits)
        probs[int(np.argmax(logits))] = 1.0
        return probs, probs > 0
    probs = lm.softmax(logits, temperature)
    kept = np.ones(len(logits), dtype=bool)
    if 0 < top_k < len(logits):
        kept[np.argsort(-logits, kind="stable")[top_k:]] = False
    if top_p < 1:
        renormed = np.where(kept, probs, 0.0)
        renormed /= renormed.sum()
        order = np.argsort(-renormed, kind="stable")
        before = np.cumsum(renormed[order]) - renormed[order]  # mass of the more likely tokens
        kept[order[before >= top_p]] = False
        kept[order[0]] = True  # never empty
    return probs, kept


@dataclass
class Entry:
    token: str
    token_id: int
    logit: float
    prob: float
    kept: bool


@dataclass
class Distribution:
    model: str
    source: str
    prompt_tokens: list[str]
    entropy: float  # nats, of the temperature-scaled distribution over the whole vocabulary
    entries: list[Entry]
    note: str = ""

    def to_json(self) -> dict:
        return {"model": self.model, "source": self.source, "prompt_tokens": self.prompt_tokens,
                "entropy": self.entropy, "distribution": [vars(e) for e in self.entries]}


def entropy(probs: np.ndarray) -> float:
    p = probs[probs > 0]
    return float(-(p * np.log(p)).sum())


def distribution(loaded: models.LoadedModel, prompt, temperature=1.0, top_k=0, top_p=1.0, top_n: int = TOP_N,
                 allow_empty: bool = False) -> Distribution:
    """The top_n most likely next tokens after temperature, with logits, probabilities and kept flags."""
    temperature, top_k, top_p = check_knobs(temperature, top_k, top_p)
    loaded = causal_lm(loaded)
    tokens, logits, note = prompt_logits(loaded, prompt, allow_empty)
    probs, kept = shape(logits, temperature, top_k, top_p)
    # By probability, ties (T = 0) by logit: probability never falls as the logit rises, so this is
    # the order of the logits (ties: lower id first).
    order = [i for i, _ in lm.top_k(logits, top_n)]
    entries = [Entry(loaded.tokenizer.decode([int(i)]), int(i), float(logits[i]), float(probs[i]), bool(kept[i]))
               for i in order]
    return Distribution(loaded.name, loaded.source, tokens, entropy(probs), entries, note)


def next_token_json(prompt: str, model: str, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0) -> dict:
    """The `next_token` API: the 20 most likely next tokens after temperature, with kept flags. The
    model (a name from the client) is resolved once, here."""
    return distribution(models.load(model, "causal"), prompt, temperature, top_k, top_p).to_json()


def entry_for(loaded: models.LoadedModel, prompt, token_id: int, temperature, top_k, top_p) -> Entry:
    """One token's entry in the distribution (for a token the student picks or clicks)."""
    temperature, top_k, top_p = check_knobs(temperature, top_k, top_p)
    loaded = causal_lm(loaded)
    _, logits, _ = prompt_logits(loaded, prompt)
    if not 0 <= token_id < len(logits):
        raise BadInput(f"Token id {token_id} is not in this model's vocabulary.")
    probs, kept = shape(logits, temperature, top_k, top_p)
    token = loaded.tokenizer.decode([token_id])
    return Entry(token, token_id, float(logits[token_id]), float(probs[token_id]), bool(kept[token_id]))


def sample_tokens(loaded: models.LoadedModel, prompt, temperature, top_k, top_p, n: int, seed) -> list[int]:
    """n independent draws of the next token at these settings (seeded, so reproducible)."""
    temperature, top_k, top_p = check_knobs(temperature, top_k, top_p)
    seed = check_int(seed, "Seed", 0, 2**32 - 1)
    _, logits, _ = next_logits(loaded, prompt)
    probs, kept = shape(logits, temperature, top_k, top_p)
    filtered = np.where(kept, probs, 0.0)
    filtered /= filtered.sum()
    return np.random.default_rng(seed).choice(len(filtered), size=n, p=filtered).tolist()


def greedy_token(loaded: models.LoadedModel, prompt) -> int:
    _, logits, _ = next_logits(loaded, prompt)
    return int(np.argmax(logits))


# -- softmax by hand (exercise B2)

B2_WORDS = ["sat", "ran", "jumped", "slept"]
B2_LOGITS = [2.5, 1.0, 0.5, 1.5]


def softmax_by_hand(logits: list[float], temperature) -> dict:
    """Each exp(z/T), their sum and each probability, as the exercise computes them."""
    temperature = check_number(temperature, "For the calculation by hand, the temperature", 0, 100, low_open=True,
                               hint=" (T = 0 is the arg-max)")
    z = np.asarray(logits, dtype=float) / temperature
    exps = np.exp(z)
    return {"scaled": z.tolist(), "exp": exps.tolist(), "sum": float(exps.sum()),
            "probs": (exps / exps.sum()).tolist()}
