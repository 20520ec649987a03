"""Choosing a model, domain shift: one causal LM's perplexity on short texts written for LM Lab from
several domains (news, conversation, legal, biomedical, code, social media), and on the student's own
text. A model is most at home on text like its pre-training data: the further a domain is from it, the
higher the perplexity (the more surprised the model is per token).

Perplexity = exp(mean negative log-probability of each token given those before it), the same number as
exp(model(ids, labels=ids).loss) (test); the domain's figure pools every token of its texts."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

from labs import lm, models
from labs.errors import check_text

DATA = Path(__file__).resolve().parents[2] / "assets" / "domains.txt"
FAMILIES = ("causal",)
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


@dataclass
class DomainResult:
    model: str
    source: str
    domains: list = field(default_factory=list)  # [{domain, perplexity, tokens, texts: [{text, perplexity}]}]
    yours: dict | None = None  # {text, perplexity, tokens}

    def to_json(self) -> dict:
        return asdict(self)


def domain_shift(loaded: models.LoadedModel, text: str = "") -> DomainResult:
    """Perplexity per built-in domain (and per text), and on the student's text when there is one."""
    models.check_family(loaded.choice, FAMILIES)
    text = check_text(text, EXAMPLE, allow_empty=True)
    result = DomainResult(loaded.name, loaded.source)
    for domain, texts in domain_texts().items():
        losses = token_losses(loaded, list(texts))
        pooled = [x for row in losses for x in row]
        result.domains.append({"domain": domain, "perplexity": math.exp(sum(pooled) / len(pooled)),
                               "tokens": len(pooled),
                               "texts": [{"text": t, "perplexity": math.exp(row.mean())} for t, row in zip(texts, losses)]})
    if text:
        row = token_losses(loaded, [text])[0]
        result.yours = {"text": text, "perplexity": math.exp(row.mean()), "tokens": len(row) + 1}
    return result


def domain_shift_api(model: str, text: str = "") -> dict:
    """API /domain_shift: perplexity per domain, and on the text given."""
    return domain_shift(models.load(model, *FAMILIES), text).to_json()
