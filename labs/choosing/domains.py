"""Choosing a model, domain shift: one causal LM's perplexity on short texts written for LM Lab from
several domains (news, conversation, legal, biomedical, code, social media), and on the student's own
text. A model is most at home on text like its pre-training data: the further a domain is from it, the
higher the perplexity (the more surprised the model is per token).

Perplexity = exp(mean negative log-probability of each token given those before it), the same number as
exp(model(ids, labels=ids).loss) (test); the domain's figure pools every token of its texts. A masked LM
reads both sides, so it gets each token masked in turn instead: its pseudo-perplexity (Salazar et al. 2020:
exp of the mean −ln P(token | every other token)) and its top-1 accuracy at the masked token."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

from labs.core.errors import BadInput, check_text
from labs.core.models import models
from labs.core.work import lm
from labs.core.work.jobs import JOBS

DATA = Path(__file__).resolve().parents[2] / "assets" / "domains.txt"
FAMILIES = ("causal", "masked")
MAX_TOKENS = 256
EXAMPLE = "The students trained a small language model on their laptops."


@lru_cache(maxsize=1)
def domain_texts() -> dict[str, tuple[str, ...]]:
    """{domain: texts} from assets/domains.txt ("# name" starts a domain; other "#" lines are comments)."""
    domains: dict[str, list[str]] = {}
    current = None
    for line in DATA.read_text().splitlines():
        if line.startswith("# ") and ":" not in line and len(line.split()) <= 3:
            current = line[2:].strip()
            domains[current] = []
        elif line.strip() and not line.startswith("#") and current:
            domains[current].append(line.strip())
    return {name: tuple(texts) for name, texts in domains.items()}


def token_losses(loaded: models.LoadedModel, texts: list[str]) -> list:
    """Each text's per-token negative log-probabilities (the first token has none), batched."""
    rows = []
    for text in texts:
        ids = loaded.tokenizer(text)["input_ids"]
        bos = loaded.tokenizer.bos_token_id
        if len(ids) < 2 and bos is not None:
            ids = [bos] + ids
        rows.append(lm.check_length(ids, min(MAX_TOKENS, loaded.max_tokens), "Your text"))
    logprobs = lm.submit_many(loaded, "logprobs", [tuple(r) for r in rows], [len(r) for r in rows])
    return [-lp.astype(float) for lp in logprobs]


def masked_losses(loaded: models.LoadedModel, texts: list[str]) -> list[tuple]:
    """Each text's (−ln P(token | the rest), top-1 correct?) per token, every token masked in turn (one
    [MASK] per input, through the shared batched "mlm" pass); special tokens are not scored."""
    import numpy as np

    tokenizer, items, targets = loaded.tokenizer, [], []
    special = set(tokenizer.all_special_ids)
    for i, text in enumerate(texts):
        ids = lm.check_length(tokenizer(text)["input_ids"], min(MAX_TOKENS, loaded.max_tokens), "Your text")
        for position, token in enumerate(ids):
            if token not in special:
                items.append((tuple(ids[:position]) + (tokenizer.mask_token_id,) + tuple(ids[position + 1:]),
                              (position,)))
                targets.append((i, token))
    logits = lm.submit_many(loaded, "mlm", items, [len(ids) for ids, _ in items])
    scored = [([], []) for _ in texts]
    for (i, token), row in zip(targets, logits):
        z = row[0].astype(np.float64)
        scored[i][0].append(float(np.log(np.exp(z - z.max()).sum()) + z.max() - z[token]))
        scored[i][1].append(bool(z.argmax() == token))
    return [(np.array(losses), np.array(correct)) for losses, correct in scored]


def scored_texts(loaded: models.LoadedModel, texts: list[str]) -> list[tuple]:
    """(losses, correct or None) per text: next-token for a causal LM, each token masked for a masked LM."""
    if loaded.family == "masked":
        return masked_losses(loaded, texts)
    return [(row, None) for row in token_losses(loaded, texts)]


@dataclass
class DomainResult:
    model: str
    source: str
    metric: str = "perplexity"  # or "pseudo-perplexity" (a masked LM)
    domains: list = field(default_factory=list)  # [{domain, perplexity, tokens, accuracy, texts: [{text, perplexity}]}]
    yours: dict | None = None  # {text, perplexity, tokens, accuracy}

    def to_json(self) -> dict:
        return asdict(self)


def domain_shift(loaded: models.LoadedModel, text: str = "") -> DomainResult:
    """Perplexity per built-in domain (and per text), and on the student's text when there is one."""
    models.check_family(loaded.choice, FAMILIES)
    text = check_text(text, EXAMPLE, allow_empty=True)
    return JOBS.shared("domain_shift", (loaded.name, text), lambda: _domain_shift(loaded, text))


def _domain_shift(loaded: models.LoadedModel, text: str) -> DomainResult:
    masked = loaded.family == "masked"
    result = DomainResult(loaded.name, loaded.source, "pseudo-perplexity" if masked else "perplexity")
    for domain, texts in domain_texts().items():
        scored = scored_texts(loaded, list(texts))
        pooled = [x for row, _ in scored for x in row]
        hits = [x for _, correct in scored if correct is not None for x in correct]
        result.domains.append({"domain": domain, "perplexity": math.exp(sum(pooled) / len(pooled)),
                               "tokens": len(pooled), "accuracy": sum(hits) / len(hits) if masked else None,
                               "texts": [{"text": t, "perplexity": math.exp(row.mean())}
                                         for t, (row, _) in zip(texts, scored)]})
    if text:
        row, correct = scored_texts(loaded, [text])[0]
        if not len(row):
            raise BadInput("Your text has no word to score (only special tokens such as [MASK]): type a sentence.")
        result.yours = {"text": text, "perplexity": math.exp(row.mean()), "tokens": len(row) + (0 if masked else 1),
                        "accuracy": float(correct.mean()) if masked else None}
    return result


def domain_shift_api(model: str, text: str = "") -> dict:
    """API /domain_shift: perplexity (a masked LM: pseudo-perplexity and accuracy) per domain, and on the text."""
    return domain_shift(models.load(model, *FAMILIES), text).to_json()
