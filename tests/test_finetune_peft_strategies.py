"""Fine-tune, prompt tuning and prefix tuning beside LoRA (peft), and why the tasks' defaults differ from the
course's recipes: the trainable counts equal peft's own count and a hand count, a run trains only the prompt and
the head and is reproducible, the comparison has the new rows at their stated rates, the course's recipes are
quoted verbatim and the "run both" panel measures exactly the two stated settings."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import torch
from conftest import run_async, screenshot

from labs.core.errors import BadInput
from labs.core.models import models
from labs.finetune import (
    codegen,
    compare,
    recipes,
    strategies,
    tab_strategies,
    tab_tasks,
    tasks,
    training,
)

COURSE = Path(__file__).resolve().parents[2] / "shared" / "course"
LECTURE, SUMMARY = "000_e134d1b9ed4e6724.txt", "004_1eb174af2e36d6dc.txt"


def settings(name, **changes):
    values = {"strategy": "prompt_20", "learning_rate": 3e-2, "epochs": 2, "batch_size": 8, "train_examples": 16,
              "seed": 0}
    return strategies.Settings(name, **(values | changes))


def run(s):
    return list(training.train(s, tasks.task_data(s.task), keep_for_try=True))[-1]


def head_size(model) -> int:
    return sum(p.numel() for n, p in model.named_parameters() if n.startswith("classifier"))


# ------------------------------------------------------------ counts


@pytest.mark.parametrize("kind", ["prompt", "prefix"])
def test_counts_equal_peft_and_a_hand_count_on_the_tiny_model(tiny_models, kind):
    model, _ = models.load_for_classification(tiny_models["masked"], 2)
    hidden, layers, head = model.config.hidden_size, model.config.num_hidden_layers, head_size(model)
    base_total = sum(p.numel() for p in model.parameters())
    wrapped = strategies.apply_strategy(model, f"{kind}_20")
    trainable, total = strategies.count_params(wrapped)
    hand = 20 * hidden * (1 if kind == "prompt" else layers * 2) + head  # N × hidden (× layers × 2) + classifier
    assert trainable == wrapped.get_nb_trainable_parameters()[0] == hand
    assert strategies.prompt_added(kind, 20, hidden, layers) == hand - head
    assert trainable == sum(p.numel() for n, p in wrapped.named_parameters()  # the requires_grad oracle
                            if p.requires_grad and "original_module" not in n)
    assert total == base_total + hand - head  # the model plus the new vectors (peft's head copy not counted)
    encoder = [n for n, p in wrapped.named_parameters() if p.requires_grad and "classifier" not in n]
    assert encoder == ["prompt_encoder.default.embedding.weight"]  # nothing of the encoder trains


def test_minilm_counts_are_peft_printed_numbers():
    """all-MiniLM-L6-v2 (6 layers, 384 wide): 20 × 384 + 770 and 20 × 6 × 2 × 384 + 770."""
    assert strategies.param_summary(models.MINILM_NAME, "prompt_20")["trainable"] == 20 * 384 + 2 * 384 + 2 == 8_450
    assert strategies.param_summary(models.MINILM_NAME, "prefix_20")["trainable"] == 20 * 6 * 2 * 384 + 770 == 92_930


def test_names_parse_and_bad_ones_are_refused():
    assert strategies.parse_strategy("prompt_20") == ("prompt", 20)
    assert strategies.parse_strategy("prefix_5") == ("prefix", 5)
    assert strategies.strategy_name("prompt", 20) == "prompt_20" and strategies.strategy_name("prefix", 8) == "prefix_8"
    for bad in ("prompt", "prompt_0", "prefix_x", "prompt_1000"):
        with pytest.raises(BadInput, match="prompt_N"):
            strategies.parse_strategy(bad)


def test_prompt_tuning_is_refused_for_token_and_span_tasks_and_prefix_tuning_runs(tiny_models):
    model, _ = models.load_for_task(tiny_models["masked"], "token_classification", labels=tasks.NER_LABELS)
    with pytest.raises(BadInput, match="prefix tuning"):
        strategies.apply_strategy(model, "prompt_20")
    result = run(settings(tiny_models["masked"], strategy="prefix_4", task="ner", epochs=1))
    assert result.task == "ner" and len(result.history) == 2 and math.isfinite(result.history[-1]["loss"])


# ------------------------------------------------------------ runs


@pytest.mark.parametrize("strategy", ["prompt_20", "prefix_20"])
def test_a_run_trains_the_prompt_and_head_only_and_is_reproducible(tiny_models, strategy):
    s = settings(tiny_models["masked"], strategy=strategy)
    first, again = run(s), run(s)
    assert [h["loss"] for h in first.history] == [h["loss"] for h in again.history]  # same seed, same run
    assert first.accuracy_after == again.accuracy_after and first.eval == again.eval
    kept, _, _, _ = training.kept_model(first.run_id)
    fresh, _ = models.load_for_classification(tiny_models["masked"], 2, seed=s.seed)
    inner = dict(kept.base_model.named_parameters())
    for name, before in fresh.named_parameters():
        if not name.startswith("classifier"):
            assert torch.equal(inner[name], before), name  # the encoder: bit-identical
    trained_head = kept.base_model.classifier.modules_to_save["default"].weight
    assert not torch.equal(trained_head, fresh.classifier.weight)  # the head learned
    other = run(settings(tiny_models["masked"], strategy=strategy, seed=1))
    assert [h["loss"] for h in other.history] != [h["loss"] for h in first.history]
    # The encoder's weights never moved: its sentence vectors did not drift.
    assert first.forgetting["drift"] == 0 and first.forgetting["retrieval_after"] == first.forgetting[
        "retrieval_before"]


def test_classify_uses_the_trained_prompt(tiny_models):
    result = run(settings(tiny_models["masked"], strategy="prompt_4", epochs=1))
    kept, tokenizer, _, _ = training.kept_model(result.run_id)
    enc = tokenizer("An absolutely wonderful evening.", return_tensors="pt")
    with torch.no_grad():  # the oracle: peft's model called by hand (virtual tokens prepended by peft)
        probs = torch.softmax(kept(**enc).logits[0], -1).tolist()
    assert list(training.classify(result.run_id, "An absolutely wonderful evening.").values()) == pytest.approx(probs)


def test_codegen_writes_peft_configs(tiny_models):
    for strategy, needle in (("prompt_20", "PromptTuningConfig(task_type=TaskType.SEQ_CLS, num_virtual_tokens=20)"),
                             ("prefix_8", "PrefixTuningConfig(task_type=TaskType.SEQ_CLS, num_virtual_tokens=8)")):
        code = codegen.training_code(settings(tiny_models["masked"], strategy=strategy), "bert-base-uncased")
        compile(code, "<training code>", "exec")
        assert needle in code


# ------------------------------------------------------------ the comparison


def test_the_comparison_has_lora_prompt_and_prefix_rows(tiny_models):
    *_, result = compare.compare_strategies(tiny_models["masked"], "sentiment", 1e-4, 1, 8, 16, 0)
    runs = {r["strategy"]: r for r in result["runs"]}
    assert list(runs) == ["features", "freeze_bottom_1", "full", "llrd_0.95", "lora_r8", "prompt_20", "prefix_20"]
    assert runs["lora_r8"]["learning_rate"] == compare.LORA_RATE == 5e-4
    assert runs["prompt_20"]["learning_rate"] == runs["prefix_20"]["learning_rate"] == compare.PROMPT_RATE == 3e-2
    assert runs["full"]["learning_rate"] == 1e-4  # the student's own rate
    hidden, layers, head = 64, 2, 2 * 64 + 2  # conftest's tiny BERT
    assert runs["prompt_20"]["trainable_params"] == 20 * hidden + head
    assert runs["prefix_20"]["trainable_params"] == 20 * layers * 2 * hidden + head
    assert runs["prompt_20"]["drift"] == runs["prefix_20"]["drift"] == 0
    rows = compare.table_rows(result["runs"])
    assert [r[0] for r in rows][-3:] == ["lora_r8", "prompt_20", "prefix_20"] and rows[-1][1] == "0.03"


def test_the_comparison_skips_prompt_tuning_for_ner_and_keeps_the_control(tiny_models):
    s = strategies.check_settings(tiny_models["masked"], "full", 0, 1, 8, 16, 0, task="ner")
    names = [p.strategy for p in compare.plan(s)]
    assert "prompt_20" not in names and names[-2:] == ["lora_r8", "prefix_20"]
    assert all(p.learning_rate == 0 for p in compare.plan(s))  # rate 0 stays the control for every strategy


def test_the_rates_note_quotes_the_summary_sheet():
    from labs.core.ui import course_quotes

    quote = re.search(r"\(Summary sheet, “Fine-tuning Strategies”\): “(.+?)”\.$", tab_strategies.RATES_NOTE).group(1)
    assert quote == course_quotes.text("prompt_tuning")  # the table's entry (test_course_quotes checks it)
    if COURSE.exists():
        assert quote in (COURSE / SUMMARY).read_text()
    assert f"at least {compare.PROMPT_RATE:g}" in tab_strategies.RATES_NOTE


# ------------------------------------------------------------ the course's recipes


@pytest.mark.skipif(not COURSE.exists(), reason="the course's documents are in ../shared/course")
def test_every_recipe_quote_is_the_lectures_own_text_and_the_setting_run_is_the_quoted_one():
    lecture = (COURSE / LECTURE).read_text()
    for quote, where in recipes.quotes():
        assert quote in lecture and where in lecture, quote
    for task, recipe in recipes.RECIPES.items():
        if recipe.where == recipes.APPENDIX:  # "Task<TAB>rate<TAB>epochs<TAB>strategy": the row read by hand
            _, rate, epochs, _ = recipe.quote.split("\t")
            assert recipe.course == (float(rate), int(epochs.split("-")[-1])), task
        else:  # the slide's list: its largest rate and epochs
            assert recipe.course == (5e-5, 4) and "5e-5" in recipe.quote and "2-4" in recipe.quote


def test_the_recipes_table_shows_each_tasks_default_and_its_steps():
    rows = recipes.table_rows()
    assert [r[2] for r in rows] == ["5e-5, 3 epochs", "1e-4, 5 epochs", "3e-4, 5 epochs", "3e-4, 5 epochs"]
    assert tab_tasks.TASK_DEFAULTS is tasks.TASK_DEFAULTS
    for task, row in zip(recipes.RECIPES, rows):
        steps = math.ceil(min(200, len(tasks.task_data(task).train)) / 16)
        assert f"{steps} steps an epoch" in row[3]
        assert row[1].startswith("“") and recipes.RECIPES[task].quote in row[1]


@pytest.mark.slow
def test_run_both_measures_the_two_stated_settings(tiny_models):
    async def follow():
        return [out async for out in tab_tasks.on_recipes(tiny_models["masked"], "pair", 3)]

    *progress, last = run_async(follow())
    assert progress and all(set(p) == {"progress"} for p in progress) and last["progress"] == tab_strategies.ui.DONE
    frame = last["table"]
    rows = frame.values.tolist()
    assert [r[:3] for r in rows] == [["the course's recipe", "5e-5", "4"], ["this lab's default", "1e-4", "5"]]
    for row, (lr, epochs) in zip(rows, (recipes.RECIPES["pair"].course, tasks.TASK_DEFAULTS["pair"])):
        s = strategies.check_settings(tiny_models["masked"], "full", lr, epochs, 16, 200, 3, task="pair")
        alone = list(training.train(s, tasks.task_data("pair"), keep_for_try=False))[-1]  # the same run, alone
        assert row[3].startswith(f"{alone.accuracy_before:.1%} → {alone.accuracy_after:.1%}")


def test_run_both_refuses_a_causal_model(tiny_models):
    with pytest.raises(BadInput, match="causal"):
        recipes.settings_pair(tiny_models["causal"], "sentiment")


# ------------------------------------------------------------ the page


def test_the_strategy_comparison_and_the_recipes_on_the_page(page, tiny_models):
    # On the tiny model, by the tab's link: what the page draws is under test here (every strategy's row); the
    # comparison's runs are test_finetune_strategies.py's (test_compare_strategies_runs_them_in_order).
    page.goto(f"{page.lab_url}?tab=finetune&model={tiny_models['masked']}", wait_until="load")
    page.get_by_text("Trainable:").first.wait_for(timeout=60000)
    epochs = page.locator("#ft-epochs input[type=number]")
    epochs.fill("1")
    epochs.press("Enter")
    page.get_by_text(tab_strategies.TITLE).click()
    page.get_by_role("button", name=tab_strategies.BUTTON).click()
    page.get_by_text("Layer-wise learning-rate decay: each layer's rate").first.wait_for(timeout=300000)
    for strategy in ("features", "freeze_bottom_", "llrd_0.95"):  # the table's rows, as the student reads them
        page.get_by_text(strategy).filter(visible=True).last.wait_for(timeout=30000)
    for strategy in ("lora_r8", "prompt_20", "prefix_20"):
        page.get_by_text(strategy, exact=True).filter(visible=True).last.wait_for(timeout=30000)
    screenshot(page, "finetune_peft_strategies")
    page.get_by_text("Why not every task fine-tunes the same way").click()
    page.get_by_text("Named Entities").first.wait_for(timeout=30000)
