"""Inside a prediction: score a whole sentence with the chain rule (one teacher-forced forward pass),
and the logit lens (decode every layer's hidden state with the model's own final norm and head)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from labs.core.errors import BadInput, check_int, check_text
from labs.core.models import models
from labs.core.work import lm
from labs.next_token.compute import resolved

SCORE_EXAMPLE = "The cat sat on the mat."
SCRAMBLED_EXAMPLE = "Mat the on sat cat the."
LENS_EXAMPLE = "The capital of France is"
MAX_TOKENS = 256
LENS_TOP_K = (1, 20)


@dataclass
class Score:
    model: str
    source: str
    tokens: list[str]
    token_ids: list[int]
    logprobs: list[float | None]  # None for the first token: nothing before it to predict it from

    @property
    def total_logprob(self) -> float:
        return float(sum(self.logprobs[1:]))

    @property
    def mean_loss(self) -> float:
        return -self.total_logprob / (len(self.logprobs) - 1)

    @property
    def perplexity(self) -> float:
        return math.exp(self.mean_loss)

    def to_json(self) -> dict:
        return {"model": self.model, "source": self.source, "tokens": self.tokens, "token_ids": self.token_ids,
                "logprobs": self.logprobs, "total_logprob": self.total_logprob, "mean_loss": self.mean_loss,
                "perplexity": self.perplexity}


def checked_ids(loaded: models.LoadedModel, text: str) -> list[int]:
    return lm.check_length(loaded.tokenizer(text)["input_ids"], min(MAX_TOKENS, loaded.max_tokens))


def score(loaded: models.LoadedModel, text) -> Score:
    """log P(token | everything before it) for every token after the first, from one forward pass."""
    text = check_text(text, SCORE_EXAMPLE, what="sentence")
    loaded = resolved(loaded, "causal")
    ids = checked_ids(loaded, text)
    if len(ids) < 2:
        raise BadInput("Your text is one token: the first token has nothing before it, so there is nothing to "
                       f"score. Type at least two words, for example: {SCORE_EXAMPLE}")
    logprobs = lm.token_logprobs(loaded, ids).astype(np.float64)
    return Score(loaded.name, loaded.source, models.readable_tokens(loaded.tokenizer, ids), list(ids),
                 [None] + [float(x) for x in logprobs])


def score_json(text: str, model: str) -> dict:
    """The `score` API; the model (a name from the client) is resolved once, here."""
    return score(models.load(model, "causal"), text).to_json()


# ---------------------------------------------------------------- the logit lens


@dataclass
class LensLayer:
    layer: int
    top: list[tuple[int, str, float]]  # (token id, token, probability), best first
    final_token_prob: float
    final_token_rank: int  # 1 = the top token


@dataclass
class Lens:
    model: str
    source: str
    tokens: list[str]
    position: int  # where the prediction is read: the prompt's last token, or the first blank
    layers: list[LensLayer]  # 0 = the embeddings; the last = the model's own output

    @property
    def final_token(self) -> str:
        return self.layers[-1].top[0][1]

    def to_json(self) -> dict:
        return {"model": self.model, "source": self.source, "tokens": self.tokens, "position": self.position,
                "layers": [{"layer": x.layer, "top": [{"token": t, "token_id": i, "prob": p} for i, t, p in x.top],
                            "final_token_prob": x.final_token_prob, "final_token_rank": x.final_token_rank}
                           for x in self.layers]}


def final_norm(model):
    """A decoder's last normalisation (GPT-2: ln_f, Llama: norm); None when the architecture is not
    known here."""
    for name in ("ln_f", "norm", "final_layer_norm"):
        module = getattr(model.base_model, name, None)
        if module is not None:
            return module
    return None


def lens_logits(loaded: models.LoadedModel, states):
    """Vocabulary logits for each layer's hidden state at one position ([layers + 1, hidden] in,
    [layers + 1, vocab] out). A causal LM's last hidden state has already been through the final
    norm; every earlier one goes through it here, then through the same output head. A masked LM's
    head (transform + decoder) reads every layer as it reads the last one."""
    import torch

    model = loaded.model
    states = torch.tensor(np.array(states), device=loaded.device).to(model.dtype)
    with torch.inference_mode():
        if loaded.choice.family == "causal":
            norm = final_norm(model)
            if norm is None:
                raise BadInput(f"The layer-by-layer view does not know where {type(model).__name__} keeps its "
                               "final norm; pick GPT-2 or a Llama-style model such as SmolLM2.")
            normed = torch.cat([norm(states[:-1]), states[-1:]])
            return model.get_output_embeddings()(normed).float().cpu().numpy()
        head = lm.mlm_head(model)
        if head is None:
            raise BadInput(f"The layer-by-layer view does not know {type(model).__name__}'s output head; "
                           "pick a BERT-style masked LM.")
        return head(states).float().cpu().numpy()


def lens_position(loaded: models.LoadedModel, text: str) -> tuple[list[int], int]:
    """The ids the model reads and the position whose prediction is shown: a causal LM's last token
    (the next token is predicted there), a masked LM's first blank."""
    if loaded.choice.family == "causal":
        ids, _ = lm.causal_ids(loaded, text, MAX_TOKENS)
        return ids, len(ids) - 1
    tokenizer = loaded.tokenizer
    if tokenizer.mask_token is None or not lm.BLANK_PATTERN.search(text):
        raise BadInput("A masked LM predicts a blank: write [MASK] (or ___) where the word is missing, for "
                       "example: The capital of France is [MASK].")
    ids = checked_ids(loaded, lm.with_mask_token(text, tokenizer.mask_token))
    return ids, ids.index(tokenizer.mask_token_id)


def logit_lens(loaded: models.LoadedModel, text, top_k=5) -> Lens:
    text = check_text(text, LENS_EXAMPLE, what="text")
    top_k = check_int(top_k, "Top-k", *LENS_TOP_K)
    loaded = resolved(loaded, "causal", "masked")
    ids, position = lens_position(loaded, text)
    states = lm.hidden_states(loaded, [ids])[0][:, position]  # [layers + 1, hidden], one cached pass
    probs = lm.softmax(lens_logits(loaded, states))
    final_id = int(np.argmax(probs[-1]))
    layers = []
    for layer, row in enumerate(probs):
        best = lm.top_k(row, top_k)
        top = list(zip([i for i, _ in best], models.readable_tokens(loaded.tokenizer, [i for i, _ in best]),
                       [p for _, p in best]))
        rank = int((row > row[final_id]).sum()) + 1
        layers.append(LensLayer(layer, top, float(row[final_id]), rank))
    return Lens(loaded.name, loaded.source, models.readable_tokens(loaded.tokenizer, ids), position, layers)


def logit_lens_json(text: str, model: str, top_k: int = 5) -> dict:
    """The `logit_lens` API; the model (a name from the client) is resolved once, here."""
    return logit_lens(models.load(model, "causal", "masked"), text, top_k).to_json()
