"""Pre-training, curating the data: two real classifiers as curation steps (Textbook 20.13.1 names both),
py3langid's language identification and alt-profanity-check's offensive-language classifier.

- language: py3langid (langid.py's naive Bayes over byte n-grams; its model ships in the package) with
  normalised probabilities (`LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)`, what
  `py3langid.classify` computes, softmaxed); a document is kept when its most likely language is English with
  probability at least the student's threshold. C4 kept the pages langdetect called English with probability
  at least 0.99 (Raffel et al. 2020, §2.2): LM Lab's note, the textbook gives no number;
- offensive: alt-profanity-check (a calibrated linear SVM on TF-IDF word features, shipped in the package);
  `predict_prob` is the probability that a text is offensive, and a document at or above the threshold is
  removed (0.5 is the package's own `predict`);
- bad words (for C4's rule): C4 used the "List of Dirty, Naughty, Obscene or Otherwise Bad Words", which is not
  shipped here. LM Lab's stand-in list is the words of profanity-check's own vocabulary that its classifier,
  reading the word alone, scores at or above a cut (0.9: 137 of its 15,442 words).

The steps read any objects with `text`, `kept`, `step`, `reason` and the three scores (curation.Document)."""

from __future__ import annotations

import importlib
from functools import lru_cache

from labs.core.errors import check_number

ENGLISH = "en"
DEFAULT_LANGUAGE_PROBABILITY, DEFAULT_OFFENSIVE_PROBABILITY, DEFAULT_BAD_WORD_PROBABILITY = 0.99, 0.5, 0.9
NAMES = {"en": "English", "fr": "French", "de": "German", "fi": "Finnish", "pl": "Polish", "es": "Spanish",
         "it": "Italian", "nl": "Dutch", "pt": "Portuguese", "sv": "Swedish", "da": "Danish", "no": "Norwegian",
         "la": "Latin", "et": "Estonian", "ru": "Russian", "tr": "Turkish", "ro": "Romanian", "cs": "Czech"}


def language_name(code: str) -> str:
    return f"{NAMES[code]} ({code})" if code in NAMES else code


@lru_cache(maxsize=1)
def identifier():
    """py3langid's identifier with normalised probabilities (its own model file)."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def identify(text: str) -> tuple[str, float]:
    """The most likely language and its probability (0–1), as py3langid's `classify` says."""
    language, probability = identifier().classify(text)
    return language, float(probability)


def offensive_probabilities(texts: list[str]) -> list[float]:
    """profanity-check's probability that each text is offensive (its `predict_prob`, one batched call)."""
    if not texts:
        return []
    from profanity_check import predict_prob

    return [float(p) for p in predict_prob(list(texts))]


def _package():
    return importlib.import_module("profanity_check.profanity_check")  # its vectorizer and model, loaded once


@lru_cache(maxsize=4)
def bad_words(cut: float = DEFAULT_BAD_WORD_PROBABILITY) -> frozenset[str]:
    """LM Lab's stand-in for C4's bad-words list: profanity-check's vocabulary words it scores ≥ cut alone."""
    from profanity_check import predict_prob

    vocabulary = sorted(_package().vectorizer.vocabulary_)
    return frozenset(w for w, p in zip(vocabulary, predict_prob(vocabulary)) if p >= cut)


def words_of(text: str) -> list[str]:
    """The text's words as profanity-check's own TF-IDF analyzer reads them (lower case, 2+ characters)."""
    return _package().vectorizer.build_analyzer()(text)


def check_thresholds(language_threshold, offensive_threshold) -> tuple[float, float]:
    return (check_number(language_threshold, "The language probability threshold", 0.0, 1.0),
            check_number(offensive_threshold, "The offensive-language threshold", 0.01, 1.0))


def annotate(docs) -> None:
    """Each document's language, its probability, and its offensive probability (all documents: shown even when
    a step is off)."""
    for d, p in zip(docs, offensive_probabilities([d.text for d in docs])):
        d.language, d.language_probability = identify(d.text)
        d.offensive_probability = p


def language_reason(language: str, probability: float, threshold: float) -> str:
    """Why a text is removed by language identification ("" to keep it): C4's test, English and p ≥ threshold."""
    if language != ENGLISH:
        return f"py3langid: {language_name(language)} with p = {probability:.2f}, not English"
    if probability < threshold:
        return f"py3langid: English with p = {probability:.3f}, below {threshold:g}"
    return ""


def language_step(docs, threshold: float, step: str = "language") -> None:
    for d in (d for d in docs if d.kept):
        if reason := language_reason(d.language, d.language_probability, threshold):
            d.kept, d.step, d.reason = False, step, reason


def offensive_step(docs, threshold: float, step: str = "offensive") -> None:
    for d in (d for d in docs if d.kept):
        if d.offensive_probability >= threshold:
            d.kept, d.step = False, step
            d.reason = f"profanity-check: p(offensive) = {d.offensive_probability:.2f}, at least {threshold:g}"
