"""Same text, every tokenizer: how each model offered here turns a text into pieces and ids.

Only the tokenizers are loaded (no weights), and the ids are exactly what the tokenizer gives the
model: `tokenizer(text)["input_ids"]`, special tokens included (T5's sentinels <extra_id_N> too, when
typed). A click or an API call resolves each named tokenizer once (`resolve`) and splits with the
tokenizers themselves (`split_with`, `split_all`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from labs.core.errors import BadInput, check_text, message_for
from labs.core.models import gpt2_offline, models

MAX_CHARS = 5000
EXAMPLES = [
    "The students were playing an unbelievable game.",
    "Antidisestablishmentarianism is a long rare word.",
    "In 2024, 1234567 + 89 = 1234656.",
    "Arnold Schwarzenegger met Nguyễn Thị Minh Khai in Reykjavík.",
    "Die Katze schläft auf der Matte. 🐱 猫はマットの上で寝ている。",
    "Thank you <extra_id_0> me to your party <extra_id_1> week.",  # T5's span corruption: sentinels
]


@dataclass
class TokenizerRow:
    """One tokenizer's split of the text; `error` instead when this tokenizer cannot be had here."""
    model: str
    algorithm: str = ""
    marks: str = ""  # how its pieces mark words: "▁ starts a word", "## continues a word", "␣ is a space"
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
        return {"model": self.model, "algorithm": self.algorithm, "marks": self.marks, "vocab_size": self.vocab_size,
                "tokens": self.tokens, "ids": self.ids, "special": self.special,
                "chars_per_token": round(self.chars_per_token, 3)}


def _backend_parts(tokenizer) -> tuple[str, str] | None:
    """(the model's kind: WordPiece, BPE, Unigram; its normaliser, pre-tokenizer and decoder as text),
    read from the fast tokenizer's `tokenizers` backend; None for a slow tokenizer."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return None
    return type(backend.model).__name__, f"{backend.normalizer} {backend.pre_tokenizer} {backend.decoder}"


def algorithm_name(tokenizer) -> str:
    """WordPiece, byte-level BPE, SentencePiece (Unigram or BPE), read from the fast tokenizer itself.
    SentencePiece-style: spaces become "▁" (Metaspace, or a normaliser that replaces them), as in T5's
    Unigram and Llama 2's BPE."""
    parts = _backend_parts(tokenizer)
    if parts is None:
        return type(tokenizer).__name__
    kind, pieces = parts
    if "ByteLevel" in pieces:
        return f"byte-level {kind}"
    if "Metaspace" in pieces or "▁" in pieces or kind == "Unigram":
        return f"SentencePiece {kind}"
    return kind


def word_marks(tokenizer) -> str:
    """How the pieces show where words are, in words a student reads beside the pieces."""
    algorithm = algorithm_name(tokenizer)
    if algorithm.startswith("byte-level"):
        return "␣ is a space before a word"
    if algorithm.startswith("SentencePiece"):
        return "▁ starts a word"
    if algorithm == "WordPiece":
        return "## continues a word"
    return ""


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


@dataclass
class Resolved:
    """One chosen tokenizer, looked up once for a request: the tokenizer, or why it cannot be had."""
    name: str
    tokenizer: Any = None
    error: str | None = None


def split_with(tokenizer, text: str, name: str = "") -> TokenizerRow:
    """The text as this tokenizer gives it to its model. `name`: the model it belongs to."""
    ids = tokenizer(text)["input_ids"]
    special_ids = set(tokenizer.all_special_ids)  # T5's sentinels <extra_id_N> among them
    special = [i in special_ids for i in ids]
    pieces = max(1, len(ids) - sum(special))
    algorithm, tokens = algorithm_name(tokenizer), models.readable_tokens(tokenizer, ids)
    return TokenizerRow(name, algorithm, word_marks(tokenizer), len(tokenizer), tokens, list(ids), special,
                        len(text) / pieces, shown=shown_pieces(tokenizer, ids, tokens, algorithm.startswith("byte")))


def check_models(names) -> list[str]:
    """A list of registry names; empty (or None) means every model offered here (offline, that leaves
    out the Hub's models that are not in the local cache: nothing tries to reach them)."""
    if names in (None, "", []):
        offline_gpt2 = [gpt2_offline.NAME] if "gpt2" not in models.registry() and gpt2_offline.available() else []
        return list(models.registry()) + offline_gpt2
    if isinstance(names, str):
        names = [n for n in names.split(",") if n.strip()]
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise BadInput("models must be a list of model names (or empty for every model offered here).")
    return [n if n == gpt2_offline.NAME else models.get_choice(n).name for n in names]  # unknown: ModelUnavailable


def resolve(names=None) -> list[Resolved]:
    """Each chosen model's tokenizer, loaded (or found) once for this request; one that cannot be had
    keeps its place with the reason, so the others are still shown."""
    found = []
    for name in check_models(names):
        try:
            found.append(Resolved(name, gpt2_offline.tokenizer() if name == gpt2_offline.NAME
                                  else models.load_tokenizer(name)))
        except Exception as exc:  # one tokenizer missing keeps the others
            found.append(Resolved(name, error=message_for(exc)))
    return found


def split_all(text: str, tokenizers: list[Resolved]) -> list[TokenizerRow]:
    """Every resolved tokenizer's split of the (checked) text; one that fails keeps its row with the reason."""
    rows = []
    for t in tokenizers:
        if t.error is not None:
            rows.append(TokenizerRow(t.name, error=t.error))
            continue
        try:
            rows.append(split_with(t.tokenizer, text, t.name))
        except Exception as exc:
            rows.append(TokenizerRow(t.name, error=message_for(exc)))
    return rows


def tokenize(text, model_names=None) -> list[TokenizerRow]:
    """Every chosen tokenizer's split (empty: every model offered). The text is checked first, then
    each named tokenizer is resolved once."""
    text = check_text(text, EXAMPLES[0], max_chars=MAX_CHARS)
    return split_all(text, resolve(model_names))


def as_json(rows: list[TokenizerRow]) -> dict:
    return {"tokenizers": [row.to_json() for row in rows]}


def tokenize_json(text: str, models: list | None = None) -> dict:
    """The `tokenize` API: the text split by each tokenizer (empty `models`: every model offered)."""
    return as_json(tokenize(text, models))
