"""A model needs its own tokenizer (the lecture's pitfall 6): a text encoded by tokenizer A and its ids read by
tokenizer B. B.decode(A's ids) is what B's model would be told; where B belongs to a causal LM here, that model's
perplexity on its own ids of the text goes beside its perplexity on A's ids.

An id is only a row number: the same number is another piece in another vocabulary. An id past B's
vocabulary has no row at all; `tokenizers` leaves it out of the decoded text, and the model cannot read it
(it is left out there too, and counted)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from labs.core.errors import BadInput, check_text
from labs.core.models import gpt2_offline, models
from labs.core.work import lm
from labs.tokens import compute

MAX_CHARS = 1000
EXAMPLE = "The students were reading a long book about the history of the city."
ENCODE_DEFAULT, READ_DEFAULT = gpt2_offline.NAME, models.SMOLLM2_NAME


@dataclass
class ModelReading:
    """A causal LM's perplexity on its own ids of the text and on the foreign ids (the ids it has rows for)."""
    model: str
    perplexity_own: float | None
    perplexity_foreign: float | None
    own_tokens: int
    foreign_tokens: int  # the foreign ids it could read
    left_out: int  # foreign ids past its vocabulary

    def to_json(self) -> dict:
        def rounded(x):
            return None if x is None else round(x, 3)
        return {"model": self.model, "perplexity_own": rounded(self.perplexity_own),
                "perplexity_foreign": rounded(self.perplexity_foreign), "own_tokens": self.own_tokens,
                "foreign_tokens": self.foreign_tokens, "left_out": self.left_out}


@dataclass
class Mismatch:
    text: str
    encode_with: str
    read_with: str
    ids: list[int]  # A's ids, as A gives them to its model
    encoded_pieces: list[str]  # what each id is in A's vocabulary (␣: a space)
    read_pieces: list[str | None]  # what the same id is in B's vocabulary (None: past its end)
    garbled: str  # B.decode(A's ids)
    own_ids: list[int]  # B's own ids of the text
    own_decoded: str  # B.decode(B's ids)
    reading: ModelReading | None
    reading_note: str  # why there is no model reading, when there is none

    @property
    def past_vocabulary(self) -> int:
        return sum(p is None for p in self.read_pieces)

    def to_json(self) -> dict:
        return {"text": self.text, "encode_with": self.encode_with, "read_with": self.read_with, "ids": self.ids,
                "encoded_pieces": self.encoded_pieces, "read_pieces": self.read_pieces, "garbled": self.garbled,
                "past_vocabulary": self.past_vocabulary, "own_ids": self.own_ids, "own_decoded": self.own_decoded,
                "same_tokenizer": self.encode_with == self.read_with,
                "model": self.reading.to_json() if self.reading else None, "model_note": self.reading_note}


def one_tokenizer(name, role: str):
    if not isinstance(name, str) or not name.strip():
        raise BadInput(f"{role} must be a tokenizer's name: one of {', '.join(compute.check_models(None))}.")
    found = compute.resolve([name.strip()])[0]  # an unknown name: ModelUnavailable, naming the choices
    if found.error is not None:
        raise BadInput(f"{found.name}'s tokenizer cannot be had here: {found.error}")
    return found.name, found.tokenizer


def perplexity(loaded, ids: list[int]) -> float | None:
    """exp(mean negative log-probability) of tokens 2..n given the ones before (the model's own loss);
    None for fewer than two tokens."""
    if len(ids) < 2:
        return None
    return math.exp(-float(lm.token_logprobs(loaded, ids).mean()))


def model_reading(read_with: str, own_ids: list[int], foreign_ids: list[int]) -> tuple[ModelReading | None, str]:
    if read_with == gpt2_offline.NAME:
        return None, "GPT-2's weights are not offline: its perplexity is not measured here (only its tokenizer is)."
    if models.get_choice(read_with).family != "causal":
        return None, f"{read_with} is not a causal LM: it has no next-token probabilities to score the ids with."
    loaded = models.load(read_with, "causal")
    rows = loaded.model.get_input_embeddings().num_embeddings
    readable = [i for i in foreign_ids if i < rows]
    return ModelReading(loaded.name, perplexity(loaded, own_ids), perplexity(loaded, readable), len(own_ids),
                        len(readable), len(foreign_ids) - len(readable)), ""


def tokenizer_mismatch(text, encode_with=ENCODE_DEFAULT, read_with=READ_DEFAULT) -> Mismatch:
    text = check_text(text, EXAMPLE, max_chars=MAX_CHARS)
    a_name, a = one_tokenizer(encode_with, "encode_with")
    b_name, b = one_tokenizer(read_with, "read_with")
    ids = list(a(text)["input_ids"])
    size = len(b)
    read_pieces = [models.readable_tokens(b, [i])[0] if i < size else None for i in ids]
    own_ids = list(b(text)["input_ids"])
    reading, note = model_reading(b_name, own_ids, ids)
    return Mismatch(text, a_name, b_name, ids, models.readable_tokens(a, ids), read_pieces, b.decode(ids),
                    own_ids, b.decode(own_ids), reading, note)


def tokenizer_mismatch_json(text: str, encode_with: str = ENCODE_DEFAULT, read_with: str = READ_DEFAULT) -> dict:
    """The `tokenizer_mismatch` API."""
    return tokenizer_mismatch(text, encode_with, read_with).to_json()
