"""Fine-tune, when not to use a pre-trained model: two simple classifiers beside the fine-tuned encoder on the same
reviews' split. A keyword rule (LM Lab's own short lists of positive and negative words: the side with more
words in the review wins) and TF-IDF features with a logistic regression (scikit-learn), trained on the same
training reviews as the encoder; all three measured on the same validation reviews: accuracy, time per review
(measured here and now, one review at a time, on this server) and size.

The encoder is the lab's own run at its default settings (labs.finetune.shared_runs: a shared job), with as many
training reviews as asked (200 by default): a run a student already made with those settings is reused, not
trained again."""

from __future__ import annotations

import collections
import pickle
import re
import time
from collections.abc import AsyncIterator, Iterator

from labs.core.errors import BadInput
from labs.core.ui import course_quotes
from labs.core.work.jobs import Queued
from labs.finetune import shared_runs, training
from labs.finetune.data import take_train
from labs.finetune.strategies import DEFAULTS
from labs.finetune.training import MAX_LENGTH, RunResult, Step

# LM Lab's own lists (general sentiment words, not picked from the validation reviews)
POSITIVE = ("amazing", "beautiful", "best", "brilliant", "clean", "comfortable", "delight", "delightful", "easy",
            "enjoyed", "excellent", "fantastic", "fresh", "friendly", "fun", "funny", "good", "great", "love", "loved",
            "lovely", "perfect", "perfectly", "recommend", "superb", "wonderful")
NEGATIVE = ("awful", "bad", "boring", "broke", "broken", "cheap", "cold", "confusing", "dirty", "disappointing",
            "dull", "fake", "hate", "horrible", "late", "mess", "poor", "rude", "slow", "terrible", "ugly",
            "uncomfortable", "waste", "worst")
WORD = re.compile(r"[a-z']+")
TRAIN_EXAMPLES = DEFAULTS["train_examples"]  # the lab's default run: a student's run at the defaults is reused
TIMED = 40  # validation reviews timed one at a time (each method, the same ones), after one untimed warm-up
QUOTE_IDS = ("not_pretrained_overkill", "not_pretrained_resources")  # the lecture's slide, as course_quotes holds it


def keyword_counts(text: str) -> tuple[int, int]:
    """(positive words, negative words) in the text, each occurrence counted, whole lower-cased words only."""
    words = WORD.findall(text.lower())
    return sum(w in POSITIVE for w in words), sum(w in NEGATIVE for w in words)


def keyword_label(text: str, labels: list[str], tie: int) -> int:
    """The keyword rule's verdict (a label id): more positive words → "positive", more negative → "negative",
    a tie (no keyword at all, most often) → `tie`, the training reviews' most frequent label."""
    positive, negative = keyword_counts(text)
    if positive == negative:
        return tie
    return labels.index("positive" if positive > negative else "negative")


def tfidf_pipeline():
    """Word and word-pair TF-IDF features, then a logistic regression (scikit-learn's defaults otherwise)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    return make_pipeline(TfidfVectorizer(ngram_range=(1, 2)), LogisticRegression(max_iter=1000))


def per_review_ms(predict, texts: list[str]) -> float:
    """The mean wall time of one prediction, the texts one at a time (after one untimed warm-up)."""
    predict(texts[0])
    started = time.perf_counter()
    for text in texts:
        predict(text)
    return 1000 * (time.perf_counter() - started) / len(texts)


def encoder_predictor(model, tokenizer):
    import torch

    device = next(model.parameters()).device

    def predict(text: str) -> int:
        with torch.no_grad():
            enc = tokenizer(text, truncation=True, max_length=MAX_LENGTH, return_tensors="pt").to(device)
            return int(model(**enc).logits[0].argmax())
    return predict


def encoder_size(model) -> tuple[int, int]:
    """(parameters, bytes of the weights as they are held)."""
    return (sum(p.numel() for p in model.parameters()),
            sum(p.numel() * p.element_size() for p in model.parameters()))


def compare(run: RunResult, data) -> dict:
    """The three classifiers on the run's split: the run's training reviews (the same rows) and the validation
    reviews. The encoder's accuracy is the run's own; its time per review needs its kept model."""
    s = run.settings
    train, validation = take_train(data, s.train_examples, s.seed), data.validation
    texts, truth = [t for t, _ in validation], [y for _, y in validation]
    timed = texts[:TIMED]
    tie = collections.Counter(y for _, y in train).most_common(1)[0][0]
    keyword = [keyword_label(t, data.labels, tie) for t in texts]
    pipeline = tfidf_pipeline().fit([t for t, _ in train], [y for _, y in train])
    vectorizer, regression = pipeline.steps[0][1], pipeline.steps[1][1]
    rows = [
        {"method": "keyword rule", "accuracy": sum(p == y for p, y in zip(keyword, truth)) / len(truth),
         "ms_per_review": per_review_ms(lambda t: keyword_label(t, data.labels, tie), timed),
         "parameters": 0, "size_bytes": len(" ".join(POSITIVE + NEGATIVE).encode()),
         "size": f"{len(POSITIVE)} positive and {len(NEGATIVE)} negative words", "trained": False},
        {"method": "TF-IDF + logistic regression", "accuracy": float(pipeline.score(texts, truth)),
         "ms_per_review": per_review_ms(lambda t: pipeline.predict([t]), timed),
         "parameters": int(regression.coef_.size + regression.intercept_.size),
         "size_bytes": len(pickle.dumps(pipeline)),
         "size": f"{len(vectorizer.vocabulary_):,} words and word pairs, one weight each", "trained": True}]
    encoder = {"method": f"fine-tuned {s.model}", "accuracy": run.accuracy_after, "ms_per_review": None,
               "parameters": run.total_params, "size_bytes": None, "size": f"{run.total_params:,} parameters",
               "trained": True}
    try:
        model, tokenizer, _, _ = training.kept_model(run.run_id)
        encoder["ms_per_review"] = per_review_ms(encoder_predictor(model, tokenizer), timed)
        encoder["parameters"], encoder["size_bytes"] = encoder_size(model)
    except BadInput:  # the run's model was freed meanwhile (many runs at once): its accuracy stands, not its time
        pass
    return {"model": s.model, "train_examples": len(train), "validation": len(validation), "timed": len(timed),
            "settings": {"strategy": s.strategy, "learning_rate": s.learning_rate, "epochs": s.epochs,
                         "batch_size": s.batch_size, "seed": s.seed},
            "rows": rows + [encoder], "keywords": {"positive": list(POSITIVE), "negative": list(NEGATIVE)},
            "tie_label": data.labels[tie], "measured": "here, now, on this server, one review at a time",
            "course": [{"document": course_quotes.get(q).document, "where": course_quotes.get(q).where,
                        "text": course_quotes.text(q)} for q in QUOTE_IDS]}


def check(model, seed=0, train_examples=TRAIN_EXAMPLES):
    """The lab's default run settings for this encoder with that many training reviews (at 200, the same run the
    Fine-tune button makes at its defaults)."""
    s, data, _ = training.api_settings(model, seed=seed, train_examples=train_examples)
    return s, data


def events(model, seed=0, train_examples=TRAIN_EXAMPLES, owner: str | None = None,
           page: bool = False) -> tuple[object, object, object]:
    """(settings, data, the ticket of the shared run)."""
    s, data = check(model, seed, train_examples)
    return s, data, shared_runs.run_ticket(s, data, scratch=False, owner=owner, page=page)


async def baseline_stream(model: str, seed: int = 0, train_examples: int = TRAIN_EXAMPLES) -> AsyncIterator[dict]:
    """The `baseline` API: the queue's place while the encoder's run waits, its progress, then the comparison."""
    s, data, ticket = events(model, seed, train_examples)
    result = None
    async for event in ticket:
        if isinstance(event, Queued):
            yield event.to_json()
        elif isinstance(event, RunResult):
            result = event
        elif isinstance(event, Step):
            yield training.progress_json(event)
    if result is None:
        raise BadInput("The encoder's run stopped before it finished; ask again.")
    yield compare(result, data)


def baseline(model: str, seed: int = 0, train_examples: int = TRAIN_EXAMPLES) -> dict:
    """The comparison here and now (tests; a script): the shared run followed to its end, then the baselines."""
    _, data, ticket = events(model, seed, train_examples)
    return compare(last_run(ticket), data)


def last_run(stream: Iterator) -> RunResult:
    runs = [e for e in stream if isinstance(e, RunResult)]
    if not runs:
        raise BadInput("The encoder's run stopped before it finished; ask again.")
    return runs[-1]
