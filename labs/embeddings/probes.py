"""Embeddings, what each layer knows: linear probes (Textbook 20.8.1; Tenney et al. 2019, Jawahar et al. 2019).
A logistic regression is trained on the frozen hidden states of one layer to read a property off a word's
vector; if a linear classifier can, the layer holds that property in a readable form. Repeated at every layer,
with held-out sentences and a majority-class baseline, it gives the picture the textbook draws (surface →
syntax → semantics, bottom to top) on the real model, or shows where it does not hold.

preprocess (`load_set`: the labelled set in assets/probes.tsv, written for LM Lab; `locate`: each word's
pieces through the tokenizer's character offsets) → forward (every sentence once through the lab's shared
hidden-states pass, `lm.hidden_states`) → postprocess (a word's vector is the mean of its pieces; at each layer,
4-fold cross-validation over sentences: each sentence is held out once, so the accuracy counts every example
once, on a probe that never saw its sentence; scikit-learn's StandardScaler + LogisticRegression)."""

from __future__ import annotations

import csv
import re
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from labs.core.errors import BadInput, check_name
from labs.core.models import models
from labs.core.ui import course_quotes
from labs.core.work import lm
from labs.core.work.jobs import JOBS

PROBES_FILE = Path(__file__).resolve().parents[2] / "assets" / "probes.tsv"
FAMILIES = ("encoder", "masked")  # models that read the whole sentence (BERT-like)
MAX_POSITION = 8  # the position probe: tokens 1..8 of every sentence
FOLDS = 4
# The course's words (Textbook 20.8.1): course_quotes' entries, checked under the section.
TEXTBOOK, SECTION = "003_4e137ff2e23b0b86.txt", "20.8.1 What Do Different Layers Capture?"
QUOTES = tuple(course_quotes.text(f"probes_{k}") for k in range(4))
BANDS = ("lower", "middle", "upper")


@dataclass(frozen=True)
class Probe:
    id: str
    name: str
    question: str  # what the classifier is asked, in a student's words
    kind: str  # surface / syntax / semantics
    band: str  # where the textbook puts it: lower / middle / upper
    why_band: str


PROBES = {p.id: p for p in (
    Probe("position", "Token position", "Which position (1–8) is this token at?", "surface", "lower",
          "A surface feature: the textbook's lower layers."),
    Probe("pos", "Part of speech", "Is this word a noun, a verb, an adjective or an adverb?", "surface", "lower",
          "The textbook names part-of-speech tags in the lower layers."),
    Probe("subject", "Grammatical subject", "Is this noun the sentence's grammatical subject?", "syntax", "middle",
          "A dependency relation: the textbook's middle layers."),
    Probe("agent", "Agent or patient", "Does this noun do the action, or is it done to it?", "semantics", "upper",
          "A semantic role: the textbook's upper layers."),
    Probe("sense", "Word sense", "Is this bat / mouse / crane … a living thing or made by people?", "semantics",
          "upper", "A semantic feature, so the upper layers (the textbook names entity types there, not word senses)."),
)}
ORDER = tuple(PROBES)


@dataclass(frozen=True)
class Example:
    sentence: str
    word: str  # "" for the position probe (a token, not a word)
    label: str
    fold: int
    position: int = 0  # the position probe's token index (1 = the first after [CLS])


@lru_cache(maxsize=1)
def load_set() -> dict[str, tuple[Example, ...]]:
    """assets/probes.tsv by probe; the position probe gets the part-of-speech probe's sentences (its tokens are
    the model's: see position_examples)."""
    lines = [line for line in PROBES_FILE.read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    found: dict[str, list[Example]] = {p: [] for p in ORDER}
    for row in csv.DictReader(lines, delimiter="\t"):
        found[row["probe"]].append(Example(row["sentence"], row["word"], row["label"], int(row["fold"])))
    found["position"] = [Example(e.sentence, "", "", e.fold) for e in
                         {e.sentence: e for e in found["pos"]}.values()]  # the 48 hand-written sentences
    return {p: tuple(examples) for p, examples in found.items()}


def position_examples(tokenizer, sentences: tuple[Example, ...]) -> tuple[Example, ...]:
    """Every real token (not [CLS], [SEP] …) at positions 1 to 8 of each sentence, labelled with its position."""
    out = []
    for e in sentences:
        special = tokenizer(e.sentence, return_special_tokens_mask=True)["special_tokens_mask"]
        out += [Example(e.sentence, "", str(k), e.fold, k) for k in range(1, min(MAX_POSITION + 1, len(special)))
                if not special[k]]
    return tuple(out)


def check_probe(probe) -> list[str]:
    """The probes asked for: one id, or every probe for "" / "all"."""
    if probe is None or probe == "" or probe == "all":
        return list(ORDER)
    if not isinstance(probe, str) or probe not in PROBES:
        raise BadInput(f"The probe must be one of {', '.join(ORDER)} (or all), not {str(probe)[:40]!r}.")
    return [probe]


def locate(offsets: list[tuple[int, int]], sentence: str, word: str) -> list[int]:
    """The token positions whose characters overlap the word's first whole-word occurrence (any case)."""
    found = re.search(rf"\b{re.escape(word)}\b", sentence, re.IGNORECASE)
    if found is None:
        raise ValueError(f"{word!r} is not in {sentence!r}")
    a, b = found.span()
    return [i for i, (s, e) in enumerate(offsets) if e > s and s < b and e > a]


def vectors(loaded: models.LoadedModel, examples: tuple[Example, ...]) -> np.ndarray:
    """[layers + 1, examples, hidden]: each example's vector at every layer (the mean of its word's pieces)."""
    sentences = list(dict.fromkeys(e.sentence for e in examples))
    encoded = [loaded.tokenizer(s, return_offsets_mapping=True) for s in sentences]
    states = dict(zip(sentences, lm.hidden_states(loaded, [list(enc["input_ids"]) for enc in encoded])))
    offsets = {s: [tuple(o) for o in enc["offset_mapping"]] for s, enc in zip(sentences, encoded)}
    rows = []
    for e in examples:
        positions = [e.position] if e.position else locate(offsets[e.sentence], e.sentence, e.word)
        rows.append(states[e.sentence][:, positions].mean(axis=1))  # [layers + 1, hidden]
    return np.stack(rows, axis=1)


def held_out_accuracy(features: np.ndarray, labels: list[str], folds: list[int]) -> tuple[float, float]:
    """(the probe's accuracy, the majority baseline's), every example predicted by a probe trained on the other
    folds' sentences."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from threadpoolctl import threadpool_limits

    labels, folds = np.asarray(labels), np.asarray(folds)
    right = baseline = 0
    for fold in range(FOLDS):
        train, test = folds != fold, folds == fold
        probe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
        # One BLAS thread: these matrices are small, and on a busy CPU a second thread made each fit 5-10x slower.
        with threadpool_limits(1, user_api="blas"):
            probe.fit(features[train], labels[train])
        right += int((probe.predict(features[test]) == labels[test]).sum())
        values, counts = np.unique(labels[train], return_counts=True)
        baseline += int((labels[test] == values[counts.argmax()]).sum())
    return right / len(labels), baseline / len(labels)


def expected_layer(accuracy: list[float]) -> float:
    """Where the gains happen: Σ ℓ·Δℓ / Σ Δℓ over the layers' accuracy gains Δℓ = acc(ℓ) − acc(ℓ−1), losses
    counted as 0 (Tenney et al. 2019's "expected layer", on accuracies). 0 when no layer adds anything."""
    gains = np.clip(np.diff(accuracy), 0, None)
    return float((np.arange(1, len(accuracy)) * gains).sum() / gains.sum()) if gains.sum() > 0 else 0.0


@dataclass
class ProbeCurve:
    id: str
    name: str
    question: str
    kind: str
    band: str
    why_band: str
    classes: list[str]
    examples: int
    sentences: int
    accuracy: list[float]  # per layer, 0 = the embeddings output
    baseline: float  # the majority class of the training folds, held out the same way

    @property
    def best_layer(self) -> int:
        return int(np.argmax(self.accuracy))

    def to_json(self) -> dict:
        return asdict(self) | {"best_layer": self.best_layer, "expected_layer": expected_layer(self.accuracy)}


def curve(loaded: models.LoadedModel, probe_id: str) -> ProbeCurve:
    examples = load_set()[probe_id]
    if probe_id == "position":
        examples = position_examples(loaded.tokenizer, examples)
    features = vectors(loaded, examples)
    labels, folds = [e.label for e in examples], [e.fold for e in examples]
    scores = [held_out_accuracy(layer, labels, folds) for layer in features]
    p = PROBES[probe_id]
    return ProbeCurve(p.id, p.name, p.question, p.kind, p.band, p.why_band, sorted(set(labels)), len(examples),
                      len({e.sentence for e in examples}), [a for a, _ in scores], scores[0][1])


def bands(num_layers: int) -> dict[str, list[int]]:
    """The textbook's thirds of BERT-base's 12 layers (1–4, 5–8, 9–12), scaled to this model's layers."""
    edges = [round(num_layers * k / 3) for k in range(4)]
    return {band: list(range(edges[k] + 1, edges[k + 1] + 1)) for k, band in enumerate(BANDS)}


TIE = 0.25  # expected layers closer than this are read as the same place


def reading(curves: list[ProbeCurve]) -> tuple[bool, str]:
    """Does the order of the expected layers follow surface → syntax → semantics? (the verdict, one sentence).
    Two probes whose expected layers differ by less than TIE count as level."""
    rank = {"surface": 0, "syntax": 1, "semantics": 2}
    where = {c.id: expected_layer(c.accuracy) for c in curves}
    if len({c.kind for c in curves}) < 2:
        return True, "One kind of probe: there is no order to check; ask for all probes."
    wrong = [(a, b) for a in curves for b in curves if rank[a.kind] < rank[b.kind] and where[a.id] > where[b.id] + TIE]
    if not wrong:
        return True, ("The picture holds here: the surface probes gain at lower layers than syntax, and syntax no "
                      "later than semantics.")
    pairs = "; ".join(f"{b.name.lower()} ({b.kind}) gains earlier, at layer {where[b.id]:.1f}, than "
                      f"{a.name.lower()} ({a.kind}), at {where[a.id]:.1f}" for a, b in wrong)
    return False, f"The picture does not hold here: {pairs}."


@dataclass
class ProbeRun:
    model: str
    source: str
    num_layers: int
    curves: list[ProbeCurve]

    def to_json(self) -> dict:
        holds, why = reading(self.curves)
        return {"model": self.model, "source": self.source, "num_layers": self.num_layers,
                "bands": bands(self.num_layers), "probes": [c.to_json() for c in self.curves],
                "picture_holds": holds, "reading": why}


def run(loaded: models.LoadedModel, probe: str = "all") -> ProbeRun:
    asked = check_probe(probe)
    loaded = models.load(loaded, *FAMILIES)
    curves = [JOBS.shared("probe_layers", (loaded.name, p), lambda p=p: curve(loaded, p)) for p in asked]
    return ProbeRun(loaded.name, loaded.source, len(curves[0].accuracy) - 1, curves)


def probe_layers(model: str = "", probe: str = "all") -> dict:
    """The `/probe_layers` API: typed input checked before the model is looked up; model empty = the first
    encoder offered."""
    check_probe(probe)
    name = check_name(model) if model else models.default_name(*FAMILIES)
    return run(models.load(name, *FAMILIES), probe).to_json()
