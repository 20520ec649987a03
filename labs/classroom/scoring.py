"""The model's side of a class question: its own distribution (the lab's computation, by endpoint name) and
its probability of each word the class gave, all of them scored in one batch through the shared passes.

A word can be several tokens. For a causal LM its probability is exact, by the chain rule: P(w) = Π P(t_i |
prompt, t_1 … t_{i-1}), the first factor read from the same next-token pass as `/next_token`, the others
from one teacher-forced pass. A masked LM has no exact probability for a word of k pieces; LM Lab writes k
[MASK]s in place of the blank and scores the pieces left to right: P(w) ≈ Π P(piece_i | the sentence with
pieces 1 … i-1 filled in and pieces i … k masked). A one-piece word's probability is exactly the one
`/fill_mask` gives at the blank.

A word's rank is how many next tokens (or tokens at the blank) the model finds more likely, plus one: for a
one-token word, its rank among the tokens; for a longer word, where its probability would stand among them."""

from __future__ import annotations

import numpy as np

from labs.classroom import answers
from labs.core.errors import BadInput
from labs.core.models import models
from labs.core.work import lm, services

MAX_PROMPT_TOKENS = 256  # as the labs read a prompt: the end of a longer one is kept
MAX_SCORED = 300  # distinct answers scored per question (a class of 100 gives at most 100)
MASKED_APPROXIMATION = ("A masked LM has no exact probability for a word of several pieces: the blank becomes "
                        "as many [MASK]s as the word has pieces, scored left to right (each piece given the "
                        "pieces before it). A one-piece word's probability is exactly the lab's.")
CAUSAL_RULE = ("Exact, by the chain rule: a word of several tokens has the product of its tokens' "
               "probabilities, each given the prompt and the tokens before it.")


def log_softmax(logits: np.ndarray) -> np.ndarray:
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max()
    return z - np.log(np.exp(z).sum())


def rank_of(log_probs: np.ndarray, log_p: float) -> int:
    """1 + the number of tokens more likely than log_p (ties count in the word's favour)."""
    return int((log_probs > log_p + 1e-12).sum()) + 1


# ------------------------------------------------------------------ masked LM (Fill in the blank)


def blank_ids(loaded: models.LoadedModel, text: str) -> tuple[list[int], int, str]:
    """The sentence's ids with its one blank as the mask token (as Fill in the blank encodes it), the blank's
    position, and what stands before the blank (a space or not: BPE vocabularies tell them apart)."""
    tokenizer = loaded.tokenizer
    matches = list(lm.BLANK_PATTERN.finditer(text))
    if len(matches) != 1:
        raise BadInput(f"A class question has exactly one blank; this sentence has {len(matches)}. "
                       "Write one [MASK] (or ___) where the class should guess a word.")
    ids = lm.check_length(tokenizer(lm.with_mask_token(text, tokenizer.mask_token))["input_ids"],
                          min(MAX_PROMPT_TOKENS, loaded.max_tokens))
    before = text[:matches[0].start()]
    return ids, ids.index(tokenizer.mask_token_id), " " if before[-1:].isspace() else ""


def word_pieces(loaded: models.LoadedModel, word: str, space: str) -> list[int]:
    ids = loaded.tokenizer(space + word, add_special_tokens=False)["input_ids"]
    if not ids:
        raise BadInput(f"“{word}” has no tokens in {loaded.name}'s vocabulary.")
    return ids


def masked_word_logprobs(loaded: models.LoadedModel, ids: list[int], blank: int,
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


def score_fill_mask(text: str, model: str, top_k: int, keys: list[tuple[str, str]]) -> dict:
    """The model's top-k at the blank (the `/fill_mask` endpoint's own JSON) and its probability of each class
    answer (key, the form to score)."""
    lab = services.get("fill_mask")(text, model, top_k)
    loaded = models.load(lab["model"], "masked")
    ids, blank, space = blank_ids(loaded, text)
    at_blank = log_softmax(lm.mlm_logits(loaded, ids, [blank])[0])  # the pass /fill_mask just ran: cached
    pieces = [word_pieces(loaded, form, space) for _, form in keys]
    single = [p if len(p) > 1 else [] for p in pieces]  # one piece: read off the blank, exactly the lab's
    multi = masked_word_logprobs(loaded, ids, blank, single)
    scored = []
    for (key, _), word_ids, logps in zip(keys, pieces, multi):
        log_p = float(at_blank[word_ids[0]]) if len(word_ids) == 1 else float(sum(logps))
        scored.append(_scored(key, log_p, at_blank, loaded, word_ids))
    top = [{"answer": p["token"], "token_id": p["token_id"], "prob": p["prob"]}
           for p in lab["masks"][0]["predictions"]]
    return {"model": lab["model"], "source": lab["source"], "vocab_size": int(at_blank.shape[0]),
            "approximation": MASKED_APPROXIMATION, "model_top": top, "scores": scored}


# ------------------------------------------------------------------ causal LM (Next token)


def score_next_token(prompt: str, model: str, top_k: int, keys: list[tuple[str, str]]) -> dict:
    """The model's most likely next tokens (the `/next_token` endpoint's own JSON, at temperature 1) and its
    probability of each class answer as the next word(s), by the chain rule."""
    lab = services.get("next_token")(prompt, model, 1.0, 0, 1.0)
    loaded = models.load(lab["model"], "causal")
    prompt_ids, _ = lm.causal_ids(loaded, prompt, MAX_PROMPT_TOKENS)
    first = log_softmax(lm.next_token_logits(loaded, prompt_ids))  # the pass /next_token just ran: cached
    space = "" if prompt[-1:].isspace() else " "
    continuations = [word_pieces(loaded, form, space) for _, form in keys]
    longer = [(i, c) for i, c in enumerate(continuations) if len(c) > 1]
    rows = [tuple(prompt_ids + c) for _, c in longer]
    rests = dict(zip([i for i, _ in longer], lm.submit_many(loaded, "logprobs", rows, [len(r) for r in rows])
                     if rows else []))
    scored = []
    for i, ((key, _), cont) in enumerate(zip(keys, continuations)):
        log_p = float(first[cont[0]])
        if i in rests:  # log P(t_2 … t_k | prompt, t_1): the teacher-forced pass's last k - 1 values
            log_p += float(np.sum(rests[i][len(prompt_ids):], dtype=np.float64))
        scored.append(_scored(key, log_p, first, loaded, cont))
    top = [{"answer": e["token"], "token_id": e["token_id"], "prob": e["prob"]}
           for e in lab["distribution"][:top_k]]
    return {"model": lab["model"], "source": lab["source"], "vocab_size": int(first.shape[0]),
            "approximation": CAUSAL_RULE, "model_top": top, "scores": scored}


def _scored(key: str, log_p: float, log_probs: np.ndarray, loaded: models.LoadedModel, ids: list[int]) -> dict:
    return {"key": key, "model_logprob": log_p, "model_prob": float(np.exp(log_p)),
            "model_rank": rank_of(log_probs, log_p),
            "pieces": [str(t) for t in loaded.tokenizer.convert_ids_to_tokens(list(ids))]}


SCORERS = {"fill_mask": score_fill_mask, "next_token": score_next_token}


def score(kind: str, text: str, model: str, top_k: int, tally: list[tuple[str, str, int]]) -> dict:
    """The model's side of a word question: its top-k and its probability of the class's (most given)
    distinct answers. `tally` is [(key, form, count)], most given first."""
    keys = [(key, form) for key, form, _ in tally[:MAX_SCORED]]
    return SCORERS[kind](text, model, top_k, keys)


def model_key(token: str) -> str:
    """A model's token as a class answer is counted (" Paris" and "paris." are the answer "paris")."""
    stripped = token.strip().strip(answers.EDGE_PUNCTUATION)
    return answers.key_of(stripped or token.strip())
