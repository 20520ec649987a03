"""How little labelled data pre-training needs: the lecture's worked example quoted verbatim under its slide; the
sizes checked; the curve as a shared job equals the same curve computed alone (and a class asking for it trains
once); on the real MiniLM the pre-trained model is ahead of the same architecture from scratch at few examples."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from conftest import run_async

from labs.core.errors import BadInput
from labs.core.models import models
from labs.core.work.jobs import JOBS, Queued
from labs.finetune import data_efficiency as de
from labs.finetune import tab_data_efficiency, tasks

COURSE = Path(__file__).resolve().parents[2] / "shared" / "course"
LECTURE, STRATEGIES = "000_e134d1b9ed4e6724.txt", "002_e542dddf905ba18f.txt"


@pytest.mark.skipif(not COURSE.exists(), reason="the course's documents are in ../shared/course")
def test_the_worked_example_is_the_lectures_own_slide_line_by_line():
    lines = (COURSE / LECTURE).read_text().splitlines()
    start = lines.index(de.SLIDE)  # the slide's title, alone on its line
    body = [line for line in lines[start + 1:start + 30] if line.strip()][:len(de.WORKED_EXAMPLE)]
    assert tuple(body) == de.WORKED_EXAMPLE  # every line, in order, nothing between them but blank lines
    strategies = (COURSE / STRATEGIES).read_text()
    assert de.ULMFIT_CLAIM in strategies
    before = strategies[:strategies.index(de.ULMFIT_CLAIM)].splitlines()
    assert de.ULMFIT_WHERE[1] in before[-30:]  # under the slide "ULMFiT"


def test_sizes_are_checked_sorted_and_capped_at_the_training_set(tiny_models):
    plan, data = de.check(tiny_models["masked"], "sentiment", [64, 8, 1000, 8], 3)
    assert [s.train_examples for s in plan] == [8, 64, len(data.train)]
    assert {(s.strategy, s.epochs, s.batch_size, s.learning_rate, s.seed) for s in plan} == {
        ("full", de.EPOCHS, de.BATCH, de.RATE, 3)}
    assert [s.train_examples for s in de.check(tiny_models["masked"], "pair", None, 0)[0]] == [8, 16, 32, 64, 128, 240]
    assert de.parse_sizes("8, 16;32") == [8, 16, 32] and de.parse_sizes("") == list(de.SIZES)
    for bad, words in (([4], "Each size"), (list(range(8, 18)), "1 to 8"), ("abc", "whole numbers")):
        with pytest.raises(BadInput, match=words):
            de.check(tiny_models["masked"], "sentiment", de.parse_sizes(bad), 0)
    with pytest.raises(BadInput, match="causal|encoder"):
        de.check(tiny_models["causal"], "sentiment", [8], 0)
    with pytest.raises(BadInput, match="Unknown task"):
        de.check(tiny_models["masked"], "poetry", [8], 0)


def test_the_shared_curve_equals_the_curve_computed_alone_and_a_class_trains_it_once(tiny_models):
    alone = de.data_efficiency(tiny_models["masked"], "sentiment", [8, 16], 11)
    plan, data = de.check(tiny_models["masked"], "sentiment", [8, 16], 11)
    runs_before, seen = JOBS.stats["runs"], [[], [], []]
    tickets = [de.ticket(plan, data) for _ in seen]
    threads = [threading.Thread(target=lambda t=t, s=s: s.extend(t)) for t, s in zip(tickets, seen)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert JOBS.stats["runs"] == runs_before + 1  # three students, one curve
    results = [e for e in seen[0] if isinstance(e, de.RunResult)]
    shared = de.curve_json(plan, data, results)
    strip = lambda r: [{k: v for k, v in p.items() if not k.endswith("seconds")} for p in r["points"]]  # noqa: E731
    assert strip(shared) == strip(alone)
    assert [p["size"] for p in shared["points"]] == [8, 16] and len(results) == 4
    assert shared["course"]["lines"] == list(de.WORKED_EXAMPLE)


def test_the_api_streams_the_progress_then_the_curve(tiny_models):
    async def follow():
        return [e async for e in de.data_efficiency_stream(tiny_models["masked"], "sentiment", [8], 12)]

    *progress, result = run_async(follow(), timeout=300)
    assert progress and all(e["status"] in ("queued", "running") for e in progress)
    running = [e for e in progress if e["status"] == "running"]
    assert running[0]["runs"] == 2 and {e["phase"] for e in running} == {"pre-trained", "from scratch"}
    assert result["points"][0]["size"] == 8 and result["metric"] == "accuracy"
    assert 0 <= result["points"][0]["scratch"] <= 1 and not any(isinstance(e, Queued) for e in progress)


def test_the_panels_words_and_table_come_from_the_result(tiny_models):
    result = {"model": "m", "metric": "accuracy", "validation": 88, "seed": 0,
              "settings": {"epochs": 5, "batch_size": 8, "learning_rate": 1e-4},
              "points": [{"size": 8, "pretrained": 0.6, "scratch": 0.5}, {"size": 32, "pretrained": 0.8, "scratch": 0.5}]}
    frame = tab_data_efficiency.rows(result)
    assert frame.values.tolist() == [[8, "60.0%", "50.0%", "+10.0"], [32, "80.0%", "50.0%", "+30.0"]]
    words = tab_data_efficiency.summary(result)
    assert "**60.0%**" in words and "**50.0%**" in words and "not measured here" in words
    shown, md = tab_data_efficiency.course_markdown(), tab_data_efficiency.ui.md  # shown literally, stars and all
    assert all(md(line) in shown for line in (*de.WORKED_EXAMPLE, de.SLIDE, de.ULMFIT_CLAIM))


@pytest.mark.timeout(1800)  # real weights on a shared 2-core machine: minutes when it is busy
@pytest.mark.slow  # trains real weights
def test_on_the_real_minilm_pre_training_is_ahead_at_few_examples():
    result = de.data_efficiency(models.MINILM_NAME, "sentiment", [8], 0)  # 5 updates of 8 reviews each
    (point,) = result["points"]
    assert point["pretrained"] > point["scratch"] + 0.05 and point["pretrained"] > point["pretrained_before"], point
    assert tasks.METRIC[result["task"]] == result["metric"]


@pytest.mark.timeout(1800)  # a run on a tiny model
def test_the_panel_draws_in_a_browser(browser, app_server, tiny_models):
    from conftest import at_each_width, panel_run, screenshot

    link = f"{app_server['url']}?tab=finetune&model={tiny_models['masked']}&de_sizes=8"
    with panel_run(browser, link, tab_data_efficiency.TITLE, tab_data_efficiency.BUTTON) as page:
        for width in at_each_width(page):
            page.locator("#ft-data-efficiency .js-plotly-plot").first.wait_for(timeout=300000)
            page.locator("#ft-data-efficiency").get_by_text("pre-trained model reaches").wait_for(timeout=60000)
            page.locator("#ft-data-efficiency").scroll_into_view_if_needed()
            screenshot(page, f"finetune_data_efficiency_{width}")
