"""Choosing a model, an encoder's and a decoder's frozen features for one classifier (labs/choosing/features.py):
the features equal the hidden states a forward hook and output_hidden_states read one review at a time, the
accuracies equal scikit-learn's cross_val_score on the same features and folds, the baseline is the majority
class's share of each test fold by hand, and a verdict is the fitted classifier's. On 40 reviews, not 352."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from labs.choosing import features
from labs.core.errors import BadInput


def subset():
    texts, labels = features.reviews()
    pos = [i for i, label in enumerate(labels) if label == "positive"][:20]
    neg = [i for i, label in enumerate(labels) if label == "negative"][:20]
    keep = sorted(pos + neg)
    return tuple(texts[i] for i in keep), tuple(labels[i] for i in keep)


@pytest.fixture(scope="module")
def small():
    """The lab on 40 reviews (its caches emptied before and after)."""
    texts, labels = subset()
    mp = pytest.MonkeyPatch()
    mp.setattr(features, "reviews", lambda: (texts, labels))
    features._review_features.cache_clear()
    features._scored.cache_clear()
    pair = features.load_pair()
    yield pair, texts, labels, features.review_features()
    mp.undo()
    features._review_features.cache_clear()
    features._scored.cache_clear()


def test_features_are_the_hidden_states_read_one_at_a_time(small):
    (encoder, decoder), texts, _, batched = small
    layer = encoder.model.encoder.layer[-1]  # MiniLM's last layer: its output is the last hidden state
    seen = []
    hook = layer.register_forward_hook(lambda module, args, out: seen.append(out[0] if isinstance(out, tuple) else out))
    try:
        for i in (0, 7, 23):
            enc = encoder.tokenizer(texts[i], return_tensors="pt")
            with torch.inference_mode():
                encoder.model(**enc)
                h = seen[-1][0]
                d = decoder.model(**decoder.tokenizer(texts[i], return_tensors="pt"),
                                  output_hidden_states=True).hidden_states[-1][0]
            assert np.allclose(batched["encoder_mean"][i], h.mean(0).numpy(), atol=1e-4)
            assert np.allclose(batched["encoder_first"][i], h[0].numpy(), atol=1e-4)
            assert np.allclose(batched["decoder_last"][i], d[-1].numpy(), atol=1e-3)
            assert np.allclose(batched["decoder_mean"][i], d.mean(0).numpy(), atol=1e-3)
    finally:
        hook.remove()


def test_accuracies_are_cross_val_score_and_the_baseline_is_the_majority(small):
    _, texts, labels, batched = small
    rows, baseline, _ = features.score(batched, labels, {"encoder": "e", "decoder": "d"})
    y = np.array(labels)
    folds = StratifiedKFold(5, shuffle=True, random_state=0)
    for row in rows:
        oracle = cross_val_score(make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000)),
                                 batched[row.key], y, cv=folds)
        assert row.by_fold == pytest.approx(list(oracle)) and row.accuracy == pytest.approx(oracle.mean())
    majority = max(set(labels), key=list(labels).count)
    by_hand = [np.mean(y[test] == majority) for _, test in folds.split(np.zeros(len(y)), y)]
    assert baseline == pytest.approx(np.mean(by_hand))


def test_a_verdict_is_the_fitted_classifiers(small):
    (encoder, decoder), texts, labels, batched = small
    got = features.compare("What a wonderful, moving film.")
    assert got.reviews == 40 and got.labels == {"negative": 20, "positive": 20}
    mine = features.feature_sets((encoder, decoder), ["What a wonderful, moving film."])
    for row in got.rows:
        model = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000)).fit(batched[row.key], labels)
        assert row.verdict == model.predict(mine[row.key])[0]
        positive = list(model.classes_).index("positive")
        assert row.p_positive == pytest.approx(model.predict_proba(mine[row.key])[0][positive], abs=1e-6)
    assert features.features_api("What a wonderful, moving film.")["rows"][0]["key"] == "encoder_mean"


def test_bad_input():
    for bad in ("", "   ", ["a list"], "x" * 1000):
        with pytest.raises(BadInput):
            features.compare(bad)
