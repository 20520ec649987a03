"""Pre-training, the built-in data: short passages written for LM Lab (assets/nsp_passages.txt), the
true consecutive sentence pairs in them, and a plain sentence splitter for the student's own text.

The file's format: lines starting with "#" are comments; "== Topic ==" starts a passage; every other
non-empty line is one sentence, in reading order."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

PASSAGES_FILE = Path(__file__).resolve().parents[2] / "assets" / "nsp_passages.txt"
SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
MASK_RATE_SENTENCES = 20  # the built-in set the mask-rate curve reads (the first of the passages' sentences)


@dataclass(frozen=True)
class Passage:
    topic: str
    sentences: tuple[str, ...]


def parse(text: str) -> list[Passage]:
    """Passages from the file's text (see the module's docstring for the format)."""
    passages: list[tuple[str, list[str]]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("==") and line.endswith("=="):
            passages.append((line.strip("= ").strip(), []))
        elif passages:
            passages[-1][1].append(line)
        else:
            raise ValueError(f"a sentence before the first '== Topic ==' line: {line[:60]!r}")
    return [Passage(topic, tuple(sentences)) for topic, sentences in passages if sentences]


@functools.lru_cache(maxsize=1)
def passages() -> tuple[Passage, ...]:
    return tuple(parse(PASSAGES_FILE.read_text(encoding="utf-8")))


def consecutive_pairs() -> list[tuple[int, str, str]]:
    """(passage index, sentence, the sentence after it) for every true pair in the built-in passages."""
    return [(p, a, b) for p, passage in enumerate(passages())
            for a, b in zip(passage.sentences, passage.sentences[1:])]


def mask_rate_sentences() -> list[str]:
    """The built-in sentences of the mask-rate curve: the first sentence of each passage, then the
    second, ... until there are MASK_RATE_SENTENCES. The same every run."""
    ordered = [p.sentences[i] for i in range(max(len(p.sentences) for p in passages()))
               for p in passages() if i < len(p.sentences)]
    return ordered[:MASK_RATE_SENTENCES]


def split_sentences(text: str) -> list[str]:
    """A paragraph as sentences: a break after . ! or ? followed by a space and a capital or a digit,
    and at every line break."""
    return [s.strip() for line in text.splitlines() for s in SENTENCE_END.split(line) if s.strip()]
