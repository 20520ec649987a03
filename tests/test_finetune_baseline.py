"""Would a simple model do: the TF-IDF pipeline's accuracy equals scikit-learn's own Pipeline.score recomputed on
the run's split; the keyword rule's verdicts equal a hand count on three sentences; the encoder's accuracy is the
lab's shared default run's own (asked for twice, trained once); the lecture's slide is quoted as written; the
panel's table and words come from the result."""

from __future__ import annotations

import pytest

from labs.core.work.jobs import JOBS
from labs.finetune import baseline, tab_baseline, training
from labs.finetune.data import take_train


@pytest.fixture(scope="module")
def compared(tiny_models):
    """The comparison with the tiny encoder's default run, asked for twice."""
    runs_before = JOBS.stats["runs"]
    first = baseline.baseline(tiny_models["masked"], 2, 32)  # 32 reviews: the tiny run is short
    second = baseline.baseline(tiny_models["masked"], 2, 32)
    return first, second, JOBS.stats["runs"] - runs_before


def test_the_tfidf_accuracy_is_scikit_learns_pipeline_score(compared, tiny_models):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline

    result = compared[0]
    s, data, _ = training.api_settings(tiny_models["masked"], seed=2, train_examples=32)
    train = take_train(data, s.train_examples, s.seed)
    assert result["train_examples"] == len(train) == 32 and result["validation"] == len(data.validation)
    pipe = Pipeline([("tfidf", TfidfVectorizer(ngram_range=(1, 2))), ("lr", LogisticRegression(max_iter=1000))])
    pipe.fit([t for t, _ in train], [y for _, y in train])
    expected = pipe.score([t for t, _ in data.validation], [y for _, y in data.validation])
    tfidf = next(r for r in result["rows"] if r["method"].startswith("TF-IDF"))
    assert tfidf["accuracy"] == expected and tfidf["parameters"] == pipe[-1].coef_.size + 1


def test_the_keyword_rule_is_a_hand_count_on_three_sentences():
    labels = ["negative", "positive"]
    # great, friendly = 2 positive; slow = 1 negative → positive
    # dull, boring = 2 negative; loved = 1 positive → negative
    # no listed word at all → the tie label
    sentences = ("Great food, friendly staff, slow service.", "Dull and boring, though I loved the music.",
                 "We went there on a Tuesday.")
    assert [baseline.keyword_counts(t) for t in sentences] == [(2, 1), (1, 2), (0, 0)]
    assert [baseline.keyword_label(t, labels, tie=1) for t in sentences] == [1, 0, 1]
    assert baseline.keyword_label(sentences[2], labels, tie=0) == 0
    assert baseline.keyword_counts("uncomfortable") == (0, 1)  # whole words: "comfortable" is not inside it


def test_the_encoder_is_the_shared_default_run_trained_once(compared, tiny_models):
    first, second, runs = compared
    assert runs <= 1  # the second request (and a student's default run before it, if any) reused the run
    encoder = first["rows"][-1]
    assert encoder["method"].endswith(tiny_models["masked"]) and 0 <= encoder["accuracy"] <= 1
    assert encoder["accuracy"] == second["rows"][-1]["accuracy"]
    assert [r["accuracy"] for r in first["rows"]] == [r["accuracy"] for r in second["rows"]]
    assert encoder["ms_per_review"] > 0 and encoder["parameters"] > first["rows"][1]["parameters"] > 0
    keyword = first["rows"][0]
    assert keyword["parameters"] == 0 and not keyword["trained"] and keyword["ms_per_review"] > 0
    assert first["settings"]["learning_rate"] == training.api_settings(tiny_models["masked"])[0].learning_rate


def test_the_lectures_slide_and_the_panel(compared):
    result = compared[0]
    assert [c["where"] for c in result["course"]] == ["When NOT to Use Pre-trained Models"] * 2
    assert "- Simple regex suffices" in result["course"][0]["text"]
    frame = tab_baseline.table(result)
    assert frame.shape == (3, 5) and frame.values[1][1] == f"{result['rows'][1]['accuracy']:.1%}"
    words = tab_baseline.summary(result)
    assert f"{result['rows'][2]['accuracy']:.1%}" in words and "measured here" in words
    assert "> - Rule-based system works" in tab_baseline.course_markdown()


def test_the_b5_code_imports_training_arguments_and_uses_transformers_5s_warm_up(tiny_models):
    """What the handout's B5.1 code lacks, put right in the code the lab writes (and said beside it)."""
    import inspect
    import re

    import transformers

    from labs.finetune import codegen, strategies

    s = strategies.check_settings(tiny_models["masked"], "full", 5e-5, 3, 16, 200, 0, warmup_ratio=0.2)
    code = codegen.training_code(s, "sentence-transformers/all-MiniLM-L6-v2")
    names = {}
    exec(code.splitlines()[0], names)  # the first line alone: the imports
    assert names["TrainingArguments"] is transformers.TrainingArguments
    assert "warmup_ratio" not in inspect.signature(transformers.TrainingArguments).parameters
    args = eval(re.search(r"args = (TrainingArguments\(.*?\n\))", code, re.S).group(1), names)
    assert args.warmup_steps == 0.2 and args.get_warmup_steps(40) == 8  # a share of all the steps
    assert "without importing it" in codegen.B5_FIXES and "warmup_steps" in codegen.B5_FIXES
