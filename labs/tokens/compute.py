"""Same text, every tokenizer: how each model offered here turns a text into pieces and ids.

Only the tokenizers are loaded (no weights), and the ids are exactly what the tokenizer gives the
model: `tokenizer(text)["input_ids"]`, special tokens included."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from labs import models
from labs.errors import BadInput, check_text, message_for

MAX_CHARS = 5000
EXAMPLES = [
    "The students were playing an unbelievable game.",
    "Antidisestablishmentarianism is a long rare word.",
    "In 2024, 1234567 + 89 = 1234656.",
    "Arnold Schwarzenegger met Nguyễn Thị Minh Khai in Reykjavík.",
    "Die Katze schläft auf der Matte. 🐱 猫はマットの上で寝ている。",
]


@dataclass
class TokenizerRow:
    """One tokenizer's split of the text; `error` instead when this tokenizer cannot be had here."""
    model: str
    algorithm: str = ""
    vocab_size: int = 0
    tokens: list[str] | None = None
    ids: list[int] | None = None
    special: list[bool] | None = None
    chars_per_token: float = 0.0
    error: str | None = None
    shown: list[str] | None = None  # what each piece stands for, as the UI draws it

    def to_json(self) -> dict:
        if self.error:
            return {"model": self.model, "error": self.error}
        return {"model": self.model, "algorithm": self.algorithm, "vocab_size": self.vocab_size,
                "tokens": self.tokens, "ids": self.ids, "special": self.special,
                "chars_per_token": round(self.chars_per_token, 3)}


def algorithm_name(tokenizer) -> str:
    """WordPiece, byte-level BPE, SentencePiece (Unigram or BPE), read from the fast tokenizer itself."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return type(tokenizer).__name__
    kind = type(backend.model).__name__
    pieces = f"{backend.pre_tokenizer} {backend.decoder}"
    if "ByteLevel" in pieces:
        return f"byte-level {kind}"
    if "Metaspace" in pieces or kind == "Unigram":
        return f"SentencePiece {kind}"
    return kind


@lru_cache(maxsize=1)
def _byte_decoder() -> dict[str, int]:
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    return {char: byte for byte, char in bytes_to_unicode().items()}


def shown_pieces(tokenizer, ids: list[int], tokens: list[str], byte_level: bool) -> list[str]:
    """Each piece as a student reads it. Byte-level BPE stores bytes as stand-in characters ("Ġ" is a
    space, "Ã¤" is "ä"): a piece that is whole UTF-8 is shown decoded; a piece holding part of a
    character (an emoji is 4 bytes, often split) is shown as its bytes, e.g. ⟨F0 9F⟩."""
    if not byte_level:
        return tokens
    decoder, specials, shown = _byte_decoder(), set(tokenizer.all_special_tokens), []
    for raw, token in zip(tokenizer.convert_ids_to_tokens(list(ids)), tokens):
        if raw in specials or any(c not in decoder for c in raw):
            shown.append(token)
            continue
        data = bytes(decoder[c] for c in raw)
        try:
            shown.append(data.decode("utf-8").replace(" ", "␣").replace("\n", "↵"))
        except UnicodeDecodeError:
            shown.append("⟨" + " ".join(f"{b:02X}" for b in data) + "⟩")
    return shown


def split_with(model_name: str, text: str) -> TokenizerRow:
    tokenizer = models.load_tokenizer(model_name)
    ids = tokenizer(text)["input_ids"]
    special_ids = set(tokenizer.all_special_ids)
    special = [i in special_ids for i in ids]
    pieces = max(1, len(ids) - sum(special))
    algorithm, tokens = algorithm_name(tokenizer), models.readable_tokens(tokenizer, ids)
    return TokenizerRow(models.get_choice(model_name).name, algorithm, len(tokenizer), tokens, list(ids), special,
                        len(text) / pieces, shown=shown_pieces(tokenizer, ids, tokens, algorithm.startswith("byte")))


def check_models(names) -> list[str]:
    """A list of registry names; empty (or None) means every model offered here."""
    if names in (None, "", []):
        return list(models.registry())
    if isinstance(names, str):
        names = [n for n in names.split(",") if n.strip()]
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise BadInput("models must be a list of model names (or empty for every model offered here).")
    return [models.get_choice(n).name for n in names]  # an unknown name: ModelUnavailable, named


def tokenize(text, model_names=None) -> list[TokenizerRow]:
    """Every chosen tokenizer's split; one that fails keeps its row with the reason."""
    text = check_text(text, EXAMPLES[0], max_chars=MAX_CHARS)
    rows = []
    for name in check_models(model_names):
        try:
            rows.append(split_with(name, text))
        except Exception as exc:  # one tokenizer missing keeps the others
            rows.append(TokenizerRow(name, error=message_for(exc)))
    return rows


def as_json(rows: list[TokenizerRow]) -> dict:
    return {"tokenizers": [row.to_json() for row in rows]}


def tokenize_json(text: str, models: list | None = None) -> dict:
    """The `tokenize` API: the text split by each tokenizer (empty `models`: every model offered)."""
    return as_json(tokenize(text, models))
