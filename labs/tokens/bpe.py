"""Byte-pair encoding as the textbook teaches it, one merge at a time, on `word count` lines.

Every word is split into characters plus an end-of-word symbol `</w>`; each step merges the most
frequent adjacent pair everywhere. Ties go to the pair met first reading the corpus in order (so
`e+s` before `s+t` in the course's example). The tests compare every step with the `tokenizers`
library's BpeTrainer on the same word counts. WordPiece's choice (the pair with the highest
freq(xy) / (freq(x)·freq(y))) is computed on the same state, to show where the two differ."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from labs.core.errors import BadInput, check_int, check_text

END = "</w>"
COURSE_CORPUS = "low 5\nlower 2\nnewest 6\nwidest 3"
MAX_MERGES = 200
MAX_CORPUS_CHARS = 5000
MAX_WORD_CHARS = 50


@dataclass(frozen=True)
class Merge:
    step: int
    pair: tuple[str, str]
    count: int
    tied: bool  # another pair had the same count: the reading order decided

    @property
    def token(self) -> str:
        return self.pair[0] + self.pair[1]


@dataclass
class BpeState:
    """The corpus after some merges: each word as its current symbols, with its count."""
    words: list[tuple[list[str], int]]
    merges: list[Merge]
    alphabet: list[str]

    @property
    def vocab(self) -> list[str]:
        return self.alphabet + [m.token for m in self.merges]


def parse_corpus(text) -> dict[str, int]:
    """`word count` lines (a word alone counts 1) as {word: count}, in order; BadInput naming the line."""
    text = check_text(text, COURSE_CORPUS.replace("\n", " / "), max_chars=MAX_CORPUS_CHARS, what="corpus")
    counts: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) > 2 or len(parts[0]) > MAX_WORD_CHARS:
            raise BadInput(f"Line {number} ({line.strip()[:40]!r}) must be one word and its count, for example: low 5")
        try:
            count = check_int(parts[1] if len(parts) == 2 else 1, f"The count on line {number}", 1, 10**6)
        except BadInput:
            raise BadInput(f"The count on line {number} ({line.strip()[:40]!r}) must be a positive whole number, "
                           "for example: low 5") from None
        counts[parts[0]] = counts.get(parts[0], 0) + count
    if not counts:
        raise BadInput("The corpus is empty. Write one word and its count per line, for example: low 5")
    return counts


def start(counts: dict[str, int]) -> BpeState:
    words = [(list(word) + [END], count) for word, count in counts.items()]
    alphabet = list(dict.fromkeys(symbol for symbols, _ in words for symbol in symbols))
    return BpeState(words, [], alphabet)


def pair_counts(state: BpeState) -> Counter:
    """Every adjacent pair's count, in the order the pairs are first met reading the corpus."""
    counts: Counter = Counter()
    for symbols, count in state.words:
        for pair in zip(symbols, symbols[1:]):
            counts[pair] += count
    return counts


def merge_symbols(symbols: list[str], pair: tuple[str, str]) -> list[str]:
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def next_merge(state: BpeState) -> Merge | None:
    """The merge BPE makes next: the most frequent pair, the first met winning a tie; None when no
    pair is left."""
    counts = pair_counts(state)
    if not counts:
        return None
    best = max(counts.values())
    pair = next(p for p, c in counts.items() if c == best)
    tied = sum(c == best for c in counts.values()) > 1
    return Merge(len(state.merges) + 1, pair, best, tied)


def step(state: BpeState) -> bool:
    """Make the next merge everywhere. False when no pair is left."""
    merge = next_merge(state)
    if merge is None:
        return False
    state.merges.append(merge)
    state.words = [(merge_symbols(symbols, merge.pair), count) for symbols, count in state.words]
    return True


def learn(counts: dict[str, int], merges: int) -> BpeState:
    """The state after up to `merges` merges (fewer when every word is a single symbol)."""
    state = start(counts)
    for _ in range(merges):
        if not step(state):
            break
    return state


def split(word: str, merges: list[Merge]) -> list[str]:
    """A (new) word split with the merges learned so far, applied in the order they were learned."""
    symbols = list(word) + [END]
    for merge in merges:
        symbols = merge_symbols(symbols, merge.pair)
    return symbols


@dataclass(frozen=True)
class WordPieceChoice:
    pair: tuple[str, str]
    count: int  # freq(xy)
    left: int  # freq(x)
    right: int  # freq(y)

    @property
    def score(self) -> float:
        return self.count / (self.left * self.right)


def symbol_counts(state: BpeState) -> Counter:
    counts: Counter = Counter()
    for symbols, count in state.words:
        for symbol in symbols:
            counts[symbol] += count
    return counts


def wordpiece_scores(state: BpeState) -> list[WordPieceChoice]:
    """Every pair with WordPiece's score freq(xy) / (freq(x)·freq(y)), in the order first met."""
    singles = symbol_counts(state)
    return [WordPieceChoice(p, c, singles[p[0]], singles[p[1]]) for p, c in pair_counts(state).items()]


def wordpiece_choice(state: BpeState) -> WordPieceChoice | None:
    """The pair WordPiece would merge next: the highest score, which favours pairs whose parts are
    rare on their own (first met wins a tie)."""
    scores = wordpiece_scores(state)
    return max(scores, key=lambda s: s.score) if scores else None


def check_word(word) -> str:
    word = check_text(word, "lowest", max_chars=MAX_WORD_CHARS, what="word", allow_empty=True)
    if len(word.split()) > 1:
        raise BadInput("Type one word to split (no spaces), for example: lowest")
    return word


def check_merges(merges) -> int:
    return check_int(merges, "The number of merges", 0, MAX_MERGES)


def bpe_json(corpus: str, merges: int = 10, word: str = "lowest") -> dict:
    """The `bpe` API: the merges learned on `word count` lines, the vocabulary, and a word's split."""
    counts = parse_corpus(corpus)
    merges = check_merges(merges)
    word = check_word(word)
    state = learn(counts, merges)
    return {"merges": [{"step": m.step, "pair": list(m.pair), "count": m.count, "token": m.token}
                       for m in state.merges],
            "vocab": state.vocab, "word": word, "pieces": split(word, state.merges) if word else []}
