"""Peer instruction's other parts: how sure each student is (confidence), the lecturer's countdown (a late answer is
refused, never stored) and the lecture's questions prepared ahead and asked in order with one click, kept across
a restart; and the model's guesses that are only the start of a word ("cou…"). Counts are checked against hand
counts, the pieces against the model's own greedy continuation (transformers' generate). On a real SQLite database."""

from __future__ import annotations

import json

import pytest
from test_classroom import fresh_store  # noqa: F401  (autouse: each test on its own SQLite file)

from labs.classroom import plans, presets, results, second_vote, sessions, timer
from labs.classroom import store as stores
from labs.core.errors import BadInput, LabError


def started():
    start = sessions.class_start("Week 6")
    return start["lecturer_key"], start["code"]


def look_again():
    sessions._snapshots.clear()  # the next look reads the database, as another front-end's would


# ------------------------------------------------------------------ confidence


SENT = [("student-0001", "B", 4), ("student-0002", "B", 3), ("student-0003", "A", "guessing"),
        ("student-0004", "A", 2), ("student-0005", "B", None), ("student-0006", "C", "sure")]


def test_confidence_is_kept_with_each_answer_and_shown_per_answer_and_for_right_and_wrong():
    key, code = started()
    sessions.class_ask(key, "choice", "Which model reads both sides of a blank?", choices="GPT-2\nBERT\nT5",
                       correct="BERT")
    for student, answer, sure in SENT:
        sent = sessions.class_answer(code, student, answer, sure)
    assert sent["confidence"] == 4  # "sure" is level 4
    revealed = sessions.class_reveal(key)
    rows = {r["answer"]: r for r in revealed["class"]}
    # Hand counts: BERT: levels 4 and 3 (and one who did not say); GPT-2: 1 and 2; T5: 4.
    assert rows["BERT"]["confidence"] == [0, 0, 1, 1] and rows["BERT"]["mean_confidence"] == 3.5
    assert rows["GPT-2"]["confidence"] == [1, 1, 0, 0] and rows["GPT-2"]["mean_confidence"] == 1.5
    summary = revealed["confidence"]
    assert summary["answered"] == 5 and summary["levels"] == [1, 1, 1, 2]
    assert summary["mean"] == pytest.approx((1 + 2 + 3 + 4 + 4) / 5)
    assert summary["mean_right"] == 3.5 and summary["mean_wrong"] == pytest.approx((1 + 2 + 4) / 3)
    mine = sessions.class_state(code, "student-0003")
    assert mine["your_confidence"] == 1 and mine["results"]["confidence"]["answered"] == 5


@pytest.mark.parametrize("sure", [0, 5, "very", "2.5", True, [3]])
def test_a_confidence_off_the_scale_is_refused_and_nothing_is_stored(sure):
    key, code = started()
    sessions.class_ask(key, "number", "How many layers has BERT-base?")
    with pytest.raises(BadInput, match="How sure you are is one of 1 \\(guessing\\)"):
        sessions.class_answer(code, "student-0001", "12", sure)
    assert sessions.db().count(sessions.db().session_by_code(code).current_question) == 0


# ------------------------------------------------------------------ the timer


def test_at_zero_answering_closes_a_late_answer_is_not_stored_and_more_time_reopens_it(monkeypatch):
    key, code = started()
    clock = [1_000_000.0]
    monkeypatch.setattr(sessions, "now", lambda: clock[0])
    question = sessions.class_ask(key, "number", "How many parameters has SmolLM2-135M, in millions?")["question_id"]
    assert timer.class_timer(key, 60)["closes_in"] == 60
    sessions.class_answer(code, "student-0001", "135")
    assert sessions.class_state(code)["question"]["closes_in"] == 60
    clock[0] += 60.5
    look_again()
    assert sessions.class_state(code)["question"]["closes_in"] == 0
    with pytest.raises(BadInput, match="Time is up"):
        sessions.class_answer(code, "student-0002", "100")
    with pytest.raises(BadInput, match="Time is up"):  # changing an answer after time is up: refused too
        sessions.class_answer(code, "student-0001", "140")
    assert sessions.db().tally(question) == [("135", "135", 1)]
    assert timer.class_timer(key, 30, "add")["closes_in"] == 30  # after time is up: 30 s from now
    look_again()
    sessions.class_answer(code, "student-0002", "100")
    assert timer.class_timer(key, 30, "add")["closes_in"] == 60  # before: 30 s more
    assert timer.class_timer(key, 0, "stop")["closes_in"] is None
    clock[0] += 3600
    look_again()
    sessions.class_answer(code, "student-0003", "135")  # no timer: open until the reveal
    assert sessions.db().count(question) == 3


def test_the_database_refuses_a_late_answer_even_when_a_front_end_has_not_seen_the_timer(monkeypatch):
    key, code = started()
    question = sessions.class_ask(key, "number", "How many heads has BERT-base?")["question_id"]
    sessions.class_state(code)  # this front-end's snapshot: no timer yet
    session_id = sessions.db().session_by_code(code).id
    # Another front-end's timer ran out a second ago; this one's snapshot (a second old at most) does not know.
    sessions.db().set_question(session_id, question, sessions.now(), closes_at=sessions.now() - 1)
    with pytest.raises(stores.TimeUp, match="Time is up"):
        sessions.class_answer(code, "student-0001", "12")
    assert sessions.db().count(question) == 0


@pytest.mark.parametrize("seconds, action, message", [(60, "pause", "one of start, add, stop"),
                                                      (2, "start", "from 5 to 3600"),
                                                      ("soon", "start", "whole number")])
def test_a_timer_the_tool_cannot_run_is_refused(seconds, action, message):
    key, code = started()
    with pytest.raises(BadInput, match="no open question"):
        timer.class_timer(key, 60)
    sessions.class_ask(key, "number", "How many heads has BERT-base?")
    with pytest.raises(BadInput, match=message):
        timer.class_timer(key, seconds, action)
    student = sessions.class_join(code)["student_id"]
    for wrong in (student, code, "", None):
        with pytest.raises(LabError, match="Only the lecturer"):
            timer.class_timer(wrong, 60)


# ------------------------------------------------------------------ prepared questions


def choice(text, right, *others, link=""):
    return {"kind": "choice", "text": text, "choices": [right, *others], "correct": right, "link": link}


PLAN = [choice("Which model reads both sides of a blank?", "BERT", "GPT-2", link="?tab=fill_mask"),
        {"kind": "number", "text": "LoRA r = 16 on one 768 × 768 weight: trainable parameters?", "correct": "24576"},
        choice("Which objective is GPT-2's?", "Next token", "Masked LM")]


def test_prepared_questions_are_asked_in_order_with_one_click_each_and_survive_a_restart():
    key, code = started()
    loaded = plans.class_plan(key, json.dumps(PLAN))
    assert [q["text"] for q in loaded["questions"]] == [q["text"] for q in PLAN] and loaded["next"] == 0
    first = plans.class_next(key)
    assert first["text"] == PLAN[0]["text"] and first["prepared"] == 1 and first["left"] == 2
    assert first["settings"]["link"] == "?tab=fill_mask"  # the projector links to the lab it comes from
    sessions.class_answer(code, "student-0001", "BERT")
    stores.reset()  # a restart of the app: the plan and its position are in the database
    look_again()
    second = plans.class_next(key)
    assert second["text"] == PLAN[1]["text"] and second["correct"] == "24576"
    state = sessions.class_state(code)
    assert state["question"]["number"] == 2 and state["question"]["kind"] == "number"
    assert sessions.class_overview(key)["plan"]["next"] == 2
    third = plans.class_next(key)
    assert third["left"] == 0 and third["correct"] == "Next token"
    assert plans.class_next(key)["question"] is None  # after the last one: between questions
    assert [q["text"] for q in sessions.class_overview(key)["history"]] == [q["text"] for q in PLAN]


def test_adding_a_question_mid_lecture_keeps_the_lectures_place():
    key, _ = started()
    plans.class_plan(key, PLAN[:2])
    plans.class_next(key)
    grown = plans.class_plan(key, sessions.class_overview(key)["plan"]["questions"] + [PLAN[2]])
    assert grown["next"] == 1 and grown["left"] == 2
    replaced = plans.class_plan(key, [PLAN[2]])  # another lecture's questions: from its first
    assert replaced["next"] == 0


def test_a_plan_with_one_bad_question_imports_nothing_and_says_which():
    key, _ = started()
    plans.class_plan(key, PLAN)
    bad = [PLAN[0], {"kind": "choice", "text": "Only one option?", "choices": ["yes"]}]
    with pytest.raises(BadInput, match="Prepared question 2: A multiple-choice question has 2 to 6 options"):
        plans.class_plan(key, bad)
    with pytest.raises(BadInput, match="link"):
        plans.class_plan(key, [{**PLAN[0], "link": "javascript:alert(1)"}])
    assert [q["text"] for q in sessions.class_overview(key)["plan"]["questions"]] == [q["text"] for q in PLAN]


def test_the_handouts_part_a_is_a_ready_made_plan():
    key, _ = started()
    loaded = plans.class_plan(key, plans.HANDOUT)
    assert [q["text"] for q in loaded["questions"]] == [p.text for p in presets.PRESETS]
    assert [q["kind"] for q in loaded["questions"]] == [p.kind for p in presets.PRESETS]


def test_offline_without_a_masked_lm_the_handouts_other_questions_are_prepared(monkeypatch):
    key, _ = started()
    offered = sessions.models.default_name
    monkeypatch.setattr(sessions.models, "default_name", lambda family: None if family == "masked" else offered(family))
    loaded = plans.class_plan(key, plans.HANDOUT)
    assert [q["text"] for q in loaded["questions"]] == [p.text for p in presets.PRESETS if p.kind != "fill_mask"]


def test_a_plan_exported_and_imported_again_is_the_same_lecture():
    key, _ = started()
    plans.class_plan(key, PLAN)
    for form in ("csv", "gift", "xml"):
        exported = plans.class_plan(key, export=form)
        assert exported["filename"].startswith("lm-lab-lecture-")
        other, _ = started()
        assert plans.class_plan(other, exported["file"])["questions"] == exported["questions"], form


# ------------------------------------------------------------------ a restart between two rounds


def test_a_restart_between_the_two_rounds_loses_no_answer_and_time_up_holds_in_round_two(monkeypatch):
    key, code = started()
    first = sessions.class_ask(key, "choice", "Which model reads both sides?", choices="BERT\nGPT-2",
                               correct="BERT")["question_id"]
    for i, answer in enumerate(["GPT-2", "GPT-2", "BERT"]):
        sessions.class_answer(code, f"student-{i:04d}", answer, 2)
    second_vote.class_round(key)
    stores.reset()  # the Space restarts between the two votes
    look_again()
    sessions.class_answer(code, "student-0000", "BERT", 4)
    assert sessions.class_state(code, "student-0000")["your_first_answer"] == "GPT-2"
    timer.class_timer(key, 30)
    clock = sessions.now() + 31
    monkeypatch.setattr(sessions, "now", lambda: clock)
    look_again()
    with pytest.raises(BadInput, match="Time is up"):
        sessions.class_answer(code, "student-0001", "BERT")
    revealed = sessions.class_reveal(key)
    assert revealed["rounds"]["first"]["total"] == 3 and revealed["total"] == 1
    assert revealed["rounds"]["changed"] == 1 and sessions.db().count(first) == 3


def test_a_page_still_showing_the_first_vote_cannot_answer_the_second():
    """A student's page sends the question it shows: once the lecturer has opened the second vote, an answer from a
    page that has not drawn it yet is refused (and stored in neither vote); from the page that shows it, taken."""
    key, code = started()
    first = sessions.class_ask(key, "choice", "Which model reads both sides?", choices="BERT\nGPT-2")["question_id"]
    sessions.class_answer(code, "student-0001", "GPT-2", None, first)
    second = second_vote.class_round(key)["question_id"]
    with pytest.raises(BadInput, match="The lecturer has moved on"):
        sessions.class_answer(code, "student-0001", "BERT", 4, first)
    assert sessions.db().tally(first) == [("gpt-2", "GPT-2", 1)] and sessions.db().count(second) == 0
    assert sessions.class_answer(code, "student-0001", "BERT", 4, second)["question_id"] == second
    with pytest.raises(BadInput, match="question id"):
        sessions.class_answer(code, "student-0001", "BERT", 4, "the second")


# ------------------------------------------------------------------ the model's word pieces


def test_a_guess_that_starts_a_longer_word_is_shown_as_a_piece():
    """SmolLM2 after "The cat sat on the": " cou" is one of its guesses, the start of "couch"; greedy decoding with
    transformers' own generate, given it, goes on with the same word (no space), as the note says."""
    import torch

    from labs.classroom import scoring
    from labs.core.models import models

    name = models.default_name("causal")
    if "SmolLM2" not in (name or ""):
        pytest.skip("needs the offline SmolLM2")
    side = scoring.score("next_token", "The cat sat on the", name, 10, [("mat", "mat", 1)])
    loaded = models.load(name, "causal")
    tokenizer = loaded.tokenizer
    model = loaded.model  # its weights, run through transformers' own generate
    for top in side["model_top"][:5]:
        ids = tokenizer("The cat sat on the", return_tensors="pt")["input_ids"]
        ids = torch.cat([ids, torch.tensor([[top["token_id"]]])], dim=1)
        with torch.no_grad():
            after = model.generate(ids, max_new_tokens=1, do_sample=False)[0, -1]
        goes_on = tokenizer.decode([int(after)])[:1].isalpha()
        assert top["piece"] == (goes_on and top["answer"].strip().isalpha()), top["answer"]
    shown = {t["answer"].strip(): results.shown_guess(t) for t in side["model_top"]}
    assert shown["cou"] == "cou…" and shown["couch"] == "couch"
