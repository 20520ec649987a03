"""Choosing a model, an encoder's and a decoder's frozen features for the same classifier: all-MiniLM-L6-v2's last
layer (mean-pooled, and its first token [CLS]) and SmolLM2's (its last token, and mean-pooled) for the built-in
reviews (assets/sentiment.csv), each read by the same scikit-learn classifier (StandardScaler + LogisticRegression),
cross-validated on the same folds beside the majority-class baseline; and each fitted classifier's verdict on a
sentence the student types.

No weight of either model changes: the features are their last hidden states, read once per process (batched,
padded on the right, so a causal model's real tokens never see a pad) and cached; tests/test_choosing_features.py
checks them against the hidden states a forward hook reads one review at a time, and the accuracies against
scikit-learn's cross_val_score on the same features and folds."""

from __future__ import annotations

import csv
import threading
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from labs.core.errors import BadInput, check_text
from labs.core.models import models

REVIEWS = Path(__file__).resolve().parents[2] / "assets" / "sentiment.csv"
ENCODER, DECODER = models.MINILM_NAME, models.SMOLLM2_NAME
ENCODER_FAMILIES, DECODER_FAMILIES = ("encoder", "masked"), ("causal",)
# (key, which model, pooling, what it is in words)
FEATURES = (("encoder_mean", "encoder", "mean", "mean of the last layer over the tokens"),
            ("encoder_first", "encoder", "first", "the first token's last hidden state ([CLS])"),
            ("decoder_last", "decoder", "last", "the last token's last hidden state"),
            ("decoder_mean", "decoder", "mean", "mean of the last layer over the tokens"))
FOLDS, SEED, BATCH = 5, 0, 32
C, MAX_ITER = 1.0, 2000
MAX_CHARS = 300
EXAMPLE = "The plot was thin, but the acting saved it."
CLASSIFIER = (f"make_pipeline(StandardScaler(), LogisticRegression(C={C}, max_iter={MAX_ITER})), "
              f"StratifiedKFold({FOLDS}, shuffle=True, random_state={SEED})")


@lru_cache(maxsize=1)
def reviews() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(texts, labels): every review of assets/sentiment.csv (both of its splits: the folds make their own)."""
    with REVIEWS.open(newline="") as f:
        rows = list(csv.DictReader(f))
    return tuple(r["text"] for r in rows), tuple(r["label"] for r in rows)


def pool(hidden, mask, how: str) -> np.ndarray:
    """[batch, tokens, width] hidden states → [batch, width]: the mean over the real tokens, the first token, or the
    last real token (right padding: position = real tokens − 1)."""
    import torch

    mask = mask.to(hidden.dtype)
    if how == "mean":
        pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
    elif how == "first":
        pooled = hidden[:, 0]
    else:
        pooled = hidden[torch.arange(hidden.shape[0]), mask.sum(1).long() - 1]
    return pooled.float().cpu().numpy()


def last_hidden(loaded, enc):
    """The model's last hidden state (a causal LM's after its final norm: what its LM head reads), from its base
    model: the LM head's logits over the whole vocabulary are never computed."""
    return loaded.model.base_model(**enc).last_hidden_state


def embed(loaded, texts, poolings: tuple[str, ...]) -> dict[str, np.ndarray]:
    """{pooling: [len(texts), width]}: the frozen features of these texts, in batches of BATCH."""
    import torch

    texts = list(texts)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # like lengths together: little padding
    parts: dict[str, list] = {how: [] for how in poolings}
    with torch.inference_mode():
        for i in range(0, len(texts), BATCH):
            enc = loaded.tokenizer([texts[j] for j in order[i:i + BATCH]], padding=True, padding_side="right",
                                   return_tensors="pt").to(loaded.device)
            hidden = last_hidden(loaded, enc)
            for how in poolings:
                parts[how].append(pool(hidden, enc["attention_mask"], how))
    back = np.argsort(order)  # each row back in the texts' order
    return {how: np.concatenate(chunks)[back] for how, chunks in parts.items()}


def load_pair(encoder: str = ENCODER, decoder: str = DECODER):
    return (models.load(encoder, *ENCODER_FAMILIES, head="encoder"), models.load(decoder, *DECODER_FAMILIES))


def feature_sets(pair, texts) -> dict[str, np.ndarray]:
    """{feature key: matrix} for these texts, every feature of FEATURES."""
    encoder, decoder = pair
    found = {**{f"encoder_{k}": v for k, v in embed(encoder, texts, ("mean", "first")).items()},
             **{f"decoder_{k}": v for k, v in embed(decoder, texts, ("last", "mean")).items()}}
    return {key: found[key] for key, *_ in FEATURES}


_lock = threading.RLock()  # one computation at a time; review_features takes it again inside


@lru_cache(maxsize=4)
def _review_features(encoder: str, decoder: str) -> dict[str, np.ndarray]:
    return feature_sets(load_pair(encoder, decoder), reviews()[0])


def review_features(encoder: str = ENCODER, decoder: str = DECODER) -> dict[str, np.ndarray]:
    """The reviews' features, computed once per process and pair of models (one computation at a time)."""
    with _lock:
        return _review_features(encoder, decoder)


def folds():
    from sklearn.model_selection import StratifiedKFold

    return StratifiedKFold(FOLDS, shuffle=True, random_state=SEED)


def classifier():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=MAX_ITER))


@dataclass
class Scored:
    key: str
    model: str
    pooling: str
    what: str
    width: int
    accuracy: float  # the mean over the folds
    by_fold: list[float]
    verdict: str = ""  # on the student's sentence (the classifier fitted on every review)
    p_positive: float = 0.0


@lru_cache(maxsize=4)
def _scored(encoder: str, decoder: str) -> tuple[tuple[Scored, ...], float, tuple]:
    return score(review_features(encoder, decoder), reviews()[1], {"encoder": encoder, "decoder": decoder})


def score(features: dict[str, np.ndarray], labels, names: dict) -> tuple[tuple[Scored, ...], float, tuple]:
    """(a Scored per feature, the majority baseline's accuracy, the classifiers fitted on every review)."""
    from sklearn.dummy import DummyClassifier
    from sklearn.model_selection import cross_val_score

    labels = np.array(labels)
    scored, fitted = [], []
    for key, which, how, what in FEATURES:
        x = features[key]
        by_fold = cross_val_score(classifier(), x, labels, cv=folds())
        scored.append(Scored(key, names[which], how, what, int(x.shape[1]), float(by_fold.mean()),
                             [float(a) for a in by_fold]))
        fitted.append(classifier().fit(x, labels))
    baseline = cross_val_score(DummyClassifier(strategy="most_frequent"), features[FEATURES[0][0]], labels,
                               cv=folds())
    return tuple(scored), float(baseline.mean()), tuple(fitted)


@dataclass
class Comparison:
    text: str
    reviews: int
    labels: dict
    folds: int
    classifier: str
    baseline: float
    rows: list[Scored]
    encoder: str
    decoder: str
    sizes: dict  # {"encoder"/"decoder": {params, layers, width}}, read from the loaded models

    def best(self) -> Scored:
        return max(self.rows, key=lambda r: r.accuracy)

    def row(self, key: str) -> Scored:
        return next(r for r in self.rows if r.key == key)

    def to_json(self) -> dict:
        return {"text": self.text, "reviews": self.reviews, "labels": self.labels, "folds": self.folds,
                "classifier": self.classifier, "baseline": self.baseline, "encoder": self.encoder,
                "decoder": self.decoder, "sizes": self.sizes, "rows": [asdict(r) for r in self.rows]}


def size(loaded) -> dict:
    config = loaded.model.config
    return {"params": sum(p.numel() for p in loaded.model.parameters()), "layers": config.num_hidden_layers,
            "width": config.hidden_size}


def check_sentence(text) -> str:
    text = check_text(text, EXAMPLE, max_chars=MAX_CHARS, what="sentence")
    if not text.strip():
        raise BadInput(f"Type a sentence to classify, such as “{EXAMPLE}”.")
    return text.strip()


def compare(text=EXAMPLE, encoder: str = ENCODER, decoder: str = DECODER) -> Comparison:
    """Every feature's cross-validated accuracy on the reviews, and each fitted classifier's verdict on `text`."""
    text = check_sentence(text)
    pair = load_pair(encoder, decoder)  # the models' own checks (family, availability) before any work
    encoder, decoder = pair[0].name, pair[1].name
    with _lock:  # the reviews' features and the classifiers, once
        scored, baseline, fitted = _scored(encoder, decoder)
    yours = feature_sets(pair, [text])
    rows = []
    for s, model in zip(scored, fitted):
        p = dict(zip(model.classes_, model.predict_proba(yours[s.key])[0]))
        rows.append(Scored(**{**asdict(s), "verdict": str(model.predict(yours[s.key])[0]),
                              "p_positive": float(p.get("positive", 0.0))}))
    labels = reviews()[1]
    return Comparison(text, len(labels), {label: labels.count(label) for label in sorted(set(labels))}, FOLDS,
                      CLASSIFIER, baseline, rows, encoder, decoder,
                      {"encoder": size(pair[0]), "decoder": size(pair[1])})


def features_api(text: str = EXAMPLE) -> dict:
    """The `/features` API."""
    return compare(text).to_json()
