"""The Part A & B workbook: every exercise of the handout has its entry in the handout's own words; each
check is right for the correct value and wrong for the handout's known wrong versions, and equals an
independent computation (a hand softmax, the binomial and DataCollatorForLanguageModeling, peft, SGD, the
meta-device parameter count); the runs are the Fine-tune lab's and generate()'s own; bad input gets a
sentence; answers survive a reload in Chromium and the download holds them; the API judges a workbook."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import torch
from conftest import declared_endpoints, open_tab, run_async, wait_until

from labs.core.errors import BadInput
from labs.core.work import services
from labs.part_b import checks, evidence, facts, model_answers, questions, tab, workbook

COURSE = Path(__file__).resolve().parents[2] / "shared" / "course"
HANDOUT = COURSE / "001_a53bc6faf6cc4263.txt"
needs_course = pytest.mark.skipif(not COURSE.exists(), reason="the course's documents are in ../shared/course")


def flat(text: str) -> str:
    return " ".join(text.split())


def verdict(qid: str, **given) -> dict:
    return checks.check(qid, {k: str(v) for k, v in given.items()}).to_json()


# ---- the handout's words ---------------------------------------------------------------------------
@needs_course
def test_every_entry_quotes_the_handout_verbatim():
    handout = flat(HANDOUT.read_text())
    for q in questions.QUESTIONS:
        for line in q.quote:
            assert flat(line) in handout, (q.id, line)


@needs_course
def test_every_exercise_and_question_of_part_b_has_an_entry():
    lines = HANDOUT.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if "PART B: POST-CLASS" in line)
    quoted = " | ".join(flat(line) for q in questions.QUESTIONS for line in q.quote)
    asked = [line for line in lines[start:] if line.startswith(("Q:", "Exercise:"))]
    assert len(asked) >= 16
    assert [line for line in asked if flat(line) not in quoted] == []
    assert {q.id[:2] for q in questions.QUESTIONS if q.id.startswith("B")} == {f"B{i}" for i in range(1, 8)}
    assert {"A1", "A2.1", "A2.2", "A3.1", "A4", "A5"} <= set(questions.ids())


@needs_course
def test_what_the_workbook_says_the_course_says_is_quoted_from_it():
    course = flat(" ".join(p.read_text() for p in sorted(COURSE.glob("00*.txt"))))
    texts = list(model_answers.MODEL_ANSWERS.values()) + [facts.course_recipe()["markdown"],
                                                          facts.task_matches()["markdown"]]
    quoted = [q for text in texts for q in re.findall(r"“([^”]+)”", text)]
    assert len(quoted) >= 8
    assert [q for q in quoted if flat(q) not in course] == []


# ---- the checks against independent computations -------------------------------------------------------
def test_b2_softmax_by_hand_is_right_and_a_wrong_probability_is_not():
    exps = [math.exp(x) for x in facts.B2_LOGITS]
    by_hand = {w: e / sum(exps) for w, e in zip(facts.B2_WORDS, exps)}
    assert verdict("B2.1", **{w: f"{p:.3f}" for w, p in by_hand.items()})["verdict"] == "right"
    assert verdict("B2.1", **{w: f"{100 * p:.1f}%" for w, p in by_hand.items()})["verdict"] == "right"
    wrong = dict(by_hand, slept=by_hand["slept"] + 0.02)
    result = verdict("B2.1", **{w: f"{p:.3f}" for w, p in wrong.items()})
    assert result["verdict"] == "wrong" and result["fields"]["slept"] == "wrong" and result["fields"]["sat"] == "right"


def test_b3_one_step_equals_sgd_and_the_handouts_sign_is_wrong():
    theta = torch.tensor(0.5, requires_grad=True)
    loss = -torch.log(torch.sigmoid(theta * 2.0))
    loss.backward()
    grad = (torch.sigmoid(torch.tensor(1.0)) - 1) * 2.0  # (p − y)·x by hand
    assert float(theta.grad) == pytest.approx(float(grad), abs=1e-6)
    descent = 0.5 - 0.1 * float(grad)
    step = facts.one_sgd_step()
    assert step["theta_new"] == pytest.approx(descent, abs=1e-7)
    assert step["loss_after"] < step["loss"] < step["handout_loss_after"]
    assert verdict("B3.1", sign="−", theta=f"{descent:.4f}")["verdict"] == "right"
    handout = verdict("B3.1", sign="+", theta=f"{0.5 + 0.1 * float(grad):.4f}")
    assert handout["verdict"] == "wrong" and handout["fields"] == {"sign": "wrong", "theta": "wrong"}


def test_b1_masking_average_is_the_binomials_and_the_handouts_one_token_is_wrong():
    from transformers import DataCollatorForLanguageModeling

    draws = facts.masking_draws("The quick brown fox jumps")
    assert draws.expected == pytest.approx(5 * 0.15)
    assert draws.mean_chosen == pytest.approx(0.75, abs=0.06)  # 2,000 draws: ± 3 standard errors
    assert draws.histogram[0] == pytest.approx(0.85 ** 5, abs=0.04)
    assert draws.split["[MASK]"] == pytest.approx(0.8, abs=0.05)
    # the collator itself, seeded the same way, chooses what the workbook counted
    from labs.core.models import models

    tokenizer = models.load_tokenizer(draws.tokenizer)
    ids = tokenizer("The quick brown fox jumps")["input_ids"]
    batch = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15, seed=0)(
        [{"input_ids": list(ids)} for _ in range(facts.DRAWS)])
    assert float((batch["labels"] != -100).sum(dim=1).float().mean()) == pytest.approx(draws.mean_chosen)
    assert verdict("B1.1", expected="0.75")["verdict"] == "right"
    assert verdict("B1.1", expected="1")["verdict"] == "wrong"


@pytest.mark.parametrize("n", [1, 6, 37])
def test_b1_connections_are_n_squared_and_the_triangle(n):
    assert verdict("B1.2", n=n, bert=n * n, gpt=n * (n + 1) // 2)["verdict"] == "right"
    swapped = verdict("B1.2", n=n + 1, bert=n * n, gpt=n * (n + 1) // 2)
    assert swapped["verdict"] == "wrong"


def test_b6_lora_count_equals_a_hand_count_and_both_percentages_are_accepted():
    lora = facts.lora_counts()
    assert lora["trainable"] == 768 * 16 + 16 * 768
    assert verdict("B6.1", trainable="24,576", percent="4.17")["verdict"] == "right"
    assert verdict("B6.1", trainable="24576", percent="0.0072%")["verdict"] == "right"
    assert verdict("B6.1", trainable="589824", percent="100")["verdict"] == "wrong"  # the whole matrix


def test_b6_carbon_and_a5_costs_by_hand():
    share = 10 / 1287
    assert verdict("B6.2", co2=552 * share, cost=4.6e6 * share, savings=100 * (1 - share))["verdict"] == "right"
    assert verdict("B6.2", co2=552, cost=4.6e6, savings=0)["verdict"] == "wrong"
    assert verdict("A5", scratch_total="$2,500,000", shared_total="1,050,000", saved="1450000")["verdict"] == "right"
    assert verdict("A5", scratch_total="2500000", shared_total="1010000", saved="1490000")["verdict"] == "wrong"


def test_b4_parameters_counted_on_the_meta_device_and_the_table_cells():
    counts = facts.architecture_table()["counts"]
    assert 330e6 < counts["BERT"] < 340e6 and 1.5e9 < counts["GPT"] < 1.6e9 and 11e9 < counts["T5"] < 11.5e9
    right = verdict("B4.1", bert_best="classification and NER", t5_best="translation", gpt_objective="next-token prediction",
                    gpt_architecture="decoder", gpt_context="left-to-right", t5_context="bidirectional encoder")
    assert right["verdict"] == "right"
    wrong = verdict("B4.1", bert_best="generation", t5_best="translation", gpt_objective="MLM",
                    gpt_architecture="encoder-decoder", gpt_context="bidirectional", t5_context="bidirectional")
    assert wrong["fields"] == {"bert_best": "wrong", "t5_best": "right", "gpt_objective": "wrong",
                               "gpt_architecture": "wrong", "gpt_context": "wrong", "t5_context": "right"}
    matched = verdict("B4.2", sentiment="BERT", generation="GPT", qa="BERT", translation="T5", summarization="T5",
                      ner="bert")
    assert matched["verdict"] == "right"
    assert verdict("B4.2", sentiment="GPT", generation="GPT", qa="BERT", translation="T5", summarization="T5",
                   ner="BERT")["fields"]["sentiment"] == "wrong"


def test_b5_the_courses_ranges_and_generates_greedy_parameter():
    good = verdict("B5.1", requires_grad="False", lr="2e-5", batch=16, epochs=3, warmup=4, decay=0.01)
    assert good["verdict"] == "right"
    too_high = verdict("B5.1", requires_grad="False", lr="1e-2", batch=16, epochs=3, warmup=4, decay=0.01)
    assert too_high["fields"]["lr"] == "wrong"
    assert verdict("B5.2", greedy="do_sample=False", temperature=0.7, beams=5)["verdict"] == "right"
    assert verdict("B5.2", greedy="num_beams=1", temperature=1, beams=4)["verdict"] == "right"
    assert verdict("B5.2", greedy="greedy=True", temperature=0, beams=1)["fields"] == {
        "greedy": "wrong", "temperature": "wrong", "beams": "wrong"}


def test_temperature_shapes_follow_the_entropy():
    shapes = facts.temperature_shapes(facts.B2_LOGITS)
    assert shapes[0.5]["entropy"] < shapes[1.0]["entropy"] < shapes[2.0]["entropy"]
    assert verdict("B2.2b", t05="sharper", t10="unchanged", t20="flatter, more random")["verdict"] == "right"
    assert verdict("B2.2b", t05="more random", t10="same", t20="more confident")["fields"]["t05"] == "wrong"


# ---- bad input ----------------------------------------------------------------------------------------
def test_bad_input_gets_a_sentence():
    with pytest.raises(BadInput, match="not a number"):
        checks.check("B2.1", {"sat": "about half"})
    with pytest.raises(BadInput, match="10,000 characters"):
        checks.check("B7.1", {"l1": "x" * 10_000})
    with pytest.raises(BadInput, match="no question"):
        checks.check("B9", {})
    api = workbook.check_part_b({"B2.1": {"sat": "about half"}, "B7.2": {"answer": "it copies the data"}})
    assert [r["verdict"] for r in api["results"]] == ["wrong", "open"]
    assert "not a number" in api["results"][0]["evidence"]
    with pytest.raises(BadInput):
        workbook.check_part_b("not json")
    with pytest.raises(BadInput, match="learning rate"):
        evidence.schedule_settings({"lr": "1e9"}, "B3.2")
    with pytest.raises(BadInput):
        tab.on_check("B2.1", "0.5", "x", "", "", "", "", "", {"answers": {}})


def test_schedules_become_the_fine_tune_labs_settings():
    lr, settings, _ = evidence.schedule_settings({"lr": "3e-5", "warmup": "4", "decay": "linear",
                                                  "freeze": "bottom 4 layers"}, "B3.2")
    assert lr == 3e-5 and settings == {"strategy": "freeze_bottom_4", "warmup_ratio": round(4 / 39, 4)}
    _, settings, _ = evidence.schedule_settings({"lr": "2e-5", "decay": "layer-wise", "freeze": "no"}, "B3.2")
    assert settings["strategy"] == "llrd_0.95"
    _, settings, _ = evidence.schedule_settings({"requires_grad": "False", "lr": "2e-5", "batch": "32",
                                                 "epochs": "2", "warmup": "4", "decay": "0.01"}, "B5.1")
    assert settings == {"strategy": "freeze_embeddings", "batch_size": 32, "epochs": 2, "weight_decay": 0.01,
                        "warmup_ratio": round(4 / 14, 4)}  # 200 reviews in batches of 32: 7 steps an epoch


# ---- runs: the labs' own endpoints -----------------------------------------------------------------------
@pytest.fixture
def lab_services():
    """The endpoints the workbook calls, as app.py's build offers them: the two labs' own declarations."""
    services.offer(e for lab in ("finetune", "next_token") for e in declared_endpoints(lab))


async def collect(qid: str, given: dict) -> list[str]:
    return [text async for text in evidence.evidence(qid, given)]


def test_a_server_without_the_lab_says_so_in_the_evidence(monkeypatch):
    """Built without Next token, the workbook's evidence names the missing lab instead of failing."""
    services.offer(declared_endpoints("part_b"))
    monkeypatch.setattr(evidence.models, "default_name", lambda family: "a-causal-lm")  # no model is loaded
    shown = run_async(collect("A3.1", {}), timeout=60)[-1]
    assert "Not measured here" in shown and evidence.md("This server runs without the lab behind 'next_token'") in shown


@pytest.mark.slow
def test_b5_2_generations_equal_generate_with_the_same_parameters(lab_services):
    from labs.core.models import models

    shown = run_async(collect("B5.2", {"temperature": "0.7", "beams": "3"}), timeout=600)[-1]
    loaded = models.load(models.default_name("causal"), "causal")
    ids = loaded.tokenizer("Once upon a time", return_tensors="pt")
    for kwargs in ({"do_sample": False}, {"num_beams": 3, "do_sample": False, "early_stopping": True}):
        out = loaded.model.generate(**ids, max_new_tokens=40, pad_token_id=loaded.tokenizer.eos_token_id, **kwargs)
        text = loaded.tokenizer.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)
        assert evidence.md(evidence.one_line(text)) in shown, (kwargs, shown[:900])
    assert "A model answer" in shown


@pytest.mark.slow
def test_b5_1_run_is_the_fine_tune_labs_run_beside_1e_2(lab_services):
    from labs.finetune import training

    given = {"requires_grad": "False", "lr": "5e-5", "batch": "16", "epochs": "1", "warmup": "2", "decay": "0.01"}
    assert facts.run_steps(16, 1) == 13
    shown = run_async(collect("B5.1", given), timeout=900)[-1]
    rows = [line for line in shown.splitlines() if line.startswith(("| yours", "| too high"))]
    assert len(rows) == 2
    s, data, scratch = training.api_settings(evidence.models.default_name("encoder", "masked"), "freeze_embeddings",
                                             5e-5, 1, 16, 200, 0, False, "sentiment", "", round(2 / 13, 4), 0.01)
    results = [e for e in training.run_experiment(s, data, scratch) if isinstance(e, training.RunResult)]
    alone = training.experiment_json(results)  # the same run, alone, not through the shared jobs
    assert f"{alone['accuracy_before']:.0%} → **{alone['accuracy_after']:.0%}**" in rows[0]
    assert "| 0.01 |" in rows[1]


# ---- the API and the page --------------------------------------------------------------------------------
def test_api_lists_the_questions_and_judges_a_workbook(client):
    listed = client.predict(api_name="/part_b_questions")
    assert [q["id"] for q in listed["questions"]] == questions.ids()
    b61 = next(q for q in listed["questions"] if q["id"] == "B6.1")
    assert b61["tolerance"] and "BERT-large" in b61["erratum"] and "ERRATA" not in b61["erratum"]  # the erratum itself
    judged = client.predict({"B3.1": {"sign": "+", "theta": "0.446"}, "B6.1": {"trainable": "24576",
                                                                                "percent": "4.17"}},
                            api_name="/check_part_b")
    assert [(r["id"], r["verdict"]) for r in judged["results"]] == [("B3.1", "wrong"), ("B6.1", "right")]
    assert judged["versions"]["transformers"]


def test_a_student_keeps_their_answers_and_downloads_them(page, app_server):
    page.goto(app_server["url"] + "?tab=part_b&q=B6.1")
    card = page.locator("#lab-part-b-card")
    card.get_by_text("Calculate parameter savings with LoRA").wait_for(timeout=60000)
    page.get_by_label("Trainable parameters").fill("24576")
    page.get_by_label("Percentage of original (%)").fill("4.17")
    page.get_by_role("button", name="Check", exact=True).click()
    page.locator("#lab-part-b-verdict").get_by_text("✓ right").wait_for(timeout=60000)
    page.reload()
    page.locator("#lab-part-b-card").get_by_text("Calculate parameter savings with LoRA").wait_for(timeout=60000)
    wait_until(lambda: page.get_by_label("Trainable parameters").input_value() == "24576", timeout=60)
    with page.expect_download(timeout=60000) as download:
        page.get_by_role("button", name="Download my workbook").click()
    text = Path(download.value.path()).read_text()
    assert "B6.1" in text and "24576" in text and "✓ right" in text
    assert all(f"## {qid} " in text for qid in questions.ids())


def test_the_tab_opens_on_the_linked_question(page):
    open_tab(page, tab.TITLE)
    page.locator("#lab-part-b-card").get_by_text("The Learning Problem").wait_for(timeout=60000)
    page.get_by_role("button", name="Next ▶").click()
    page.locator("#lab-part-b-card").get_by_text("The Fill-in-the-Blank Game").wait_for(timeout=60000)


def test_report_holds_every_answer_and_escapes_it():
    kept = {"B7.2": {"answer": "<b>bias</b> *in* data"}, "B2.1": {"sat": "0.58"}}
    text = workbook.report(workbook.clean(json.dumps(kept)))
    assert "&lt;b&gt;bias&lt;/b&gt;" in text and "<b>" not in text
    assert "0\\.58" in text and "✗ not yet" in text
