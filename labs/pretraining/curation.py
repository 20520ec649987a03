"""Pre-training, curating the data (Textbook 20.13.1): a small web-like corpus, or the student's own documents,
through four real steps, each removing documents and saying why.

1. exact deduplication: the normalised text (lower case, whitespace collapsed) hashed with SHA-1; a later
   document with the same hash is a copy;
2. near-duplicates: word 3-gram shingles, one MinHash per document (datasketch, 128 permutations) and
   datasketch's MinHashLSH at the student's threshold; a candidate the LSH bands bring up is removed when the
   MinHash estimate of its Jaccard similarity with an earlier kept document reaches the threshold;
3. heuristic filters (Gopher-style, Rae et al. 2021; the limits below): too few words, too many symbols per
   word, too many repeated lines;
4. language identification (off unless asked): py3langid, English with probability ≥ the student's threshold;
5. offensive language (off unless asked): alt-profanity-check's probability below the student's threshold
   (both in classifier_filters.py; each document's language and scores are shown even when a step is off);
6. perplexity: a causal LM (SmolLM2 offline) scores each document that is left, exp of the mean token loss
   (the teacher-forced pass `model(ids, labels=ids)` computes); too high (gibberish, spam, another language)
   or too low (repetitive boilerplate) is removed.

The cheap steps run first; the model reads only what they keep."""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from labs.core.errors import BadInput, check_bool, check_number, check_text
from labs.core.models import models
from labs.core.ui import course_quotes
from labs.core.work import lm
from labs.pretraining import classifier_filters as cf

CORPUS = Path(__file__).resolve().parents[2] / "assets" / "curation_corpus.jsonl"
FAMILIES = ("causal",)
SHINGLE_WORDS, NUM_PERM = 3, 128
MIN_WORDS = 5  # fewer words: a fragment ("Read more", "Page 2 of 7")
MAX_SYMBOL_RATIO = 0.1  # Gopher: symbols (# …) per word above 0.1
MAX_REPEATED_LINES = 0.3  # Gopher: the fraction of lines that repeat an earlier line
MAX_DOCUMENTS, MAX_DOC_CHARS, MAX_ALL_CHARS, MAX_TOKENS = 80, 1000, 20_000, 256
DEFAULT_THRESHOLD, DEFAULT_LIMIT, DEFAULT_FLOOR = 0.5, 150.0, 22.0
# Characters a sentence needs: letters, digits, spaces and ordinary punctuation. Any other is a symbol.
ORDINARY = re.compile(r"[\w\s.,;:!?'\"’‘“”()\-–—]")
STEPS = ("exact duplicate", "near-duplicate", "heuristics", "language", "offensive", "perplexity")
OPTIONAL = ("language", "offensive")  # counted only when on
QUOTES = {k: course_quotes.text(f"curation_{k}") for k in ("dedup", "perplexity", "heuristics", "language",
                                                            "toxicity")}
EXAMPLE = "The river town woke slowly on Sunday morning.\n\nRead more"


@dataclass
class Document:
    number: int  # 1-based, in the order given
    text: str
    words: int
    kept: bool = True
    step: str = ""  # the step that removed it ("" when kept)
    reason: str = ""
    perplexity: float | None = None
    tokens: int = 0
    language: str = ""  # py3langid's most likely language
    language_probability: float | None = None  # its normalised probability
    offensive_probability: float | None = None  # profanity-check's predict_prob


@dataclass
class Pair:
    document: int  # the later document, removed
    of: int  # the earlier document it nearly repeats, kept
    minhash_jaccard: float  # datasketch's estimate
    exact_jaccard: float  # the shingles' true Jaccard similarity (shown beside it)


@dataclass
class Curation:
    model: str
    near_duplicate_threshold: float
    perplexity_limit: float
    perplexity_floor: float
    documents: list[Document]
    pairs: list[Pair] = field(default_factory=list)
    language_threshold: float | None = None  # None: the step is off
    offensive_threshold: float | None = None

    def counts(self) -> list[dict]:
        """Per step: how many documents it read, removed and kept."""
        left, rows = len(self.documents), []
        off = {"language": self.language_threshold is None, "offensive": self.offensive_threshold is None}
        for step in (s for s in STEPS if not off.get(s)):
            removed = sum(d.step == step for d in self.documents)
            rows.append({"step": step, "in": left, "removed": removed, "out": left - removed})
            left -= removed
        return rows

    def to_json(self) -> dict:
        return {"model": self.model, "near_duplicate_threshold": self.near_duplicate_threshold,
                "perplexity_limit": self.perplexity_limit, "perplexity_floor": self.perplexity_floor,
                "language_threshold": self.language_threshold, "offensive_threshold": self.offensive_threshold,
                "limits": {"shingle_words": SHINGLE_WORDS, "num_perm": NUM_PERM, "min_words": MIN_WORDS,
                           "max_symbol_ratio": MAX_SYMBOL_RATIO, "max_repeated_lines": MAX_REPEATED_LINES},
                "documents": [asdict(d) for d in self.documents], "near_duplicates": [asdict(p) for p in self.pairs],
                "counts": self.counts(), "kept": sum(d.kept for d in self.documents)}


@lru_cache(maxsize=1)
def builtin_corpus() -> tuple[str, ...]:
    """The built-in documents' texts (assets/curation_corpus.jsonl; its `kind` and `note` are for the tests and
    the reader, never read here)."""
    return tuple(json.loads(line)["text"] for line in CORPUS.read_text().splitlines() if line.strip())


def split_documents(text: str) -> list[str]:
    """Documents separated by blank lines (a document may span several lines)."""
    return [block.strip() for block in re.split(r"\n\s*\n", text) if block.strip()]


def check_documents(documents) -> list[str]:
    """The built-in corpus for "" (or None); otherwise blank-line separated text or a list of texts, within the
    limits."""
    if documents is None or (isinstance(documents, str) and not documents.strip()):
        return list(builtin_corpus())
    if isinstance(documents, str):
        docs = split_documents(check_text(documents, EXAMPLE, max_chars=MAX_ALL_CHARS, what="documents"))
    elif isinstance(documents, (list, tuple)) and all(isinstance(d, str) for d in documents):
        docs = [d.strip() for d in documents if d.strip()]
    else:
        raise BadInput("The documents must be text (documents separated by a blank line) or a list of texts.")
    if not docs:
        raise BadInput(f"Type some documents first, separated by a blank line, for example “{EXAMPLE}”.")
    if len(docs) > MAX_DOCUMENTS:
        raise BadInput(f"That is {len(docs)} documents; at most {MAX_DOCUMENTS} are read here. Remove some.")
    long = [i + 1 for i, d in enumerate(docs) if len(d) > MAX_DOC_CHARS]
    if long:
        raise BadInput(f"Document {long[0]} is {len(docs[long[0] - 1]):,} characters long; at most "
                       f"{MAX_DOC_CHARS:,} a document are read here. Shorten it.")
    if sum(map(len, docs)) > MAX_ALL_CHARS:
        raise BadInput(f"The documents are {sum(map(len, docs)):,} characters in all; at most {MAX_ALL_CHARS:,} "
                       "are read here.")
    return docs


def check_settings(threshold, limit, floor) -> tuple[float, float, float]:
    threshold = check_number(threshold, "The near-duplicate threshold", 0.3, 0.95)
    limit = check_number(limit, "The perplexity limit", 2, 100_000)
    floor = check_number(floor, "The perplexity floor", 0, 100_000)
    if floor >= limit:
        raise BadInput(f"The perplexity floor ({floor:g}) must be below the limit ({limit:g}).")
    return threshold, limit, floor


# ---------------------------------------------------------------- 1. exact duplicates


def normalise(text: str) -> str:
    return " ".join(text.lower().split())


def fingerprint(text: str) -> str:
    return hashlib.sha1(normalise(text).encode()).hexdigest()


def exact_duplicates(docs: list[Document]) -> None:
    first: dict[str, int] = {}
    for d in docs:
        key = fingerprint(d.text)
        if key in first:
            d.kept, d.step, d.reason = False, STEPS[0], f"the same text as document {first[key]} once normalised"
        else:
            first[key] = d.number


# ---------------------------------------------------------------- 2. near-duplicates


def shingles(text: str, k: int = SHINGLE_WORDS) -> set[str]:
    """The text's word k-grams (normalised, punctuation dropped); a text shorter than k words is one shingle."""
    words = re.findall(r"\w+", text.lower())
    if len(words) < k:
        return {" ".join(words)}
    return {" ".join(words[i:i + k]) for i in range(len(words) - k + 1)}


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def minhash(text: str):
    from datasketch import MinHash

    m = MinHash(num_perm=NUM_PERM, seed=1)
    m.update_batch([s.encode() for s in sorted(shingles(text))])
    return m


def near_duplicates(docs: list[Document], threshold: float) -> list[Pair]:
    """Each kept document in order: the LSH brings up earlier kept candidates; the best one at or above the
    threshold (MinHash's estimate) removes it. Otherwise it joins the index."""
    from datasketch import MinHashLSH

    index, hashes, pairs = MinHashLSH(threshold=threshold, num_perm=NUM_PERM), {}, []
    for d in (d for d in docs if d.kept):
        m = minhash(d.text)
        scored = sorted(((m.jaccard(hashes[c]), c) for c in index.query(m)), reverse=True)
        if scored and scored[0][0] >= threshold:
            estimate, of = scored[0]
            exact = jaccard(shingles(d.text), shingles(docs[of - 1].text))
            pairs.append(Pair(d.number, of, round(float(estimate), 4), round(exact, 4)))
            d.kept, d.step = False, STEPS[1]
            d.reason = f"nearly document {of}: Jaccard ≈ {estimate:.2f} (MinHash), {exact:.2f} exactly"
        else:
            index.insert(d.number, m)
            hashes[d.number] = m
    return pairs


# ---------------------------------------------------------------- 3. heuristics


def symbol_ratio(text: str) -> float:
    symbols = sum(1 for ch in text if not ORDINARY.match(ch))
    return symbols / max(1, len(text.split()))


def repeated_lines(text: str) -> float:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return (len(lines) - len(set(lines))) / len(lines) if lines else 0.0


def heuristic_reason(d: Document) -> str:
    if d.words < MIN_WORDS:
        return f"{d.words} word{'s' * (d.words != 1)}: fewer than {MIN_WORDS}"
    if (ratio := symbol_ratio(d.text)) > MAX_SYMBOL_RATIO:
        return f"{ratio:.2f} symbols per word: more than {MAX_SYMBOL_RATIO}"
    if (share := repeated_lines(d.text)) > MAX_REPEATED_LINES:
        return f"{share:.0%} of its lines repeat an earlier line: more than {MAX_REPEATED_LINES:.0%}"
    return ""


def heuristics(docs: list[Document]) -> None:
    for d in (d for d in docs if d.kept):
        if reason := heuristic_reason(d):
            d.kept, d.step, d.reason = False, STEPS[2], reason


# ---------------------------------------------------------------- 4. perplexity


def perplexities(loaded, texts: list[str]) -> list[tuple[float, int]]:
    """Each text's perplexity under the causal LM and its token count: exp(−mean log P(token | before)) over
    the tokens after the first (what `model(ids, labels=ids).loss` averages). One batched, cached pass."""
    rows = [lm.check_length(loaded.tokenizer(t)["input_ids"], MAX_TOKENS, "A document") for t in texts]
    logprobs = lm.submit_many(loaded, "logprobs", [tuple(r) for r in rows], [len(r) for r in rows])
    return [(math.exp(-float(np.mean(lp.astype(np.float64)))) if len(lp) else math.inf, len(r))
            for lp, r in zip(logprobs, rows)]


def perplexity_filter(loaded, docs: list[Document], limit: float, floor: float) -> None:
    left = [d for d in docs if d.kept]
    if not left:  # everything went in the cheap steps: the model reads nothing
        return
    for d, (ppl, n) in zip(left, perplexities(loaded, [d.text for d in left])):
        d.perplexity, d.tokens = (round(ppl, 2) if math.isfinite(ppl) else None), n
        if not math.isfinite(ppl) or ppl > limit:
            d.kept, d.step = False, STEPS[5]
            d.reason = f"perplexity {ppl:,.0f} above {limit:g}: too surprising to the model"
        elif ppl < floor:
            d.kept, d.step, d.reason = False, STEPS[5], f"perplexity {ppl:.1f} below {floor:g}: too predictable"


def check_classifiers(language_filter, language_threshold, offensive_filter, offensive_threshold):
    """The two classifier steps' thresholds, None for a step that is off."""
    language_threshold, offensive_threshold = cf.check_thresholds(language_threshold, offensive_threshold)
    return (language_threshold if check_bool(language_filter, "language_filter") else None,
            offensive_threshold if check_bool(offensive_filter, "offensive_filter") else None)


def curate(loaded, documents, near_duplicate_threshold=DEFAULT_THRESHOLD, perplexity_limit=DEFAULT_LIMIT,
           perplexity_floor=DEFAULT_FLOOR, language_filter=False, language_threshold=cf.DEFAULT_LANGUAGE_PROBABILITY,
           offensive_filter=False, offensive_threshold=cf.DEFAULT_OFFENSIVE_PROBABILITY) -> Curation:
    texts = check_documents(documents)
    threshold, limit, floor = check_settings(near_duplicate_threshold, perplexity_limit, perplexity_floor)
    language, offensive = check_classifiers(language_filter, language_threshold, offensive_filter,
                                            offensive_threshold)
    docs = [Document(i + 1, t, len(t.split())) for i, t in enumerate(texts)]
    cf.annotate(docs)
    exact_duplicates(docs)
    pairs = near_duplicates(docs, threshold)
    heuristics(docs)
    if language is not None:
        cf.language_step(docs, language, STEPS[3])
    if offensive is not None:
        cf.offensive_step(docs, offensive, STEPS[4])
    perplexity_filter(loaded, docs, limit, floor)
    return Curation(loaded.name, threshold, limit, floor, docs, pairs, language, offensive)


def curate_json(documents: str = "", near_duplicate_threshold: float = DEFAULT_THRESHOLD,
                perplexity_limit: float = DEFAULT_LIMIT, perplexity_floor: float = DEFAULT_FLOOR,
                model: str = "", language_filter: bool = False,
                language_threshold: float = cf.DEFAULT_LANGUAGE_PROBABILITY, offensive_filter: bool = False,
                offensive_threshold: float = cf.DEFAULT_OFFENSIVE_PROBABILITY) -> dict:
    """The endpoint: "" for documents is the built-in corpus; the model is a causal LM (SmolLM2 offline); the
    language and offensive-language steps run when their filter is true."""
    check_documents(documents)
    check_settings(near_duplicate_threshold, perplexity_limit, perplexity_floor)
    check_classifiers(language_filter, language_threshold, offensive_filter, offensive_threshold)
    loaded = models.load(model or default_model(), *FAMILIES)
    return curate(loaded, documents, near_duplicate_threshold, perplexity_limit, perplexity_floor, language_filter,
                  language_threshold, offensive_filter, offensive_threshold).to_json()


def default_model() -> str:
    """The first causal LM offered: the Hub default online, SmolLM2 offline."""
    choices = models.choices(*FAMILIES)
    if not choices:
        raise BadInput("No causal language model is available here to score perplexity.")
    return choices[0].name
