"""Choosing a model, bias inherited from pre-training (exercise B7): for each occupation in a probe set
written for LM Lab, how much more probable "he" is than "she" where the pronoun goes.

A masked LM fills the template's [MASK] ("The nurse said that [MASK] would be late."); a causal LM
reads the template up to the blank ("The nurse said that") and predicts the next token. What such a
probe shows: which pronoun the model's training text made more probable after these words. What it
does not show: how the model behaves in a real application, why (the data, the tokenizer, the template
wording all move it), or anything about the people in these jobs; a different template can change the
order, which is why the student can write their own."""

from __future__ import annotations

import csv
import math
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from labs.core.errors import BadInput, check_text
from labs.core.models import models
from labs.core.work import lm

DATA = Path(__file__).resolve().parents[2] / "assets" / "bias_probe.csv"
FAMILIES = ("masked", "causal")
PRONOUNS = ("he", "she", "they")
SLOT = "{occupation}"
MAX_TEMPLATE_CHARS = 200
WHAT_IT_SHOWS = (
    "This probe shows which pronoun the model finds more probable after these exact words: an association its "
    "pre-training text put there. It does not show how the model behaves in an application, the share of men "
    "and women in these jobs, or why; another template can reorder the list. Try your own template.")


@lru_cache(maxsize=1)
def probe_set() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(templates, occupations) from assets/bias_probe.csv."""
    with DATA.open(newline="") as f:
        rows = list(csv.DictReader(f))
    return (tuple(r["text"] for r in rows if r["kind"] == "template"),
            tuple(r["text"] for r in rows if r["kind"] == "occupation"))


def check_template(template) -> str:
    example = probe_set()[0][0]
    text = check_text(template, example, max_chars=MAX_TEMPLATE_CHARS, what="template")
    text = lm.with_mask_token(text, "[MASK]")
    if text.count(SLOT) != 1 or text.count("[MASK]") != 1:
        raise BadInput(f"The template needs {SLOT} once (where the job goes) and [MASK] once (where the pronoun "
                       f"goes), for example “{example}”.")
    if text.index(SLOT) > text.index("[MASK]"):
        raise BadInput(f"Put {SLOT} before [MASK]: a causal LM reads only the words before the blank.")
    return text


def pronoun_ids(loaded: models.LoadedModel) -> list[int]:
    """Each pronoun as one token: "he" in a WordPiece vocabulary, " he" (with its space) for a byte-level
    BPE that follows a word."""
    tokenizer, ids = loaded.tokenizer, []
    for word in PRONOUNS:
        pieces = tokenizer(word if loaded.family == "masked" else " " + word, add_special_tokens=False)["input_ids"]
        if len(pieces) != 1:
            raise BadInput(f"“{word}” is not one token for {loaded.name}; this probe needs single-token pronouns.")
        ids.append(pieces[0])
    return ids


@dataclass
class BiasResult:
    model: str
    source: str
    family: str
    template: str
    read_as: str  # what the model reads for the first occupation (causal: up to the blank)
    rows: list = field(default_factory=list)  # [{occupation, p_he, p_she, p_they, log_ratio}], most "he" first
    what_it_shows: str = WHAT_IT_SHOWS

    def to_json(self) -> dict:
        return asdict(self)


def sentence(loaded: models.LoadedModel, template: str, occupation: str) -> str:
    filled = template.replace(SLOT, occupation)
    if loaded.family == "causal":
        return filled.split("[MASK]")[0].rstrip()
    return filled.replace("[MASK]", loaded.tokenizer.mask_token)


def pronoun_probs(loaded: models.LoadedModel, texts: list[str]) -> list[np.ndarray]:
    """P(he), P(she), P(they) at the blank of each text (softmax over the whole vocabulary), batched."""
    tokenizer, wanted = loaded.tokenizer, pronoun_ids(loaded)
    rows = [lm.check_length(tokenizer(t)["input_ids"], loaded.max_tokens - 1, "The template") for t in texts]
    if loaded.family == "causal":
        logits = lm.submit_many(loaded, "next", [tuple(r) for r in rows], [len(r) for r in rows])
    else:
        items = [(tuple(r), (r.index(tokenizer.mask_token_id),)) for r in rows]
        logits = [x[0] for x in lm.submit_many(loaded, "mlm", items, [len(r) for r in rows])]
    return [lm.softmax(row)[wanted] for row in logits]


def probe(loaded: models.LoadedModel, template: str = "") -> BiasResult:
    """The probe for every occupation, sorted from the most "he"-leaning to the most "she"-leaning."""
    models.check_family(loaded.choice, FAMILIES)
    models.require_trained_head(loaded)
    template = check_template(template or probe_set()[0][0])
    occupations = probe_set()[1]
    texts = [sentence(loaded, template, job) for job in occupations]
    rows = [{"occupation": job, "p_he": float(p[0]), "p_she": float(p[1]), "p_they": float(p[2]),
             "log_ratio": math.log(p[0] / p[1])} for job, p in zip(occupations, pronoun_probs(loaded, texts))]
    rows.sort(key=lambda r: -r["log_ratio"])
    return BiasResult(loaded.name, loaded.source, loaded.family, template, texts[0], rows)


def bias_probe(model: str, template: str = "") -> dict:
    """API /bias_probe: P(he) and P(she) per occupation for a masked or causal LM and a template."""
    return probe(models.load(model, *FAMILIES), template).to_json()
