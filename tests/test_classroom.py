"""Ask the class, the computation: answers made safe, sessions and keys, the reveal beside the model (checked
against the labs' own endpoints and a hand computation of the chain rule and of the masked-LM approximation),
on a real SQLite database."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import declared_endpoints

from labs.classroom import access, answers, records, results, scoring, sessions
from labs.classroom import store as stores
from labs.core.errors import BadInput, LabError
from labs.core.work import services


@pytest.fixture(autouse=True)
def fresh_store(tmp_path, monkeypatch):
    """Every test on its own SQLite file; the labs' endpoints offered as the app offers them."""
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("LAB_CLASS_DB", raising=False)
    stores.reset()
    sessions._snapshots.clear()
    access._failures.clear()
    services.offer(e for lab in ("fill_mask", "next_token", "part_b") for e in declared_endpoints(lab))
    yield
    stores.reset()


def started():
    return sessions.class_start("Week 6")


# ------------------------------------------------------------------ answers


@pytest.mark.parametrize("typed, shown, key", [
    ("  Mat. ", "Mat", "mat"), ("mat", "mat", "mat"), ("MAT!", "MAT", "mat"), ("ice\ncream", "ice cream", "ice cream"),
    ("don't", "don't", "don't"), ("“tea”", "tea", "tea"), ("self-attention", "self-attention", "self-attention")])
def test_words_are_one_trimmed_line_compared_case_folded(typed, shown, key):
    assert answers.word(typed) == (shown, key)


@pytest.mark.parametrize("typed, message", [
    ("", "Type your answer"), ("   ", "Type your answer"), ("x" * 41, "at most 40"), ("y" * 10_000, "10,000"),
    ("...", "not only punctuation"), (12, "must be text"), (None, "must be text")])
def test_bad_answers_are_refused_with_a_reason(typed, message):
    with pytest.raises(BadInput, match=message):
        answers.word(typed)


def test_invisible_and_control_characters_are_dropped():
    assert answers.word("ca\u200bt\x07")[0] == "cat"
    assert answers.word("\u202ereversed")[0] == "reversed"


@pytest.mark.parametrize("typed, key", [("1,287", "1287"), ("3.60", "3.6"), ("3.6 %", "3.6"), ("2e-5", "2e-05"),
                                        ("-4", "-4"), (12, "12"), (0.5, "0.5")])
def test_numbers_are_read_as_people_type_them(typed, key):
    assert answers.number(typed)[1] == key


def test_a_choice_is_its_text_its_letter_or_its_number():
    options = ["Encoder", "Decoder", "Encoder-decoder"]
    assert answers.choice("decoder", options) == ("Decoder", "decoder")
    assert answers.choice("C", options)[0] == "Encoder-decoder"
    assert answers.choice("1", options)[0] == "Encoder"
    with pytest.raises(BadInput, match="A: Encoder"):
        answers.choice("D", options)
    with pytest.raises(BadInput, match="2 to 6"):
        answers.options_of("only one")
    with pytest.raises(BadInput, match="the same"):
        answers.options_of(["a", "A"])


# ------------------------------------------------------------------ sessions and keys


def test_a_session_has_a_readable_code_a_join_link_and_a_lecturer_link():
    start = started()
    assert len(start["code"]) == 6 and not set(start["code"]) & set("0O1I")
    assert start["join_url"].endswith(f"/?class={start['code']}")
    assert start["lecturer_key"] in start["lecturer_url"] and start["lecturer_key"] not in start["join_url"]
    row = stores.get().session_by_code(start["code"])
    assert start["lecturer_key"] not in repr(tuple(row))  # only its hash is stored


def test_codes_are_accepted_as_people_type_them():
    code = started()["code"]
    typed = f" {code[:3].lower()}-{code[3:]} "
    assert sessions.class_join(typed)["code"] == code


def test_only_the_lecturer_key_acts_as_the_lecturer():
    start = started()
    student = sessions.class_join(start["code"])["student_id"]
    key = start["lecturer_key"]
    for not_the_key in (student, start["code"], "wrong-key", "", None, 12, key[:-1] + ("y" if key[-1] == "x" else "x")):
        with pytest.raises(sessions.Refused, match="Only the lecturer"):
            sessions.class_ask(not_the_key, "number", "How many tokens?")
        with pytest.raises(sessions.Refused):
            sessions.class_reveal(not_the_key)
        with pytest.raises(sessions.Refused):
            records.class_export(not_the_key)
        with pytest.raises(sessions.Refused):
            sessions.class_delete(not_the_key)
    assert stores.get().questions_of(stores.get().session_by_code(start["code"]).id) == []


def test_unknown_codes_are_rate_limited_per_client():
    class Request:
        headers = {"x-forwarded-for": "198.51.100.7, 203.0.113.9"}  # the proxy appended the last one
        client = type("Peer", (), {"host": "10.0.0.1"})

    for _ in range(access.FAILED_LIMIT):
        with pytest.raises(sessions.Refused, match="no class"):
            sessions.class_join("ZZZZZZ", Request())
    with pytest.raises(sessions.Refused, match="Too many"):
        sessions.class_join(started()["code"], Request())  # even a right code, for a minute
    assert sessions.class_join(started()["code"])["student_id"]  # another client is not affected


def test_a_session_expires_after_a_day_without_activity(monkeypatch):
    start = started()
    clock = sessions.now()
    monkeypatch.setattr(sessions, "now", lambda: clock + sessions.EXPIRES_AFTER + 1)
    sessions._snapshots.clear()
    with pytest.raises(sessions.Refused, match="no class"):
        sessions.class_join(start["code"])
    with pytest.raises(sessions.Refused, match="Only the lecturer"):
        sessions.class_overview(start["lecturer_key"])
    sessions.class_start("next week")  # a new start purges what expired
    assert stores.get().session_by_code(start["code"]) is None


# ------------------------------------------------------------------ answering


def ask_number(start, correct="12"):
    return sessions.class_ask(start["lecturer_key"], "number", "How many tokens does 'unbelievable' make?",
                              correct=correct)


def test_one_answer_per_student_sending_again_replaces_it():
    start = started()
    ask_number(start)
    student = sessions.class_join(start["code"])["student_id"]
    first = sessions.class_answer(start["code"], student, "3")
    again = sessions.class_answer(start["code"], student, "4")
    assert (first["replaced"], again["replaced"]) == (False, True)
    assert sessions.class_count(start["lecturer_key"])["answers"] == 1  # the projector's count: at once
    sessions._snapshots.clear()  # a page's count may be a second behind (sessions.SNAPSHOT_SECONDS)
    state = sessions.class_state(start["code"], student)
    assert state["answers"] == 1 and state["your_answer"] == "4" and state["revealed"] is False
    assert state["results"] is None  # nothing about the others before the reveal


def test_answers_stay_hidden_until_the_reveal_then_close():
    start = started()
    ask_number(start, correct="3")
    for i, value in enumerate(["3", "3", "4", "3.0", "12"]):
        sessions.class_answer(start["code"], f"student-{i:04d}", value)
    sessions._snapshots.clear()
    state = sessions.class_state(start["code"], "student-0000")
    assert state["answers"] == 5 and "3" not in json.dumps(state.get("results"))
    revealed = sessions.class_reveal(start["lecturer_key"])
    assert {h["label"]: h["count"] for h in revealed["histogram"]} == {"3": 3, "4": 1, "12": 1}
    assert revealed["agreement"]["right_count"] == 3 and revealed["agreement"]["median"] == 3
    with pytest.raises(LabError, match="revealed"):
        sessions.class_answer(start["code"], "student-late", "5")


def test_rare_answers_are_other_on_the_projector_and_hidden_ones_are_gone():
    start = started()
    sessions.class_ask(start["lecturer_key"], "choice", "Which model reads both sides?", choices="BERT\nGPT-2\nT5",
                       correct="BERT")
    for i, choice in enumerate(["BERT", "bert", "A", "GPT-2", "T5", "T5"]):
        sessions.class_answer(start["code"], f"student-{i:04d}", choice)
    revealed = sessions.class_reveal(start["lecturer_key"])
    assert [(h["label"], h["count"]) for h in revealed["histogram"]] == [("BERT", 3), ("GPT-2", 1), ("T5", 2)]
    assert revealed["agreement"]["right_count"] == 3
    student_view = sessions.class_state(start["code"], "student-0003")["results"]
    assert [r["answer"] for r in student_view["class"]] == ["BERT", "T5"]  # GPT-2 was given once: "other (1)"
    assert student_view["other"] == {"answers": 1, "count": 1}
    assert student_view["you"]["answer"] == "GPT-2" and student_view["you"]["count"] == 1
    sessions.class_hide(start["lecturer_key"], "t5")
    sessions._snapshots.clear()
    shown = sessions.class_state(start["code"], "student-0000")["results"]
    assert [r["answer"] for r in shown["class"]] == ["BERT"] and shown["hidden"] == 2


def test_export_is_csv_with_every_answer_and_never_a_spreadsheet_formula():
    start = started()
    sessions.class_ask(start["lecturer_key"], "choice", "Pick", choices=["=1+1", "safe"])
    sessions.class_answer(start["code"], "student-0001", "=1+1")
    sessions.class_reveal(start["lecturer_key"])
    rows = records.class_export(start["lecturer_key"])["csv"].splitlines()
    assert rows[0].split(",")[:5] == ["question", "kind", "model", "answer", "count"]
    assert "'=1+1,1" in rows[1]


def test_deleting_a_session_deletes_its_answers():
    start = started()
    question_id = ask_number(start)["question_id"]
    sessions.class_answer(start["code"], "student-0001", "3")
    sessions.class_delete(start["lecturer_key"])
    assert stores.get().count(question_id) == 0 and stores.get().question(question_id) is None
    with pytest.raises(sessions.Refused):
        sessions.class_state(start["code"], "student-0001")


def test_a_shared_workbook_gives_the_lecturer_verdicts_never_answers():
    start = started()
    given = {"B2.1": {"sat": "0.58", "ran": "0.13", "jumped": "0.08", "slept": "0.21"}, "B3.1": {"sign": "+"}}
    shared = records.class_share_workbook(start["code"], "student-0001", given)
    assert shared["verdicts"] == {"B2.1": "right", "B3.1": "wrong"}
    records.class_share_workbook(start["code"], "student-0002", {})
    overview = sessions.class_overview(start["lecturer_key"])
    assert overview["workbook"] == {"students": 1, "questions": {"B2.1": {"right": 1}, "B3.1": {"wrong": 1}}}
    assert "0.58" not in json.dumps(overview)


# ------------------------------------------------------------------ the model's side


def ask_and_answer(start, kind, text, model, given: list[str]):
    sessions.class_ask(start["lecturer_key"], kind, text, model, top_k=5)
    for i, word in enumerate(given):
        sessions.class_answer(start["code"], f"student-{i:04d}", word)
    return sessions.class_reveal(start["lecturer_key"])


def test_fill_mask_reveal_uses_the_labs_own_probabilities(tiny_models):
    from conftest import TINY_BERT
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    text = "The [MASK] sat on the mat."
    start = started()
    revealed = ask_and_answer(start, "fill_mask", text, tiny_models["masked"],
                              ["cat", "Cat", "dog", "cat", "embeddings", "mat."])
    lab = services.get("fill_mask")(text, tiny_models["masked"], 20)["masks"][0]["predictions"]
    by_token = {p["token"]: p["prob"] for p in lab}
    rows = {r["answer"]: r for r in revealed["class"]}
    assert rows["cat"]["count"] == 3 and rows["dog"]["count"] == 1
    tokenizer = AutoTokenizer.from_pretrained(TINY_BERT)
    model = AutoModelForMaskedLM.from_pretrained(TINY_BERT).eval()
    import torch

    ids = tokenizer(text.replace("[MASK]", tokenizer.mask_token), return_tensors="pt")["input_ids"]
    blank = int((ids[0] == tokenizer.mask_token_id).nonzero()[0])
    with torch.no_grad():
        probs = torch.softmax(model(ids).logits[0, blank].double(), -1)
    for word in ("cat", "dog", "mat"):  # one piece each: exactly the lab's (and the model's) probability
        token_id = tokenizer.convert_tokens_to_ids(word)
        assert rows[word]["model_prob"] == pytest.approx(float(probs[token_id]), rel=1e-4)
        assert rows[word]["model_rank"] == int((probs > probs[token_id]).sum()) + 1
        if word in by_token:
            assert rows[word]["model_prob"] == pytest.approx(by_token[word], rel=1e-5)
    # A word of several pieces: k [MASK]s, scored left to right, computed here by hand.
    pieces = tokenizer("embeddings", add_special_tokens=False)["input_ids"]
    assert len(pieces) > 1 and rows["embeddings"]["pieces"] == tokenizer.convert_ids_to_tokens(pieces)
    row = ids[0].tolist()
    expected = 0.0
    for i, piece in enumerate(pieces):
        filled = row[:blank] + pieces[:i] + [tokenizer.mask_token_id] * (len(pieces) - i) + row[blank + 1:]
        with torch.no_grad():
            logits = model(torch.tensor([filled])).logits[0, blank + i].double()
        expected += float(torch.log_softmax(logits, -1)[piece])
    assert rows["embeddings"]["model_prob"] == pytest.approx(math.exp(expected), rel=1e-4)
    assert revealed["model_top"][0]["prob"] == pytest.approx(lab[0]["prob"], rel=1e-6)
    assert "left to right" in revealed["approximation"]


def test_next_token_reveal_is_the_chain_rule_on_the_model(tiny_models):
    from conftest import TINY_GPT2
    from transformers import AutoModelForCausalLM, AutoTokenizer

    prompt = "The cat sat on the"
    start = started()
    revealed = ask_and_answer(start, "next_token", prompt, tiny_models["causal"],
                              ["mat", "mat", "floor", "dog", "attention"])
    tokenizer = AutoTokenizer.from_pretrained(TINY_GPT2)
    model = AutoModelForCausalLM.from_pretrained(TINY_GPT2).eval()
    import torch

    rows = {r["answer"]: r for r in revealed["class"]}
    lab = services.get("next_token")(prompt, tiny_models["causal"])["distribution"]
    for word in ("mat", "floor", "dog", "attention"):
        prompt_ids = tokenizer(prompt)["input_ids"]
        word_ids = tokenizer(" " + word, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logp = torch.log_softmax(model(torch.tensor([prompt_ids + word_ids])).logits[0].double(), -1)
        expected = sum(float(logp[len(prompt_ids) - 1 + i, t]) for i, t in enumerate(word_ids))  # the chain rule
        assert rows[word]["model_prob"] == pytest.approx(math.exp(expected), rel=1e-4), word
        assert len(rows[word]["pieces"]) == len(word_ids)
    assert any(len(r["pieces"]) > 1 for r in rows.values())  # a multi-token word is among them
    first = {e["token_id"]: e["prob"] for e in lab}
    one_token = [r for r in rows.values() if len(r["pieces"]) == 1]
    for r in one_token:  # the first factor is /next_token's own number
        token_id = tokenizer.convert_tokens_to_ids(r["pieces"][0])
        if token_id in first:
            assert r["model_prob"] == pytest.approx(first[token_id], rel=1e-6)


def test_agreement_compares_the_class_with_the_model(tiny_models):
    start = started()
    text = "The [MASK] sat on the mat."
    top = services.get("fill_mask")(text, tiny_models["masked"], 5)["masks"][0]["predictions"]
    favourite = top[0]["token"]
    given = [favourite] * 2 + ["cat"] * 3 + ["dog"]
    revealed = ask_and_answer(start, "fill_mask", text, tiny_models["masked"], given)
    agreement = revealed["agreement"]
    rows = {r["answer"]: r for r in revealed["class"]}
    assert agreement["class_favourite"] == "cat" and agreement["class_favourite_model_rank"] == rows["cat"]["model_rank"]
    assert agreement["model_favourite"] == favourite
    assert agreement["model_favourite_class_share"] == pytest.approx(2 / 6)
    logps = [math.log(rows[a]["model_prob"]) for a in given]
    assert agreement["mean_logprob"] == pytest.approx(np.mean(logps), rel=1e-6)
    assert agreement["perplexity"] == pytest.approx(math.exp(-np.mean(logps)), rel=1e-6)
    model_five = {scoring.model_key(t["token"]) for t in top}
    assert agreement["top5_overlap"] == len({"cat", "dog", favourite} & model_five)


def test_a_question_needs_one_blank_and_a_model_that_can_answer(tiny_models):
    start = started()
    with pytest.raises(BadInput, match="exactly one blank"):
        ask_and_answer(start, "fill_mask", "The [MASK] sat on the [MASK].", tiny_models["masked"], [])
    with pytest.raises(BadInput, match="no blank"):
        sessions.class_ask(start["lecturer_key"], "fill_mask", "No blank here.", tiny_models["masked"])
    with pytest.raises(BadInput, match="kind"):
        sessions.class_ask(start["lecturer_key"], "essay", "Why?")
    with pytest.raises(LabError):
        sessions.class_ask(start["lecturer_key"], "next_token", "Once upon a", "no-such-model")


def test_a_failed_reveal_leaves_the_question_open(tiny_models, monkeypatch):
    start = started()
    sessions.class_ask(start["lecturer_key"], "next_token", "Once upon a", tiny_models["causal"])
    sessions.class_answer(start["code"], "student-0001", "time")

    def broken(*args, **options):
        raise BadInput("the model is not answering")

    monkeypatch.setattr(scoring, "model_side", broken)
    with pytest.raises(BadInput, match="not answering"):
        sessions.class_reveal(start["lecturer_key"])
    sessions._snapshots.clear()
    assert sessions.class_answer(start["code"], "student-0002", "day")["replaced"] is False


def test_results_view_groups_and_counts():
    question = {"kind": "number", "correct": "100", "choices": []}
    stored = {"answers": [{"key": str(v), "answer": str(v), "count": 1} for v in (1, 10, 100, 1000, 10_000, 2, 3, 4, 5,
                                                                                  6, 7, 99.5)]}
    shown = results.view(question, stored, [], 1)
    assert sum(h["count"] for h in shown["histogram"]) == 12 and len(shown["histogram"]) == results.HISTOGRAM_BINS
    assert shown["agreement"]["right_count"] == 2  # 100 and 99.5 (within 1 %)


def test_a_waiting_page_asks_as_often_as_the_load_test_measured():
    """assets/js/classroom.js asks /class/version on poll_route.POLL_SECONDS' beat (the figure tests/loadtest_class.py
    measures a second vote's way to every phone with)."""
    import re

    from labs.classroom import poll_route

    script = (Path(__file__).parents[1] / "assets" / "js" / "classroom.js").read_text()
    assert int(re.search(r"const POLL_MS = (\d+);", script).group(1)) == poll_route.POLL_SECONDS * 1000


def test_answers_arriving_together_are_written_together_each_with_its_own_result():
    """On SQLite (one writer at a time), the answers that arrive while a write runs are committed in one
    transaction; each student still gets their own reply: stored, replacing an earlier one, or refused."""
    import threading

    start = started()
    ask_number(start)
    store = sessions.db()
    question = store.session_by_code(start["code"]).current_question
    store.put_answer(question, "student-0000", "1", "1", sessions.now())  # one earlier answer, to be replaced
    before = store.group.transactions
    replies: dict[str, object] = {}

    def send(student: str, value: str) -> None:
        try:
            replies[student] = store.put_answer(question, student, value, value, sessions.now())
        except Exception as exc:  # kept to be checked
            replies[student] = exc

    with store._write_lock:  # a write is running: the answers wait for the writer
        threads = [threading.Thread(target=send, args=(f"student-{i:04d}", str(i))) for i in range(20)]
        for t in threads:
            t.start()
        while len(store.group._pending) < 20:  # a state, not a time: every answer has arrived
            threading.Event().wait(0.01)
    for t in threads:
        t.join()
    assert store.group.transactions - before == 1  # twenty answers, one transaction
    assert replies["student-0000"] is True and all(replies[f"student-{i:04d}"] is False for i in range(1, 20))
    assert sessions.class_count(start["lecturer_key"])["answers"] == 20
    assert dict((k, n) for k, _, n in store.tally(question)) == {str(i): 1 for i in range(20)}
