"""A word's probability where a model reads it, and its rank among the model's tokens: at a sentence's one
blank (a masked LM, as Fill in the blank reads the sentence) or as a prompt's next word (a causal LM, as Next
token reads the prompt). The class lab reveals these beside the class's answers; Fill in the blank encodes its
blanks with `blank_ids` too. Every word of every student is one item of the shared batched passes (lm).

A word can be several tokens. For a causal LM its probability is exact, by the chain rule: P(w) = Π P(t_i |
prompt, t_1 … t_{i-1}), the first factor read from the same next-token pass as Next token's, the others from
one teacher-forced pass. A masked LM has no exact probability for a word of k pieces: the blank becomes k
[MASK]s and the pieces are scored left to right, P(w) ≈ Π P(piece_i | the sentence with pieces 1 … i-1 filled
in and pieces i … k masked). A one-piece word's probability is exactly the one Fill in the blank gives.

A word's rank is how many tokens the model finds more likely, plus one: for a one-token word, its rank among
the tokens; for a longer word, where its probability would stand among them."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from labs.core.errors import BadInput
from labs.core.models import models
from labs.core.work import lm

MAX_PROMPT_TOKENS = 256  # as the labs read a prompt: the end of a longer one is kept
MASKED_APPROXIMATION = ("A masked LM has no exact probability for a word of several pieces: the blank becomes "
                        "as many [MASK]s as the word has pieces, scored left to right (each piece given the "
                        "pieces before it). A one-piece word's probability is exactly the lab's.")
CAUSAL_RULE = ("Exact, by the chain rule: a word of several tokens has the product of its tokens' "
               "probabilities, each given the prompt and the tokens before it.")


@dataclass(frozen=True)
class TokenProb:
    """One of the model's own most likely tokens; `piece` when it is the start of a longer word (the model goes
    on with the same word after it: "cou" of "couch") or the end of one ("##ing")."""
    token: str
    token_id: int
    prob: float
    piece: bool = False


@dataclass(frozen=True)
class WordScore:
    """A word as the model scores it: its tokens, log P (natural log) and rank."""
    word: str
    token_ids: tuple[int, ...]
    pieces: tuple[str, ...]
    log_prob: float
    rank: int

    @property
    def prob(self) -> float:
        return math.exp(self.log_prob)


@dataclass(frozen=True)
class WordScores:
    """The model's side of a word question: its top tokens and the words scored, with how they were scored."""
    model: str
    source: str
    vocab_size: int
    rule: str  # how a word of several tokens is scored (MASKED_APPROXIMATION or CAUSAL_RULE)
    top: tuple[TokenProb, ...]
    scores: tuple[WordScore, ...]


def log_softmax(logits: np.ndarray) -> np.ndarray:
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max()
    return z - np.log(np.exp(z).sum())


def rank_of(log_probs: np.ndarray, log_p: float) -> int:
    """1 + the number of tokens more likely than log_p (ties count in the word's favour)."""
    return int((log_probs > log_p + 1e-12).sum()) + 1


def blank_ids(loaded: models.LoadedModel, text: str, max_tokens: int) -> tuple[list[int], list[int]]:
    """The sentence's token ids, every blank (however written: lm.BLANK_PATTERN) as the model's mask token, and
    the blanks' positions; refuses a sentence longer than the model (or max_tokens) reads."""
    tokenizer = loaded.tokenizer
    if tokenizer.mask_token_id is None:
        raise BadInput(f"'{loaded.name}' has no mask token; pick a masked LM such as bert-base-uncased.")
    ids = lm.check_length(tokenizer(lm.with_mask_token(text, tokenizer.mask_token))["input_ids"],
                          min(max_tokens, loaded.max_tokens))
    return ids, [i for i, t in enumerate(ids) if t == tokenizer.mask_token_id]


def word_ids(loaded: models.LoadedModel, word: str, space: str) -> list[int]:
    """A word's tokens as they would follow what stands before it (`space`: BPE vocabularies tell " w" from "w")."""
    ids = loaded.tokenizer(space + word, add_special_tokens=False)["input_ids"]
    if not ids:
        raise BadInput(f"“{word}” has no tokens in {loaded.name}'s vocabulary.")
    return ids


def _top(log_probs: np.ndarray, k: int, token_text, pieces=None) -> tuple[TokenProb, ...]:
    top = lm.top_k(log_probs, k)
    piece = pieces([int(i) for i, _ in top]) if pieces else [False] * len(top)
    return tuple(TokenProb(token_text(i), int(i), float(math.exp(lp)), p) for (i, lp), p in zip(top, piece))


@functools.lru_cache(maxsize=8)
def _starts_a_word(tokenizer) -> np.ndarray:
    """For each token of a byte-level BPE vocabulary: does it begin a new word (a space, a line break, or
    punctuation first) rather than go on with the word before it?"""
    tokens = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    return np.array([not t or t[0] in "ĠĊĉ▁ " or not t[0].isalnum() for t in tokens])


def continued(loaded: models.LoadedModel, prompt_ids: list[int], token_ids: list[int]) -> list[bool]:
    """For each of the model's next tokens after the prompt: is it a word's first piece, i.e. does the model,
    given it, put more than half its probability on a token that goes on with the same word? One batch."""
    starts = _starts_a_word(loaded.tokenizer)
    rows = [tuple(prompt_ids + [t]) for t in token_ids]
    logits = lm.submit_many(loaded, "next", rows, [len(r) for r in rows])
    out = []
    for token, row in zip(token_ids, logits):
        probs = np.exp(log_softmax(row))
        word_like = loaded.tokenizer.convert_ids_to_tokens([token])[0].lstrip("Ġ▁ ").isalpha()
        out.append(bool(word_like and probs[~starts[:len(probs)]].sum() > 0.5))
    return out


def _scored(loaded: models.LoadedModel, word: str, ids: list[int], log_p: float, log_probs) -> WordScore:
    pieces = tuple(str(t) for t in loaded.tokenizer.convert_ids_to_tokens(list(ids)))
    return WordScore(word, tuple(int(i) for i in ids), pieces, log_p, rank_of(log_probs, log_p))


def _masked_piece_logprobs(loaded: models.LoadedModel, ids: list[int], blank: int,
                           words: list[list[int]]) -> list[list[float]]:
    """For each word (its piece ids), log P of each piece by the left-to-right approximation; every piece of
    every word is one item of the same batch (the earlier pieces are the word's own, not the model's guess)."""
    mask = loaded.tokenizer.mask_token_id
    items, costs, owners = [], [], []
    for w, pieces in enumerate(words):
        k = len(pieces)
        for i in range(k):
            row = ids[:blank] + list(pieces[:i]) + [mask] * (k - i) + ids[blank + 1:]
            items.append((tuple(row), (blank + i,)))
            costs.append(len(row))
            owners.append((w, pieces[i]))
    logits = lm.submit_many(loaded, "mlm", items, costs) if items else []
    out: list[list[float]] = [[] for _ in words]
    for (w, piece), row in zip(owners, logits):
        out[w].append(float(log_softmax(row[0])[piece]))
    return out


def at_blank(loaded: models.LoadedModel, text: str, words: list[str], top_k: int) -> WordScores:
    """A masked LM at the sentence's one blank: its top_k tokens there (Fill in the blank's own figures) and
    each word's probability and rank there."""
    ids, blanks = blank_ids(loaded, text, MAX_PROMPT_TOKENS)
    if len(blanks) != 1:
        found = ("There is no blank in this sentence." if not blanks else
                 f"A class question has exactly one blank; this sentence has {len(blanks)}.")
        raise BadInput(f"{found} Write one [MASK] (or ___) where the class should guess a word.")
    blank = blanks[0]
    log_probs = log_softmax(lm.mlm_logits(loaded, ids, [blank])[0])
    before = text[:lm.BLANK_PATTERN.search(text).start()]
    space = " " if before[-1:].isspace() else ""
    pieces = [word_ids(loaded, word, space) for word in words]
    longer = _masked_piece_logprobs(loaded, ids, blank, [p if len(p) > 1 else [] for p in pieces])
    scores = tuple(_scored(loaded, word, p, float(log_probs[p[0]]) if len(p) == 1 else float(sum(logps)), log_probs)
                   for word, p, logps in zip(words, pieces, longer))
    top = _top(log_probs, top_k, lambda i: loaded.tokenizer.decode([int(i)]).strip(),
               lambda ids: [t.startswith("##") for t in loaded.tokenizer.convert_ids_to_tokens(ids)])
    return WordScores(loaded.name, loaded.source, int(log_probs.shape[0]), MASKED_APPROXIMATION, top, scores)


def next_word(loaded: models.LoadedModel, prompt: str, words: list[str], top_k: int,
              pieces: bool = False) -> WordScores:
    """A causal LM after the prompt: its top_k next tokens (Next token's own figures, at temperature 1) and each
    word's probability as what comes next, by the chain rule. With pieces: which top tokens start a longer word
    (one more batched pass: `continued`)."""
    prompt_ids, _ = lm.causal_ids(loaded, prompt, MAX_PROMPT_TOKENS)
    log_probs = log_softmax(lm.next_token_logits(loaded, prompt_ids))
    space = "" if prompt[-1:].isspace() else " "
    continuations = [word_ids(loaded, word, space) for word in words]
    longer = [(i, c) for i, c in enumerate(continuations) if len(c) > 1]
    rows = [tuple(prompt_ids + c) for _, c in longer]
    rests = dict(zip([i for i, _ in longer], lm.submit_many(loaded, "logprobs", rows, [len(r) for r in rows])
                     if rows else []))
    scores = []
    for i, (word, cont) in enumerate(zip(words, continuations)):
        log_p = float(log_probs[cont[0]])
        if i in rests:  # log P(t_2 … t_k | prompt, t_1): the teacher-forced pass's last k - 1 values
            log_p += float(np.sum(rests[i][len(prompt_ids):], dtype=np.float64))
        scores.append(_scored(loaded, word, cont, log_p, log_probs))
    top = _top(log_probs, top_k, lambda i: loaded.tokenizer.decode([int(i)]),
               lambda ids: continued(loaded, prompt_ids, ids) if pieces else [False] * len(ids))
    return WordScores(loaded.name, loaded.source, int(log_probs.shape[0]), CAUSAL_RULE, top, tuple(scores))
