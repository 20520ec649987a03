"""Next token, n-grams against a neural LM: a Kneser–Ney trigram model (nltk.lm's KneserNeyInterpolated, counted
here on the built-in reviews) beside SmolLM2, on the same held-out reviews and on the student's sentence word by word.

Held out, both perplexities are per word (SmolLM2's per token too). Word by word: which contexts the trigram model
never counted (its probability then comes from the bigram or the unigram level), what it does with a word it never
saw (<UNK>), and SmolLM2's probability for the same word (the product of its tokens').

The corpus is the 352 short reviews that ship with LM Lab (assets/sentiment.csv, the Tokens and Fine-tune labs'
reviews): every tenth is held out (35), the other 317 are counted. Words are the text's runs of letters and digits
(an apostrophe inside a word kept: "didn't") and each punctuation mark, lower-cased; a review is one sequence,
padded <s> <s> … </s> </s> by nltk's padded_everygram_pipeline. Scored on held-out text, both models are charged
for the same words, from the first to the last (the end of a review, </s>, is scored for neither)."""

from __future__ import annotations

import bisect
import csv
import functools
import math
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from labs.core.errors import BadInput, check_text
from labs.core.models import models
from labs.core.work import lm

REVIEWS = Path(__file__).resolve().parents[2] / "assets" / "sentiment.csv"
CORPUS = "assets/sentiment.csv: the 352 short reviews written for LM Lab (films, restaurants, products, travel, other)"
ORDER = 3
DISCOUNT = 0.1  # KneserNeyInterpolated's default
# A word seen once in training is <UNK> too, so that <UNK> has counts: the model learns where rare words go. With
# nltk's default (1), <UNK> is never counted and a new word gets probability 0 (perplexity infinite).
UNK_CUTOFF = 2
HELD_OUT_EVERY = 10  # the 10th, 20th, … review is held out
START, END, UNK = "<s>", "</s>", "<UNK>"
MAX_CHARS = 400
MAX_WORDS = 60
EXAMPLE = "The film was a great success."  # LM Lab's own: a word it never saw, a trigram it never counted
NEURAL = models.SMOLLM2_NAME
DOCUMENT_START = "<|endoftext|>"
WORD = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]")

# nltk's counts are defaultdicts: scoring an unseen context adds an empty entry to them. Scoring holds this lock (a
# lookup that adds one while another request iterates the counts would fail) and takes those entries out again.
_lock = threading.Lock()


def words_of(text: str) -> list[str]:
    """The words as the trigram model reads them: lower-cased, each punctuation mark a word of its own."""
    return [m.group().lower() for m in WORD.finditer(text)]


@functools.lru_cache(maxsize=1)
def reviews() -> tuple[str, ...]:
    with REVIEWS.open(newline="") as f:
        return tuple(row["text"] for row in csv.DictReader(f))


def split(texts) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(train, held out): every tenth text held out (the 10th, 20th, …), the rest for training. Deterministic."""
    held = tuple(t for i, t in enumerate(texts) if i % HELD_OUT_EVERY == HELD_OUT_EVERY - 1)
    train = tuple(t for i, t in enumerate(texts) if i % HELD_OUT_EVERY != HELD_OUT_EVERY - 1)
    return train, held


def train(sentences: list[list[str]], unk_cutoff: int = UNK_CUTOFF, discount: float = DISCOUNT):
    """nltk's interpolated Kneser–Ney trigram model counted on these sentences (lists of words)."""
    from nltk.lm import KneserNeyInterpolated, Vocabulary
    from nltk.lm.preprocessing import padded_everygram_pipeline

    grams, vocabulary_text = padded_everygram_pipeline(ORDER, sentences)
    model = KneserNeyInterpolated(ORDER, discount=discount, vocabulary=Vocabulary(unk_cutoff=unk_cutoff))
    model.fit(grams, vocabulary_text)
    return model


@dataclass(frozen=True)
class Corpus:
    model: object  # nltk.lm.KneserNeyInterpolated
    train_texts: tuple[str, ...]
    held_out_texts: tuple[str, ...]
    train_words: int

    @property
    def vocabulary_size(self) -> int:
        """Words the model knows, <s>, </s> and <UNK> included (nltk's len(vocab))."""
        return len(self.model.vocab)


@functools.lru_cache(maxsize=1)
def corpus() -> Corpus:
    """The trigram model counted on the training reviews: once per process."""
    train_texts, held_out = split(reviews())
    sentences = [words_of(t) for t in train_texts]
    return Corpus(train(sentences), train_texts, held_out, sum(len(s) for s in sentences))


# ---------------------------------------------------------------- the trigram model, word by word


@dataclass(frozen=True)
class WordRow:
    word: str  # as the model reads it, lower-cased
    looked_up: str  # the word, or <UNK> when it is not in the vocabulary
    context: tuple[str, str]  # the two words before, looked up (<s> before the first)
    ngram_p: float  # nltk's score(word, context): interpolated Kneser–Ney
    bigram_level_p: float  # score(word, context[1:]): the level the trigram falls back on
    unigram_level_p: float  # score(word): the continuation count's share
    trigram_count: int  # c(u v w) in training
    context_count: int  # c(u v ·)
    bigram_count: int  # c(v w)
    train_count: int  # how often the word itself is in the training reviews

    @property
    def oov(self) -> bool:
        return self.looked_up == UNK

    @property
    def context_seen(self) -> bool:
        return self.context_count > 0

    @property
    def backed_off_to(self) -> str | None:
        """None when the trigram was counted; else the highest level that counted the word after its context."""
        return None if self.trigram_count else "bigram" if self.bigram_count else "unigram"

    @property
    def weight(self) -> float:
        """What the lower level is multiplied by when the trigram was never counted: γ(u v) = d · (distinct words
        after u v) / c(u v ·) for a context seen, 1 for an unseen one (nltk's alpha 0, gamma 1)."""
        return self.ngram_p / self.bigram_level_p if self.bigram_level_p else 0.0


def _forget_unseen(model, context: tuple[str, str]) -> None:
    for order, key in ((3, context), (2, context[1:])):
        table = model.counts[order]
        if key in table and not table[key]:
            del table[key]


def _row(model, word: str, context: tuple[str, str]) -> WordRow:
    looked = model.vocab.lookup(word)
    u, v = model.vocab.lookup(context)
    trigrams, bigrams = model.counts[3].get((u, v)), model.counts[2].get((v,))
    try:
        p, p2, p1 = model.score(word, context), model.score(word, context[1:]), model.score(word)
    finally:
        _forget_unseen(model, (u, v))
    return WordRow(word, looked, (u, v), p, p2, p1, trigrams[looked] if trigrams else 0,
                   trigrams.N() if trigrams else 0, bigrams[looked] if bigrams else 0, model.vocab.counts[word])


def contexts(words: list[str]) -> list[tuple[str, str]]:
    """Each word's two words before, as the model pads a sequence (<s> <s> first)."""
    padded = [START] * (ORDER - 1) + list(words)
    return [(padded[i], padded[i + 1]) for i in range(len(words))]


def ngram_rows(words: list[str], model=None) -> list[WordRow]:
    model = corpus().model if model is None else model
    with _lock:
        return [_row(model, w, c) for w, c in zip(words, contexts(words))]


def ngram_logprob(model, word: str, context: tuple[str, str]) -> float:
    """ln P(word | context): nltk's score, natural log (nltk's logscore is base 2; the perplexity is the same)."""
    with _lock:
        try:
            p = model.score(word, context)
        finally:
            _forget_unseen(model, tuple(model.vocab.lookup(context)))
    return math.log(p) if p > 0 else -math.inf


# ---------------------------------------------------------------- SmolLM2, word by word


@dataclass(frozen=True)
class Neural:
    """A causal LM on one text read after its start token: log P of each token, and of each word (the sum of the
    tokens it begins in; 0 for a word that shares its token with the word before), in natural log."""
    tokens: tuple[str, ...]
    token_logprobs: tuple[float, ...]
    word_logprobs: tuple[float, ...]
    word_tokens: tuple[tuple[str, ...], ...]


def start_id(tokenizer) -> int:
    """The token read before a text, so that its first word is predicted too: <|endoftext|>, which ends one
    document and starts the next (GPT-2's and SmolLM2 base's BOS); else the BOS or EOS. SmolLM2-Instruct's own BOS,
    <|im_start|>, opens a chat turn: read after it, the held-out reviews' first words cost 2.6 nats more each, and
    its per-token perplexity on them is 322 instead of 125."""
    found = tokenizer.convert_tokens_to_ids(DOCUMENT_START)
    if found is not None and tokenizer.convert_ids_to_tokens(found) == DOCUMENT_START:
        return found
    return tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id


def owners(text: str, spans: list[tuple[int, int]], offsets) -> list[int]:
    """For each token (its character offsets), the word it belongs to: the one its first non-space character is
    in; a token of spaces alone goes with the next token's word (the last word's, at the end)."""
    starts = [s for s, _ in spans]
    found: list[int | None] = []
    for a, b in offsets:
        k = next((i for i in range(a, b) if not text[i].isspace()), None)
        found.append(None if k is None else max(0, bisect.bisect_right(starts, k) - 1))
    following = len(spans) - 1
    for i in range(len(found) - 1, -1, -1):
        if found[i] is None:
            found[i] = following
        following = found[i]
    return found


def neural(loaded: models.LoadedModel, texts: list[str]) -> list[Neural]:
    """Each text in one teacher-forced pass (the shared `logprobs` pass; all texts in one batch)."""
    tokenizer = loaded.tokenizer
    encoded = [tokenizer(t, add_special_tokens=False, return_offsets_mapping=True) for t in texts]
    rows = [tuple([start_id(tokenizer), *e["input_ids"]]) for e in encoded]
    for row in rows:
        lm.check_length(list(row), loaded.max_tokens)
    logprobs = lm.submit_many(loaded, "logprobs", rows, [len(r) for r in rows])
    found = []
    for text, e, lp in zip(texts, encoded, logprobs):
        spans = [m.span() for m in WORD.finditer(text)]
        per_word, pieces = [0.0] * len(spans), [[] for _ in spans]
        readable = models.readable_tokens(tokenizer, e["input_ids"])
        for k, w in enumerate(owners(text, spans, e["offset_mapping"])):
            per_word[w] += float(lp[k])
            pieces[w].append(readable[k])
        found.append(Neural(tuple(readable), tuple(float(x) for x in lp), tuple(per_word),
                            tuple(tuple(p) for p in pieces)))
    return found


# ---------------------------------------------------------------- held-out perplexity


@dataclass(frozen=True)
class HeldOut:
    model: str
    words: int  # the held-out reviews' words (as the trigram model reads them)
    known: int  # of which the trigram model's vocabulary has (not <UNK>)
    tokens: int  # the same reviews in SmolLM2's tokens
    ngram_per_word: float
    smollm2_per_token: float
    smollm2_per_word: float
    ngram_per_known_word: float
    smollm2_per_known_word: float

    def to_json(self) -> dict:
        return {"ngram_per_word": self.ngram_per_word, "smollm2_per_token": self.smollm2_per_token,
                "smollm2_per_word": self.smollm2_per_word, "ngram_per_known_word": self.ngram_per_known_word,
                "smollm2_per_known_word": self.smollm2_per_known_word}


def perplexity(logprobs: list[float], count: int) -> float:
    """exp(total negative log-likelihood / count): per word or per token, as `count` counts."""
    return math.exp(-math.fsum(logprobs) / count) if count else math.nan


@functools.lru_cache(maxsize=1)
def ngram_held_out() -> tuple[tuple[float, bool], ...]:
    """(ln P, in the vocabulary) for every held-out word, review after review: once per process."""
    c = corpus()
    found = []
    for text in c.held_out_texts:
        words = words_of(text)
        found += [(ngram_logprob(c.model, w, ctx), c.model.vocab.lookup(w) != UNK)
                  for w, ctx in zip(words, contexts(words))]
    return tuple(found)


@functools.lru_cache(maxsize=4)
def held_out(name: str = NEURAL) -> HeldOut:
    """Both models' perplexities on the held-out reviews: once per process (SmolLM2's takes a few seconds)."""
    loaded = models.load(name, "causal")
    ngram = ngram_held_out()
    scored = neural(loaded, list(corpus().held_out_texts))
    word_lps = [lp for n in scored for lp in n.word_logprobs]
    token_lps = [lp for n in scored for lp in n.token_logprobs]
    assert len(word_lps) == len(ngram)  # the same words, counted the same way
    known = [i for i, (_, k) in enumerate(ngram) if k]
    return HeldOut(loaded.name, len(ngram), len(known), len(token_lps),
                   perplexity([lp for lp, _ in ngram], len(ngram)), perplexity(token_lps, len(token_lps)),
                   perplexity(token_lps, len(ngram)), perplexity([ngram[i][0] for i in known], len(known)),
                   perplexity([word_lps[i] for i in known], len(known)))


# ---------------------------------------------------------------- the student's sentence


def check_sentence(text) -> str:
    text = check_text(text, EXAMPLE, max_chars=MAX_CHARS, what="sentence")
    words = words_of(text)
    if not any(ch.isalnum() for w in words for ch in w):
        raise BadInput(f"Your sentence has no words, only punctuation. Type a few words, for example “{EXAMPLE}”.")
    if len(words) > MAX_WORDS:
        raise BadInput(f"Your sentence has {len(words)} words (punctuation marks count as words here); this panel "
                       f"reads at most {MAX_WORDS}. Shorten it.")
    return text


@dataclass(frozen=True)
class Comparison:
    text: str
    rows: tuple[WordRow, ...]
    neural: Neural
    held_out: HeldOut
    corpus: Corpus

    @property
    def smollm2_p(self) -> list[float | None]:
        """Each word's probability under SmolLM2; None for a word that shares its token with the word before."""
        return [math.exp(lp) if pieces else None
                for lp, pieces in zip(self.neural.word_logprobs, self.neural.word_tokens)]

    def to_json(self) -> dict:
        c, h = self.corpus, self.held_out
        words = [{"word": r.word, "ngram_p": r.ngram_p, "smollm2_p": p, "context_seen": r.context_seen,
                  "backed_off_to": r.backed_off_to, "oov": r.oov, "looked_up": r.looked_up, "context": list(r.context),
                  "trigram_count": r.trigram_count, "context_count": r.context_count, "bigram_count": r.bigram_count,
                  "train_count": r.train_count, "bigram_level_p": r.bigram_level_p,
                  "unigram_level_p": r.unigram_level_p, "smollm2_tokens": list(pieces)}
                 for r, p, pieces in zip(self.rows, self.smollm2_p, self.neural.word_tokens)]
        return {"corpus": CORPUS, "model": h.model, "ngram": f"nltk KneserNeyInterpolated({ORDER}), discount "
                f"{DISCOUNT}, words seen fewer than {UNK_CUTOFF} times are {UNK}",
                "train_reviews": len(c.train_texts), "held_out_reviews": len(c.held_out_texts),
                "train_words": c.train_words, "held_out_words": h.words, "held_out_known_words": h.known,
                "held_out_tokens": h.tokens, "vocabulary_size": c.vocabulary_size,
                "perplexities": h.to_json(), "text": self.text, "words": words}


def compare(text, model: str = NEURAL) -> Comparison:
    """The student's sentence under both models, word by word, with both models' held-out perplexities."""
    text = check_sentence(text)
    c = corpus()
    rows = ngram_rows(words_of(text), c.model)
    loaded = models.load(model, "causal")
    return Comparison(text, tuple(rows), neural(loaded, [text])[0], held_out(loaded.name), c)


def ngram_json(text: str) -> dict:
    """The `ngram` API: the sentence word by word under the trigram model and SmolLM2, and both held-out
    perplexities."""
    return compare(text).to_json()
