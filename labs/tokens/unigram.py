"""The unigram tokenizer, whole: a SentencePiece unigram model (the `sentencepiece` library, as T5 and ALBERT
use), trained here in memory on the built-in reviews or the student's text, and one short text through it:

- each piece's log-probability (the model's score, `GetScore(id)`);
- the Viterbi segmentation (`encode`), the most likely one, and its score: the sum of its pieces' log-probabilities;
- the n best segmentations (`nbest_encode`), each with its score;
- every segmentation's total (log Σ over the segmentations of Π p(piece)), summed over the same lattice of pieces
  the library searches, so each segmentation's probability given the text is exp(its score − the total);
- segmentations sampled with a seed (subword regularisation: `encode(enable_sampling=True, alpha, nbest_size=-1)`
  draws a segmentation with probability ∝ exp(alpha · its score)), and how often each came up.

A character the vocabulary lacks is an unknown piece (<unk>): the library scores each such character
min score − 10 (its kUnkPenalty), and so do the sums here."""

from __future__ import annotations

import functools
import io
import math
import re
import threading
from dataclasses import dataclass, field

from labs.core.errors import BadInput, check_int, check_number, check_text
from labs.tokens import train

EXAMPLE = "unbelievable"
MAX_CHARS = 80  # one word or a short phrase: its n-best list and samples stay readable
VOCAB_RANGE = (60, 900)  # the reviews need 56 pieces for their characters and allow at most 925
VOCAB_DEFAULT = 500
NBEST = 10
ALPHA_RANGE = (0.05, 1.0)
ALPHA_DEFAULT = 0.1
SAMPLES_RANGE = (1, 100)
SAMPLES_DEFAULT = 20
SEED_RANGE = (0, 1_000_000)
WORD_START = "▁"  # a word's start, as sentencepiece writes it
UNK_PENALTY = 10.0  # sentencepiece's unigram model: an unknown character scores (lowest piece score) - 10
TOO_HIGH = re.compile(r"Vocabulary size too high \((\d+)\)\. Please set it to a value <= (\d+)")
TOO_FEW = re.compile(r"Vocabulary size is smaller than required_chars\. (\d+) vs (\d+)")
# The seed is the library's, for the whole process (set_random_generator_seed): seeding and drawing hold this lock.
_SAMPLING = threading.Lock()


@dataclass(frozen=True)
class Model:
    """A trained processor and what the sums need of it: each ordinary piece's score and the unknown's."""
    processor: object  # sentencepiece.SentencePieceProcessor
    scores: dict  # piece -> log-probability, the pieces a segmentation may use (not <unk>, <s>, </s>)
    longest: int
    unk_score: float  # per unknown character
    lines: int  # the training text's lines

    def log_prob(self, piece: str, piece_id: int) -> float:
        """The piece's log-probability; an unknown piece (several characters the vocabulary lacks, merged by the
        library) scores unk_score for each character, as the library's lattice does."""
        if self.processor.is_unknown(piece_id):
            return self.unk_score * len(piece)
        return self.processor.get_score(piece_id)


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _friendly(error: Exception, vocab_size: int, own_text: bool) -> BadInput:
    """sentencepiece's refusal as a sentence that says what to change."""
    source, allows = ("your text", "allows") if own_text else ("the built-in reviews", "allow")
    message = str(error)
    if m := TOO_HIGH.search(message):
        largest = int(m.group(2))
        if largest < VOCAB_RANGE[0]:
            return BadInput(f"The training text is too small to train on: {source} {allows} only {largest} pieces, "
                            f"and this panel needs at least {VOCAB_RANGE[0]}. Paste a longer text (a few paragraphs), "
                            "or leave the box empty to train on the 352 built-in reviews.")
        return BadInput(f"A vocabulary of {vocab_size:,} pieces is too large for {source}: the largest that works "
                        f"is {largest:,}. Lower the vocabulary size to {largest:,} or less.")
    if m := TOO_FEW.search(message):
        needed = int(m.group(2))
        if needed > VOCAB_RANGE[1]:
            return BadInput(f"{source.capitalize()} has so many different characters that the vocabulary would need "
                            f"{needed:,} pieces just to keep them (this panel goes up to {VOCAB_RANGE[1]:,}). "
                            "Paste a text with fewer different characters.")
        return BadInput(f"{source.capitalize()} needs at least {needed:,} pieces: one for each character it keeps, "
                        f"and <unk>, <s>, </s>. Raise the vocabulary size to {needed:,} or more.")
    return BadInput(f"sentencepiece could not train a unigram model on {source} with {vocab_size:,} pieces. "
                    "Try another vocabulary size or a longer text.")


@functools.lru_cache(maxsize=16)
def trained(text: str, vocab_size: int) -> Model:
    """A unigram model of `vocab_size` pieces trained on the text's lines, in memory (no file is written);
    cached: a class trains on the same reviews with the same few sizes. The library raises RuntimeError when
    the text cannot give that many pieces."""
    import sentencepiece as spm

    lines = _lines(text)
    writer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=writer, model_type="unigram", vocab_size=vocab_size,
        num_threads=1, minloglevel=2,  # one thread: the same model on every machine; no log lines
        max_sentence_length=4 * train.MAX_TEXT_CHARS + 16)  # (bytes) a long pasted line is kept whole
    return model_of(spm.SentencePieceProcessor(model_proto=writer.getvalue()), len(lines))


def model_of(processor, lines: int = 0) -> Model:
    """What the sums need of a loaded processor (a trained one, or a model made by hand in the tests)."""
    scores = {processor.id_to_piece(i): processor.get_score(i) for i in range(processor.get_piece_size())
              if not (processor.is_unknown(i) or processor.is_control(i) or processor.is_unused(i))}
    return Model(processor, scores, max(map(len, scores)), min(scores.values()) - UNK_PENALTY, lines)


def _log_add(a: float, b: float) -> float:
    if a == -math.inf:
        return b
    high, low = max(a, b), min(a, b)
    return high + math.log1p(math.exp(low - high))


def lattice_total(model: Model, normalized: str, alpha: float = 1.0) -> tuple[float, int]:
    """(log Σ over every segmentation of exp(alpha · its score), how many segmentations there are): the forward
    pass over the library's lattice (every vocabulary piece that matches at each position; an unknown character
    where no one-character piece does). With alpha 1 the total is log Σ_x Π p(x_j), the textbook's inner sum for
    one sentence; with alpha it is the normaliser of the sampling distribution."""
    total, count = [-math.inf] * (len(normalized) + 1), [0] * (len(normalized) + 1)
    total[0], count[0] = 0.0, 1
    for start in range(len(normalized)):
        if not count[start]:
            continue
        single = False
        for end in range(start + 1, min(start + model.longest, len(normalized)) + 1):
            score = model.scores.get(normalized[start:end])
            if score is not None:
                single = single or end == start + 1
                total[end] = _log_add(total[end], total[start] + alpha * score)
                count[end] += count[start]
        if not single:
            total[start + 1] = _log_add(total[start + 1], total[start] + alpha * model.unk_score)
            count[start + 1] += count[start]
    return total[-1], count[-1]


@dataclass
class Segmentation:
    pieces: list[str]
    ids: list[int]
    score: float  # Σ log p(piece)
    probability: float  # P(this segmentation | the text) = exp(score - log Σ over all segmentations)
    count: int = 0  # times sampled
    expected: float = 0.0  # its probability when sampled with alpha: exp(alpha·score) / Σ exp(alpha·score')

    def to_json(self, sampled: bool = False) -> dict:
        out = {"pieces": self.pieces, "ids": self.ids, "score": round(self.score, 4),
               "probability": round(self.probability, 6)}
        return {**out, "count": self.count, "expected_share": round(self.expected, 6)} if sampled else out


@dataclass
class UnigramResult:
    text: str
    normalized: str  # as the model reads it: NFKC, spaces as ▁, a ▁ in front
    vocab_size: int
    trained_on: str
    lines: int
    viterbi: Segmentation
    nbest: list[Segmentation]
    samples: list[Segmentation]  # each distinct sampled segmentation, the most frequent first
    alpha: float
    drawn: int
    seed: int
    log_total: float
    segmentations: int
    unk_score: float
    pieces: list[dict] = field(default_factory=list)  # every piece shown, first seen first

    def to_json(self) -> dict:
        return {"text": self.text, "normalized": self.normalized, "vocab_size": self.vocab_size,
                "trained_on": self.trained_on, "training_lines": self.lines, "pieces": self.pieces,
                "viterbi": self.viterbi.to_json(), "nbest": [s.to_json() for s in self.nbest],
                "samples": [s.to_json(sampled=True) for s in self.samples], "alpha": self.alpha,
                "samples_drawn": self.drawn, "seed": self.seed, "log_total": round(self.log_total, 4),
                "segmentations": self.segmentations, "unk_log_prob": round(self.unk_score, 4)}


def segmentation(model: Model, proto, log_total: float) -> Segmentation:
    """A segmentation as the library gives it (pieces and ids; an unknown stretch is one piece, its text, with
    <unk>'s id) and its score summed here from the pieces' scores."""
    pieces, ids = [p.piece for p in proto.pieces], [p.id for p in proto.pieces]
    score = sum(model.log_prob(p, i) for p, i in zip(pieces, ids))
    return Segmentation(pieces, ids, score, math.exp(score - log_total))


def sampled(model: Model, text: str, alpha: float, samples: int, seed: int) -> list:
    """`samples` segmentations drawn by the library (from all segmentations, with probability ∝ exp(alpha ·
    score)), the same ones for the same seed."""
    import sentencepiece as spm

    with _SAMPLING:
        spm.set_random_generator_seed(seed)
        return [model.processor.encode(text, out_type="proto", enable_sampling=True, alpha=alpha, nbest_size=-1)
                for _ in range(samples)]


def check_inputs(text, vocab_size, corpus, alpha, samples, seed) -> tuple:
    return (check_text(text, EXAMPLE, max_chars=MAX_CHARS, what="text to segment"),
            check_int(vocab_size, "The vocabulary size", *VOCAB_RANGE),
            check_text(corpus, "one sentence per line", max_chars=train.MAX_TEXT_CHARS, what="training text",
                       allow_empty=True),
            check_number(alpha, "Alpha", *ALPHA_RANGE),
            check_int(samples, "The number of samples", *SAMPLES_RANGE),
            check_int(seed, "The seed", *SEED_RANGE))


def unigram(text, vocab_size=VOCAB_DEFAULT, corpus="", alpha=ALPHA_DEFAULT, samples=SAMPLES_DEFAULT,
            seed=0) -> UnigramResult:
    """The text through a unigram model trained on `corpus` (empty: the built-in reviews) with `vocab_size`
    pieces: its Viterbi segmentation, its n best, and `samples` segmentations sampled with `alpha` and `seed`."""
    text, vocab_size, corpus, alpha, samples, seed = check_inputs(text, vocab_size, corpus, alpha, samples, seed)
    try:
        model = trained(corpus or train.builtin_text(), vocab_size)
    except RuntimeError as error:
        raise _friendly(error, vocab_size, bool(corpus)) from None
    processor = model.processor
    normalized = processor.normalize(text)
    if not normalized.strip(WORD_START):
        raise BadInput("Once normalised (NFKC, invisible characters dropped) your text is empty: type a word, "
                       f"for example “{EXAMPLE}”.")
    log_total, count = lattice_total(model, normalized)
    viterbi = segmentation(model, processor.encode(text, out_type="proto"), log_total)
    nbest = [segmentation(model, p, log_total)
             for p in processor.nbest_encode(text, out_type="proto", nbest_size=NBEST).nbests]
    drawn = {}  # (pieces, ids) -> a Segmentation, in the order first drawn
    log_total_alpha = lattice_total(model, normalized, alpha)[0]
    for proto in sampled(model, text, alpha, samples, seed):
        s = segmentation(model, proto, log_total)
        s = drawn.setdefault((tuple(s.pieces), tuple(s.ids)), s)
        s.count += 1
        s.expected = math.exp(alpha * s.score - log_total_alpha)
    found = sorted(drawn.values(), key=lambda s: -s.count)  # a tie keeps the order first drawn
    result = UnigramResult(text, normalized, processor.get_piece_size(),
                           "your text" if corpus else "the built-in reviews", model.lines, viterbi, nbest, found,
                           alpha, samples, seed, log_total, count, model.unk_score)
    result.pieces = piece_rows(model, [viterbi, *nbest, *found])
    return result


def piece_rows(model: Model, segmentations: list[Segmentation]) -> list[dict]:
    """Every piece the segmentations use, once, in the order first met: its id and log-probability."""
    seen = {}
    for s in segmentations:
        for piece, piece_id in zip(s.pieces, s.ids):
            if (piece, piece_id) not in seen:
                log_prob = model.log_prob(piece, piece_id)
                seen[piece, piece_id] = {"piece": piece, "id": piece_id, "log_prob": round(log_prob, 4),
                               "prob": round(math.exp(log_prob), 6),
                               "unknown": bool(model.processor.is_unknown(piece_id))}
    return list(seen.values())


def unigram_json(text: str, vocab_size: int = VOCAB_DEFAULT, corpus: str = "", alpha: float = ALPHA_DEFAULT,
                 samples: int = SAMPLES_DEFAULT, seed: int = 0) -> dict:
    """The `unigram` API."""
    return unigram(text, vocab_size, corpus, alpha, samples, seed).to_json()
