"""Fill in the blank, the computation: what a masked LM predicts for each blank, how sure it is,
and what a causal LM predicts from the left context alone. Also BERT's pre-training corruption
(15 % chosen; 80 % [MASK], 10 % random, 10 % kept) with the real MLM loss (exercise B1)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from labs.core.errors import BadInput, check_int, check_text
from labs.core.models import models
from labs.core.work import lm, word_scores

MAX_BLANKS = 10
MAX_TOKENS = 256  # a long paragraph: BERT reads 512, but half the length is a quarter of the attention
TOP_K_RANGE = (1, 20)
# The first example has words on the left, so the left-only panel has something to go on (SmolLM2:
# "coffee", p ≈ 0.64), and words on the right that a masked LM reads and a causal LM cannot ("lemon
# and honey": tea). The last one leaves the causal LM only "The" (SmolLM2: "-", p ≈ 0.42).
EXAMPLE = "Every morning I drink a cup of [MASK] with lemon and honey."
EXAMPLES = [
    EXAMPLE,
    "I went to the bank to [MASK] some money.",
    "We sat on the river bank and watched the [MASK].",
    "Paris is the [MASK] of France.",
    "The doctor told the [MASK] that [MASK] needed rest.",
    "The [MASK] sat on the mat.",
]
SIMULATOR_EXAMPLE = "The quick brown fox jumps over the lazy dog near the river bank today"
DOWNLOAD_HINT = ("No masked-LM weights (BERT) are available here, so predictions are off. While online, run "
                 "`./lab download` once; the tokens, the masking simulator and the left-only "
                 "predictions below still work.")


@dataclass
class Prediction:
    token: str
    token_id: int
    prob: float


@dataclass
class Blank:
    index: int  # position in `tokens`
    predictions: list[Prediction]


@dataclass
class FillResult:
    model: str
    source: str
    tokens: list[str]
    token_ids: list[int]
    special: list[bool]
    mask_id: int
    masks: list[Blank]
    filled: str
    logits_at_blanks: np.ndarray = field(repr=False, default=None)  # [blanks, vocab]

    def to_json(self) -> dict:
        return {"model": self.model, "source": self.source, "tokens": self.tokens,
                "masks": [{"index": b.index, "predictions": [vars(p) for p in b.predictions]} for b in self.masks]}


def check_sentence(text) -> str:
    return check_text(text, EXAMPLE, what="sentence")


def check_top_k(top_k) -> int:
    return check_int(top_k, "Top-k", *TOP_K_RANGE)


def masked_lm(model) -> models.LoadedModel:
    """Resolve a model name once, at the edge (a handler, the API), as a masked LM with a mask token.
    The compute functions below take what this returns; a LoadedModel that already is one passes
    through without another look-up (so a name still works there too, for scripts)."""
    if isinstance(model, models.LoadedModel) and model.family == "masked" and model.tokenizer.mask_token_id is not None:
        return model
    loaded = models.load(model, "masked")
    if loaded.tokenizer.mask_token_id is None:
        raise BadInput(f"'{loaded.name}' has no mask token; pick a masked LM such as bert-base-uncased.")
    return loaded


def causal_lm(model) -> models.LoadedModel:
    """Resolve a model name once, at the edge, as a causal LM (for the left-only panel); a loaded
    causal LM passes through."""
    if isinstance(model, models.LoadedModel) and model.family == "causal":
        return model
    return models.load(model, "causal")


def encode(loaded: models.LoadedModel, text: str) -> tuple[list[int], list[int]]:
    """Token ids with the blanks mapped to the mask token, and the blanks' positions; refuse what
    the model cannot take."""
    ids, blanks = word_scores.blank_ids(loaded, check_sentence(text), MAX_TOKENS)
    if not blanks:
        raise BadInput("There is no blank in your text. Write [MASK] (or ___) where a word is missing, "
                       f"for example: {EXAMPLE}")
    if len(blanks) > MAX_BLANKS:
        raise BadInput(f"Your text has {len(blanks)} blanks; use at most {MAX_BLANKS}.")
    return ids, blanks


def predict(loaded: models.LoadedModel, text, top_k=5) -> FillResult:
    """The top-k tokens and probabilities for every blank, and the sentence with the best guesses.
    `loaded`: what masked_lm returns."""
    top_k = check_top_k(top_k)
    loaded = masked_lm(loaded)
    ids, blanks = encode(loaded, text)
    logits = lm.mlm_logits(loaded, ids, blanks)
    tokenizer = loaded.tokenizer
    result_blanks = [Blank(pos, [Prediction(tokenizer.decode([i]).strip(), i, p) for i, p in lm.top_k(row, top_k)])
                     for pos, row in zip(blanks, lm.softmax(logits))]
    filled = list(ids)
    for blank in result_blanks:
        filled[blank.index] = blank.predictions[0].token_id
    special = tokenizer.get_special_tokens_mask(ids, already_has_special_tokens=True)
    return FillResult(loaded.name, loaded.source, models.readable_tokens(tokenizer, ids), ids, special,
                      tokenizer.mask_token_id, result_blanks, tokenizer.decode(filled, skip_special_tokens=True),
                      logits)


def fill_mask_json(text: str, model: str, top_k: int = 5) -> dict:
    """The `fill_mask` API: every blank's top-k predictions, best first."""
    top_k = check_top_k(top_k)  # a bad top-k is refused before the model is looked up
    return predict(masked_lm(model), text, top_k).to_json()


def guess(loaded: models.LoadedModel, text, blank_number, word) -> dict:
    """How likely the student's word is at blank number `blank_number` (1-based), and its rank.
    `loaded`: what masked_lm returns."""
    word = check_text(word, "dog", what="word")
    loaded = masked_lm(loaded)
    result = predict(loaded, text, 1)
    number = check_int(blank_number, "The blank number", 1)
    if number > len(result.masks):
        raise BadInput(f"Your text has {len(result.masks)} blank(s); choose a number from 1 to {len(result.masks)}.")
    tokenizer = loaded.tokenizer
    pieces = tokenizer.tokenize(word)
    probs = lm.softmax(result.logits_at_blanks[number - 1])
    first_id = tokenizer.convert_tokens_to_ids(pieces[0])
    return {"word": word, "pieces": pieces, "single_token": len(pieces) == 1, "token_id": int(first_id),
            "prob": float(probs[first_id]), "rank": int((probs > probs[first_id]).sum()) + 1,
            "vocab_size": int(probs.shape[0])}


def left_context(text) -> str:
    """The words left of the first blank: all a causal LM would see."""
    text = check_sentence(text)
    match = lm.BLANK_PATTERN.search(text)
    if match is None:
        raise BadInput("There is no blank in your text. Write [MASK] where a word is missing.")
    return text[:match.start()].rstrip()


def left_only_predictions(loaded: models.LoadedModel, text, top_k=5) -> dict:
    """What a causal LM predicts at the first blank when it sees only the words to its left.
    `loaded`: what causal_lm returns."""
    top_k = check_top_k(top_k)
    context = left_context(text)
    loaded = causal_lm(loaded)
    ids, _ = lm.causal_ids(loaded, context, MAX_TOKENS)
    probs = lm.softmax(lm.next_token_logits(loaded, ids))
    return {"context": context, "model": loaded.name, "predictions": [
        {"token": loaded.tokenizer.decode([i]), "token_id": i, "prob": p} for i, p in lm.top_k(probs, top_k)]}


# -- the masking simulator (exercise B1)

MASK_RATE, REPLACE_WITH_MASK, REPLACE_WITH_RANDOM = 0.15, 0.8, 0.5  # the 0.5 is of the remaining 20 %


def corrupt(token_ids: list[int], special: list[bool], mask_id: int, vocab_size: int, seed: int) -> list[dict]:
    """BERT's corruption, as transformers' DataCollatorForLanguageModeling does it: each non-special
    token is chosen with probability 15 %; a chosen token becomes [MASK] with probability 80 %,
    a random token with 10 %, and stays itself with 10 %."""
    rng = np.random.default_rng(seed)
    out = []
    for pos, (tid, is_special) in enumerate(zip(token_ids, special)):
        entry = {"position": pos, "original": int(tid), "chosen": False, "action": "", "new": int(tid)}
        if not is_special and rng.random() < MASK_RATE:
            entry["chosen"] = True
            draw = rng.random()
            if draw < REPLACE_WITH_MASK:
                entry.update(action="mask", new=int(mask_id))
            elif draw < REPLACE_WITH_MASK + (1 - REPLACE_WITH_MASK) * REPLACE_WITH_RANDOM:
                entry.update(action="random", new=int(rng.integers(vocab_size)))
            else:
                entry.update(action="keep")
        out.append(entry)
    return out


def corruption_frequencies(token_ids, special, mask_id, vocab_size, seed: int, draws: int = 1000) -> dict:
    """Over many draws: the share of tokens chosen (→ 15 %), and of the chosen: mask / random / keep
    (→ 80 / 10 / 10)."""
    counts = {"tokens": 0, "chosen": 0, "mask": 0, "random": 0, "keep": 0}
    for d in range(draws):
        for e in corrupt(token_ids, special, mask_id, vocab_size, seed * 100_003 + d):
            if special[e["position"]]:
                continue
            counts["tokens"] += 1
            if e["chosen"]:
                counts["chosen"] += 1
                counts[e["action"]] += 1
    chosen = max(counts["chosen"], 1)
    return {"draws": draws, "chosen_rate": counts["chosen"] / max(counts["tokens"], 1),
            "mask": counts["mask"] / chosen, "random": counts["random"] / chosen, "keep": counts["keep"] / chosen,
            "counts": counts}


def masked_lm_or_vocab(model) -> tuple[models.LoadedModel, bool]:
    """The masked LM (a name is resolved here, once), or the offline MiniLM (the same uncased
    WordPiece vocabulary as bert-base-uncased, but no vocabulary head) when no masked LM can be
    loaded. The simulator and the tokens view take what this returns."""
    if model:
        try:
            return masked_lm(model), True
        except (models.ModelUnavailable, BadInput):
            pass
    return models.load(models.MINILM_NAME), False


def simulate(model_name, text, seed) -> dict:
    """One corruption of the sentence, and the MLM loss −log P(original) at each chosen position
    (when a masked LM is available), summed as in the lecture's formula."""
    seed = check_int(seed, "The seed", 0, 2**32 - 1)
    loaded, have_model = masked_lm_or_vocab(model_name)
    tokenizer = loaded.tokenizer
    ids = tokenizer(check_sentence(text), truncation=True, max_length=128)["input_ids"]
    special = [bool(s) for s in tokenizer.get_special_tokens_mask(ids, already_has_special_tokens=True)]
    entries = corrupt(ids, special, tokenizer.mask_token_id, len(tokenizer), seed)
    chosen = [e for e in entries if e["chosen"]]
    names = models.readable_tokens(tokenizer, ids)
    for e in entries:
        e["token"] = names[e["position"]]
        e["becomes"] = tokenizer.convert_ids_to_tokens(e["new"])
    loss = None
    if have_model and chosen:
        logits = lm.mlm_logits(loaded, [e["new"] for e in entries], [e["position"] for e in chosen])
        log_probs = np.log(lm.softmax(logits))
        for e, row in zip(chosen, log_probs):
            e["loss"] = float(-row[e["original"]])
        loss = float(sum(e["loss"] for e in chosen))
    freqs = corruption_frequencies(ids, special, tokenizer.mask_token_id, len(tokenizer), seed)
    return {"seed": seed, "entries": entries, "loss": loss, "have_model": have_model, "frequencies": freqs,
            "model": loaded.name if have_model else None}


def tokens_only(model, text) -> list[tuple[str, int, str]]:
    """Offline, with no masked LM: the sentence as uncased WordPiece tokens, blanks marked (token_chips)."""
    loaded, _ = masked_lm_or_vocab(model)
    tokenizer = loaded.tokenizer
    ids = tokenizer(lm.with_mask_token(check_sentence(text), tokenizer.mask_token))["input_ids"]
    special = tokenizer.get_special_tokens_mask(ids, already_has_special_tokens=True)
    return token_chips(models.readable_tokens(tokenizer, ids), ids, special, tokenizer.mask_token_id)


def token_chips(tokens: list[str], ids: list[int], special: list, mask_id: int) -> list[tuple[str, int, str]]:
    """(token, id, kind) for the tokens view, one per token; kind is "blank", "special", "piece" (a ##
    word piece) or "" (a word)."""
    return [(t, int(i), "blank" if i == mask_id else "special" if s else "piece" if t.startswith("##") else "")
            for t, i, s in zip(tokens, ids, special)]
