"""Peer instruction's second vote (`/class_round`): the same question again after the students discussed it, its
answers kept apart from the first vote's; the reveal shows both votes, who changed their answer and whether the
class moved towards the right answer or the model, checked against hand counts and the model's own probabilities;
a class database kept from before the second vote existed is migrated. On a real SQLite database (PostgreSQL:
tests/test_classroom_api.py)."""

from __future__ import annotations

import csv
import io
import math

import pytest
import sqlalchemy as sa
from test_classroom import fresh_store  # noqa: F401  (autouse: each test on its own SQLite file)

from labs.classroom import records, scoring, second_vote, sessions
from labs.classroom import store as stores
from labs.core.errors import BadInput, LabError
from labs.core.work import services


def answer_all(code: str, given: dict[str, str]) -> None:
    for student, answer in given.items():
        sessions.class_answer(code, student, answer)
    sessions._snapshots.clear()  # the next look reads the database, as another front-end's would


FIRST = {"student-0001": "BERT", "student-0002": "GPT-2", "student-0003": "GPT-2", "student-0004": "T5",
         "student-0005": "GPT-2", "student-0006": "BERT"}
SECOND = {"student-0001": "BERT", "student-0002": "BERT", "student-0003": "GPT-2", "student-0004": "BERT",
          "student-0005": "BERT", "student-0007": "BERT"}  # 0006 did not vote again; 0007 voted only now


def test_a_second_vote_keeps_the_first_and_the_reveal_shows_both():
    start = sessions.class_start("Week 6")
    key, code = start["lecturer_key"], start["code"]
    first = sessions.class_ask(key, "choice", "Which model reads both sides of a blank?", choices="BERT\nGPT-2\nT5",
                               correct="BERT")
    answer_all(code, FIRST)
    second = second_vote.class_round(key)
    assert second["round"] == 2 and second["first_round"] == first["question_id"] != second["question_id"]
    assert (second["text"], second["choices"], second["correct"]) == (first["text"], first["choices"], "BERT")
    # A phone now shows the second vote, its first answer beside the box, and nothing of the others' answers.
    state = sessions.class_state(code, "student-0002")
    assert state["question"]["round"] == 2 and state["your_first_answer"] == "GPT-2"
    assert state["your_answer"] is None and state["answers"] == 0 and state["results"] is None
    assert sessions.class_state(code, "student-0007")["your_first_answer"] is None
    answer_all(code, SECOND)
    revealed = sessions.class_reveal(key)
    assert {h["label"]: h["count"] for h in revealed["histogram"]} == {"BERT": 5, "GPT-2": 1, "T5": 0}
    rounds = revealed["rounds"]
    # By hand: five students voted twice (0001–0005); 0002, 0004 and 0005 changed their answer.
    assert (rounds["voted_twice"], rounds["changed"]) == (5, 3)
    assert rounds["first_figures"]["answers"] == 6 and rounds["first_figures"]["share"] == pytest.approx(2 / 6)
    assert rounds["second_figures"]["answers"] == 6 and rounds["second_figures"]["share"] == pytest.approx(5 / 6)
    assert (rounds["measured_by"], rounds["moved"]) == ("share", "towards")
    assert {h["label"]: h["count"] for h in rounds["first"]["histogram"]} == {"BERT": 2, "GPT-2": 3, "T5": 1}
    # Both votes stay stored, under one number; a student's page after the reveal has both too.
    history = sessions.class_overview(key)["history"]
    assert [(q["number"], q["round"], q["answers"]) for q in history] == [(1, 1, 6), (1, 2, 6)]
    student = sessions.class_state(code, "student-0004")
    assert student["results"]["you"]["answer"] == "BERT" and student["results"]["rounds"]["changed"] == 3
    exported = list(csv.DictReader(io.StringIO(records.class_export(key)["csv"])))
    assert {(row["vote"], row["answer"]): int(row["count"]) for row in exported} == {
        ("1", "BERT"): 2, ("1", "GPT-2"): 3, ("1", "T5"): 1, ("2", "BERT"): 5, ("2", "GPT-2"): 1}
    # The next question is number 2, of one vote.
    assert sessions.class_ask(key, "number", "How many heads has BERT-base?")["question_id"]
    assert sessions.class_overview(key)["history"][-1]["number"] == 2


def test_a_second_vote_before_the_first_is_revealed_reveals_both_at_once():
    start = sessions.class_start()
    key, code = start["lecturer_key"], start["code"]
    sessions.class_ask(key, "number", "How many tokens in 'unbelievable'?", correct="3")
    answer_all(code, {"student-0001": "3", "student-0002": "4", "student-0003": "4"})
    second_vote.class_round(key)
    answer_all(code, {"student-0001": "3", "student-0002": "3", "student-0003": "4"})
    rounds = sessions.class_reveal(key)["rounds"]
    assert rounds["first"]["agreement"]["right_count"] == 1 and rounds["first"]["question"]["revealed"]
    assert rounds["first_figures"]["share"] == pytest.approx(1 / 3)
    assert rounds["second_figures"]["share"] == pytest.approx(2 / 3)
    assert (rounds["voted_twice"], rounds["changed"], rounds["moved"]) == (3, 1, "towards")


def test_what_a_second_vote_refuses():
    start = sessions.class_start()
    key, code = start["lecturer_key"], start["code"]
    with pytest.raises(BadInput, match="no current question"):
        second_vote.class_round(key)
    sessions.class_ask(key, "choice", "Pick one", choices="A\nB")
    with pytest.raises(BadInput, match="Nobody has answered"):
        second_vote.class_round(key)
    answer_all(code, {"student-0001": "A"})
    with pytest.raises(LabError, match="Only the lecturer"):
        second_vote.class_round(code)  # the join code is not the lecturer's key
    second_vote.class_round(key)
    answer_all(code, {"student-0001": "B"})
    with pytest.raises(BadInput, match="had its second vote"):
        second_vote.class_round(key)  # no third vote
    sessions.class_reveal(key)
    with pytest.raises(LabError, match="revealed"):
        sessions.class_answer(code, "student-0002", "A")  # nor an answer after the reveal, in either vote
    sessions.class_close(key)
    with pytest.raises(BadInput, match="ended"):
        second_vote.class_round(key)


def test_an_answer_taken_off_the_projector_is_off_in_both_votes_and_rare_ones_are_grouped_in_both():
    start = sessions.class_start()
    key, code = start["lecturer_key"], start["code"]
    sessions.class_ask(key, "choice", "Pick", choices="A\nB\nC")
    answer_all(code, {"student-0001": "A", "student-0002": "A", "student-0003": "B", "student-0004": "C"})
    second_vote.class_round(key)
    answer_all(code, {"student-0001": "A", "student-0002": "B", "student-0003": "B", "student-0004": "C"})
    sessions.class_hide(key, "C")
    revealed = sessions.class_reveal(key)
    first = revealed["rounds"]["first"]
    assert (revealed["hidden"], first["hidden"]) == (1, 1)  # C, once in each vote
    assert [r["answer"] for r in first["class"]] == ["A"] and first["other"] == {"answers": 1, "count": 1}  # B: 1 < 2


def test_the_class_moves_towards_the_model_by_its_mean_log_probability(tiny_models):
    text = "The [MASK] sat on the mat."
    top = services.get("fill_mask")(text, tiny_models["masked"], 5)["masks"][0]["predictions"]
    favourite = top[0]["token"]
    start = sessions.class_start()
    key, code = start["lecturer_key"], start["code"]
    sessions.class_ask(key, "fill_mask", text, tiny_models["masked"], top_k=5)
    answer_all(code, {"student-0001": "cat", "student-0002": "dog", "student-0003": "cat"})
    second_vote.class_round(key)
    answer_all(code, {"student-0001": favourite, "student-0002": favourite, "student-0003": "cat"})
    sessions.class_min_count(key, 1)  # every answer on its own row, the rare ones too
    revealed = sessions.class_reveal(key)
    rounds = revealed["rounds"]
    # The oracle: each vote's mean of log p(answer), one term per student, from the model's own probabilities.
    probs = {r["answer"]: r["model_prob"] for r in revealed["class"] + rounds["first"]["class"]}
    before = (2 * math.log(probs["cat"]) + math.log(probs["dog"])) / 3
    after = (2 * math.log(probs[favourite]) + math.log(probs["cat"])) / 3
    assert rounds["first_figures"]["mean_logprob"] == pytest.approx(before, rel=1e-9)
    assert rounds["second_figures"]["mean_logprob"] == pytest.approx(after, rel=1e-9)
    on_favourite = [sum(scoring.model_key(w) == scoring.model_key(favourite) for w in vote) / 3
                    for vote in (("cat", "dog", "cat"), (favourite, favourite, "cat"))]
    assert [rounds["first_figures"]["share"], rounds["second_figures"]["share"]] == pytest.approx(on_favourite)
    assert rounds["measured_by"] == "mean_logprob"
    assert rounds["moved"] == ("towards" if after > before else "away")
    assert rounds["second_figures"]["class_favourite"] == favourite
    assert rounds["second_figures"]["class_favourite_model_rank"] == 1


def make_version_1(url: str) -> None:
    """A class database as LM Lab kept it before the second vote (schema version 1), with one question asked."""
    stores.Store(url).engine.dispose()
    engine = sa.create_engine(url)
    with engine.begin() as c:
        for table, column in (("class_questions", "vote_round"), ("class_questions", "first_round_id"),
                              ("class_questions", "closes_at"), ("class_answers", "confidence"),
                              ("class_sessions", "plan"), ("class_sessions", "plan_next")):
            c.execute(sa.text(f"ALTER TABLE {table} DROP COLUMN {column}"))
        c.execute(sa.text("UPDATE lab_meta SET value = '1' WHERE key = 'schema_version'"))
        c.execute(sa.text("INSERT INTO class_sessions (code, title, key_hash, created_at, active_at, min_count, "
                          "version) VALUES ('ABCDEF', 'kept', :key, 1, 1, 2, 0)"), {"key": "0" * 64})
        c.execute(sa.text("INSERT INTO class_questions (session_id, number, kind, text, model, settings, choices, "
                          "asked_at, hidden) VALUES (1, 1, 'number', 'How many?', '', '{}', '[]', 1, '[]')"))
    engine.dispose()


def check_migrated(url: str) -> None:
    """Opened by this LM Lab: version 3, the kept question a first vote without a timer, the kept class without
    prepared questions; a second vote on it and an answer with its confidence can be stored."""
    store = stores.Store(url)
    try:
        assert store.schema_version() == stores.SCHEMA_VERSION == 3
        kept = store.question(1)
        assert (kept.text, kept.vote_round, kept.first_round_id, kept.closes_at) == ("How many?", 1, None, None)
        session = store.session_by_code("ABCDEF")
        assert (session.plan, session.plan_next) == ("[]", 0)
        again = store.add_question(1, 2.0, kind="number", text=kept.text, model="", settings={}, choices=[],
                                   correct=None, first_round=kept)
        assert (store.second_round_of(1).id, store.question(again).number) == (again, 1)
        store.put_answer(again, "student-0001", "12", "12", 3.0, confidence=3)
        assert store.confidence_tally(again) == {"12": [0, 0, 1, 0]}
    finally:
        store.engine.dispose()


def test_a_class_database_from_before_the_second_vote_and_the_timer_is_migrated(tmp_path):
    url = f"sqlite:///{tmp_path / 'kept.sqlite3'}"
    make_version_1(url)
    check_migrated(url)
