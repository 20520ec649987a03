"""Why a word-level vocabulary fails: a real word-level vocabulary beside the subword tokenizers of the models
offered here, on the same text. The word-level one is `tokenizers`' WordLevel model, trained by its WordLevelTrainer
on LM Lab's everyday sentences (assets/everyday_sentences.txt).

The word-level tokenizer keeps the `vocabulary_size` most frequent words of the corpus (lower-cased, split at
spaces and punctuation); every other word becomes the one [UNK] token. The subword tokenizers split a word
they never saw into known pieces, so decoding their ids gives the text back."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from labs.core.errors import check_int, check_text
from labs.core.models import models
from labs.core.ui import course_quotes
from labs.tokens import compute

CORPUS = Path(__file__).resolve().parents[2] / "assets" / "everyday_sentences.txt"
UNKNOWN = "[UNK]"
VOCAB_RANGE = (5, 5000)  # asked for; the corpus itself has fewer words, so the top keeps every one
MAX_CHARS = 1000
# The course's words: the Strategies deck's table (common words, variations, misspellings, novel items)
# and the textbook's four forms of "run" (20.3.1), each taken from course_quotes.
DECK_WORDS = tuple(course_quotes.text(f"word_level_{w}") for w in ("hat", "learn", "taaaaasty", "laern",
                                                                    "transformerify"))
TEXTBOOK_WORDS = tuple(re.findall(r'"(\w+),?"', course_quotes.text("word_level_morphology")))
EXAMPLE = " ".join(DECK_WORDS + TEXTBOOK_WORDS)


def corpus_lines() -> list[str]:
    """The corpus's sentences (its # lines describe how it was written)."""
    return [line for line in CORPUS.read_text().splitlines() if line.strip() and not line.startswith("#")]


@functools.lru_cache(maxsize=32)
def trained(vocabulary_size: int):
    """A `tokenizers.Tokenizer` with a WordLevel model trained on the corpus; cached: training takes
    milliseconds, but a class asks for the same few sizes."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.WordLevel(unk_token=UNKNOWN))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()  # words and punctuation marks: \w+|[^\w\s]+
    trainer = trainers.WordLevelTrainer(vocab_size=vocabulary_size, special_tokens=[UNKNOWN], show_progress=False)
    tokenizer.train_from_iterator(corpus_lines(), trainer=trainer)
    return tokenizer


@dataclass
class SubwordRow:
    """One real tokenizer's pieces of the text, and whether its ids decode back to the text."""
    model: str
    algorithm: str = ""
    pieces: list[str] | None = None  # as the student reads them (no special tokens)
    ids: list[int] | None = None
    unknown: int = 0  # pieces that are its [UNK] (byte-level BPE has none)
    decoded: str = ""
    round_trip: bool = False
    round_trip_uncased: bool = False  # the same text but for case (an uncased WordPiece lower-cases)
    error: str | None = None

    def to_json(self) -> dict:
        if self.error:
            return {"model": self.model, "error": self.error}
        return {"model": self.model, "algorithm": self.algorithm, "pieces": self.pieces, "ids": self.ids,
                "unknown": self.unknown, "decoded": self.decoded, "round_trip": self.round_trip,
                "round_trip_uncased": self.round_trip_uncased}


@dataclass
class WordLevelResult:
    text: str
    vocabulary_size: int  # asked for
    vocab_size: int  # learned: at most the corpus's distinct words + [UNK]
    corpus_sentences: int
    tokens: list[str]
    ids: list[int]
    words: list[str]  # the text's words as the pre-tokenizer cut them (lower-cased)
    unknown: list[bool]
    subword: list[SubwordRow]

    @property
    def unk_share(self) -> float:
        return sum(self.unknown) / len(self.unknown) if self.unknown else 0.0

    def to_json(self) -> dict:
        return {"text": self.text, "vocabulary_size": self.vocabulary_size, "vocab_size": self.vocab_size,
                "corpus_sentences": self.corpus_sentences, "tokens": self.tokens, "ids": self.ids,
                "words": self.words, "unknown": self.unknown, "unk_count": sum(self.unknown),
                "unk_share": round(self.unk_share, 4), "subword": [r.to_json() for r in self.subword]}


def subword_row(resolved: compute.Resolved, text: str) -> SubwordRow:
    if resolved.error is not None:
        return SubwordRow(resolved.name, error=resolved.error)
    tokenizer = resolved.tokenizer
    ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])  # [UNK] kept; [CLS], [SEP] not added
    algorithm = compute.algorithm_name(tokenizer)
    shown = compute.shown_pieces(tokenizer, ids, models.readable_tokens(tokenizer, ids), algorithm.startswith("byte"))
    decoded = tokenizer.decode(ids)
    # GPT-2's offline tokenizer names <|endoftext|> its unk token; byte-level BPE never needs one.
    unk = tokenizer.unk_token_id if tokenizer.unk_token != tokenizer.eos_token else None
    return SubwordRow(resolved.name, algorithm, shown, ids,
                      sum(unk is not None and i == unk for i in ids), decoded, decoded == text,
                      decoded.lower() == text.lower())


def word_level(text, vocabulary_size=VOCAB_RANGE[1]) -> WordLevelResult:
    """The text through a word-level vocabulary of `vocabulary_size` words (the corpus's most frequent) and
    through every subword tokenizer offered here."""
    text = check_text(text, EXAMPLE, max_chars=MAX_CHARS)
    vocabulary_size = check_int(vocabulary_size, "The vocabulary size", *VOCAB_RANGE)
    tokenizer = trained(vocabulary_size)
    encoding = tokenizer.encode(text)
    unk_id = tokenizer.token_to_id(UNKNOWN)
    words = [text[a:b].lower() for a, b in encoding.offsets]
    return WordLevelResult(text, vocabulary_size, tokenizer.get_vocab_size(), len(corpus_lines()),
                           list(encoding.tokens), list(encoding.ids), words, [i == unk_id for i in encoding.ids],
                           [subword_row(r, text) for r in compute.resolve()])


def word_level_json(text: str, vocabulary_size: int = VOCAB_RANGE[1]) -> dict:
    """The `word_level` API."""
    return word_level(text, vocabulary_size).to_json()
