"""Train your own: a BPE, a WordPiece and a Unigram tokenizer, trained by the `tokenizers` library
on the same text with the same vocabulary size, so the only difference is the algorithm."""

from __future__ import annotations

import csv
import functools
from pathlib import Path

from labs.core.errors import BadInput, check_int, check_text

REVIEWS = Path(__file__).resolve().parents[2] / "assets" / "sentiment.csv"
VOCAB_RANGE = (60, 2000)
MAX_TEXT_CHARS = 50_000  # a pasted text to train on: a few pages
MAX_WORDS = 20
ALGORITHMS = ("BPE", "WordPiece", "Unigram")
UNKNOWN = "[UNK]"


def builtin_text() -> str:
    """The 352 short reviews that Fine-tune uses, one per line."""
    with REVIEWS.open(newline="") as f:
        return "\n".join(row["text"] for row in csv.DictReader(f))


def _new(algorithm: str, vocab_size: int):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    model, trainer = {
        "BPE": (models.BPE(unk_token=UNKNOWN), trainers.BpeTrainer),
        "WordPiece": (models.WordPiece(unk_token=UNKNOWN), trainers.WordPieceTrainer),
        "Unigram": (models.Unigram(), trainers.UnigramTrainer),
    }[algorithm]
    tokenizer = Tokenizer(model)
    # The same normalising and word splitting for all three: only the algorithm differs.
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    extra = {"unk_token": UNKNOWN} if algorithm == "Unigram" else {}
    return tokenizer, trainer(vocab_size=vocab_size, special_tokens=[UNKNOWN], show_progress=False, **extra)


@functools.lru_cache(maxsize=16)
def trained(text: str, vocab_size: int) -> dict:
    """{algorithm: a trained `tokenizers.Tokenizer`}; cached: a class trains on the same reviews."""
    lines = text.splitlines()
    found = {}
    for algorithm in ALGORITHMS:
        tokenizer, trainer = _new(algorithm, vocab_size)
        tokenizer.train_from_iterator(lines, trainer=trainer)
        found[algorithm] = tokenizer
    return found


def check_words(words) -> list[str]:
    words = check_text(words, "unbelievable lowest reviewers", what="words to split")
    found = words.split()
    if len(found) > MAX_WORDS:
        raise BadInput(f"Type at most {MAX_WORDS} words to split; you typed {len(found)}.")
    return found


def train_and_split(text, vocab_size, words) -> dict:
    """Train the three tokenizers (on `text`, or the built-in reviews when it is empty) and split
    each word with each: {"vocab_size", "trained_on", "results": [{"algorithm", "vocab_size", "splits"}]}."""
    text = check_text(text, "one sentence per line", max_chars=MAX_TEXT_CHARS, what="training text",
                      allow_empty=True)
    vocab_size = check_int(vocab_size, "The vocabulary size", *VOCAB_RANGE)
    words = check_words(words)
    tokenizers = trained(text or builtin_text(), vocab_size)
    return {"vocab_size": vocab_size, "trained_on": "your text" if text else "the built-in reviews",
            "results": [{"algorithm": name, "vocab_size": t.get_vocab_size(),
                         "splits": [{"word": w, "pieces": t.encode(w).tokens} for w in words]}
                        for name, t in tokenizers.items()]}
