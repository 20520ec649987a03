"""Pre-training, why 15 %? How much a trained masked LM recovers when more and more of a sentence is
masked: top-1 accuracy and MLM loss at each mask rate, over several seeds, every blank predicted at
once (as in training), with single tokens or contiguous spans (SpanBERT) at the same budget.

What this measures: what an already trained BERT can recover at each rate; not the pre-training
experiment itself (that would mean pre-training a BERT per rate). The published studies go beside it.

preprocess (`mask_positions`, `masked_copies`) → forward (the shared batched "mlm" pass: every copy of
every sentence at every rate queued together) → postprocess (accuracy and loss per rate and seed)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labs.core.errors import BadInput, check_bool, check_int, check_number, check_text
from labs.core.models import models
from labs.core.work import lm
from labs.core.work.jobs import JOBS
from labs.pretraining import passages

DEFAULT_RATES = (5, 10, 15, 20, 30, 40, 50, 80)  # percent
MAX_RATES, MAX_SEEDS, MAX_OWN_SENTENCES, MAX_TOKENS = 10, 5, 10, 64
SPAN_P, SPAN_MAX = 0.2, 10  # SpanBERT's span lengths: geometric(0.2), at most 10 (mean 3.8)
PUBLISHED = (
    "Devlin et al. 2019 (BERT): 15 % of tokens chosen, 80 / 10 / 10.",
    "Raffel et al. 2020 (T5), Table 4: corruption rates 10 / 15 / 25 / 50 % → GLUE 82.82 / 83.28 / 83.00 / 81.27.",
    "Raffel et al. 2020 (T5), Table 5: mean span lengths 2 / 3 / 5 / 10 → GLUE 83.54 / 83.49 / 83.40 / 82.85.",
    "Wettig et al. 2023: masking 40 % beats 15 % for BERT-large (MNLI 84.5 vs 84.2).")
HONEST = ("This measures what a trained BERT can recover at each rate (every blank a [MASK], all predicted at "
          "once), not what pre-training at that rate would give: that needs a BERT pre-trained per rate, "
          "as in the studies beside it.")


def check_rates(rates) -> list[float]:
    """Mask rates in percent: a list of numbers or a comma-separated text, each above 0 and at most 95."""
    if isinstance(rates, str):
        rates = [r for r in rates.replace(";", ",").split(",") if r.strip()]
    if not isinstance(rates, (list, tuple)) or not rates:
        raise BadInput("Give the mask rates in percent, for example 5, 15, 40, 80.")
    if len(rates) > MAX_RATES:
        raise BadInput(f"Give at most {MAX_RATES} mask rates, not {len(rates)}.")
    return sorted({check_number(r, "A mask rate", 0, 95, low_open=True, hint=" (percent)") for r in rates})


def mask_positions(candidates: list[int], rate: float, span: bool, rng: np.random.Generator) -> list[int]:
    """round(rate % of the candidates) positions (at least one): single tokens drawn without
    replacement, or contiguous spans of geometric length (SpanBERT) until the same budget is met."""
    budget = min(max(int(round(len(candidates) * rate / 100)), 1), len(candidates))
    if not span:
        return sorted(int(p) for p in rng.choice(candidates, size=budget, replace=False))
    chosen: set[int] = set()
    while len(chosen) < budget:
        length = min(int(rng.geometric(SPAN_P)), SPAN_MAX, budget - len(chosen))
        start = int(rng.integers(0, len(candidates) - length + 1))
        for p in candidates[start:start + length]:
            if len(chosen) < budget:
                chosen.add(p)
    return sorted(chosen)


def encode_sentences(loaded: models.LoadedModel, sentences: list[str]) -> list[tuple[list[int], list[int]]]:
    """(ids, the positions that may be masked: not [CLS]/[SEP]) per sentence."""
    out = []
    for sentence in sentences:
        ids = loaded.tokenizer(sentence, truncation=True, max_length=MAX_TOKENS)["input_ids"]
        special = loaded.tokenizer.get_special_tokens_mask(ids, already_has_special_tokens=True)
        out.append((ids, [i for i, s in enumerate(special) if not s]))
    return out


def masked_copies(loaded: models.LoadedModel, encoded, rates, span: bool, seeds: int) -> list[tuple]:
    """(rate, seed, sentence index, original ids, masked ids, positions) for every point of the curve.
    Each (seed, sentence, rate) has its own generator, so a point never depends on the others."""
    copies = []
    for rate in rates:
        for seed in range(seeds):
            for j, (ids, candidates) in enumerate(encoded):
                rng = np.random.default_rng([seed, j, int(round(rate * 1000)), int(span)])
                positions = mask_positions(candidates, rate, span, rng)
                masked = list(ids)
                for p in positions:
                    masked[p] = loaded.tokenizer.mask_token_id
                copies.append((rate, seed, j, ids, masked, positions))
    return copies


@dataclass
class MaskRateCurve:
    model: str
    span: bool
    sentences: list[str]
    seeds: int
    points: list[dict]
    passes: int

    def to_json(self) -> dict:
        return {"model": self.model, "span": self.span, "sentences": self.sentences, "seeds": self.seeds,
                "rates": [p["rate"] for p in self.points], "points": self.points, "passes": self.passes,
                "note": HONEST, "published": list(PUBLISHED)}


def score(copies: list[tuple], logits: list[np.ndarray]) -> list[dict]:
    """Accuracy (top-1 = original) and mean loss (−log P(original)) per rate, and per rate and seed."""
    rows: dict[float, dict[int, list]] = {}
    for (rate, seed, _, ids, _, positions), row in zip(copies, logits):
        logp = np.log(lm.softmax(row))  # [positions, vocab]
        originals = [ids[p] for p in positions]
        hits = (row.argmax(axis=-1) == np.array(originals)).tolist()
        losses = [-float(logp[k, t]) for k, t in enumerate(originals)]
        rows.setdefault(rate, {}).setdefault(seed, []).extend(zip(hits, losses))
    points = []
    for rate, by_seed in rows.items():
        every = [x for seed_rows in by_seed.values() for x in seed_rows]
        points.append({"rate": rate, "accuracy": float(np.mean([h for h, _ in every])),
                       "loss": float(np.mean([l for _, l in every])), "masked_tokens": len(every),
                       "by_seed": [{"seed": s, "accuracy": float(np.mean([h for h, _ in r])),
                                    "loss": float(np.mean([l for _, l in r]))} for s, r in by_seed.items()]})
    return points


def curve(loaded: models.LoadedModel, text="", rates=DEFAULT_RATES, span=False, seeds=2) -> MaskRateCurve:
    """The curve on the built-in sentences plus the student's own (one per sentence of `text`)."""
    rates, span = check_rates(rates), check_bool(span, "Spans")
    seeds = check_int(seeds, "The number of seeds", 1, MAX_SEEDS)
    if loaded.tokenizer.mask_token_id is None:
        raise BadInput(f"'{loaded.name}' has no [MASK] token; pick a masked LM such as bert-base-uncased.")
    own = passages.split_sentences(check_text(text or "", "The cat sat on the mat.", allow_empty=True,
                                              what="sentences"))
    if len(own) > MAX_OWN_SENTENCES:
        raise BadInput(f"Add at most {MAX_OWN_SENTENCES} sentences of your own, not {len(own)}.")
    sentences = passages.mask_rate_sentences() + own
    return JOBS.shared("mask_rate", (loaded.name, tuple(rates), span, seeds, tuple(sentences)),
                       lambda: _curve(loaded, sentences, rates, span, seeds))


def _curve(loaded: models.LoadedModel, sentences: list[str], rates, span: bool, seeds: int) -> MaskRateCurve:
    copies = masked_copies(loaded, encode_sentences(loaded, sentences), rates, span, seeds)
    items = [(tuple(masked), tuple(positions)) for _, _, _, _, masked, positions in copies]
    logits = lm.submit_many(loaded, "mlm", items, [len(i) for i, _ in items])
    return MaskRateCurve(loaded.name, span, sentences, seeds, score(copies, logits), len(copies))


def mask_rate_json(text: str, model: str, rates: str = "5, 10, 15, 20, 30, 40, 50, 80", span: bool = False,
                   seeds: int = 2) -> dict:
    """The `mask_rate` API: accuracy and loss per mask rate (percent: comma-separated, or a list of numbers)."""
    check_rates(rates)
    return curve(models.load(model, "masked"), text, rates, span, seeds).to_json()
