"""A whole prepared lecture through the API, with gradio_client: what a lecturer's script (or a course's own
front-end) does. Three questions prepared ahead as a Moodle GIFT file; a class answers each with how sure it is;
a timer closes the first; the second is voted on twice (peer instruction: discuss, then vote again); each is
revealed beside the model; the lecture's report comes back as HTML and CSV.

    python -m tools.prepared_lecture http://127.0.0.1:7860/ --students 30

`run(url, students)` is what tests/test_classroom_api.py runs against the app; the students here are simulated
(each a /class_join id), the lecturer's calls are the real ones."""

from __future__ import annotations

import argparse
import random

from gradio_client import Client

LECTURE = """// Week 6: pre-trained language models, three questions (Moodle GIFT: a blank line between questions)
::Q1:: Which model reads the words on both sides of a blank? {=BERT ~GPT-2 ~T5}

::Q2:: Which pre-training objective is GPT-2's? {=Predicting the next token ~Filling in masked tokens ~Both}

::Q3:: LoRA with rank r \\= 16 on one 768 × 768 weight\\: how many trainable parameters? {#24576}
"""
ANSWERS = {1: ["BERT", "GPT-2", "T5"], 2: ["Predicting the next token", "Filling in masked tokens", "Both"],
           3: ["24576", "1536", "589824"]}


def run(url: str, students: int = 30, seed: int = 0, client: Client | None = None) -> dict:
    """The lecture, start to end; returns what a lecturer keeps: each question's reveal and the report."""
    rng = random.Random(seed)
    client = client or Client(url, verbose=False)
    start = client.predict("Week 6: pre-trained language models", api_name="/class_start")
    key, code = start["lecturer_key"], start["code"]   # the class joins with start["join_url"]
    plan = client.predict(key, LECTURE, "gift", "", api_name="/class_plan")
    class_ids = [client.predict(code, api_name="/class_join")["student_id"] for _ in range(students)]

    def answer_all(number: int, share_right: float) -> list[str]:
        given = []
        for student in class_ids:
            right = rng.random() < share_right
            answer = ANSWERS[number][0] if right else rng.choice(ANSWERS[number][1:])
            client.predict(code, student, answer, rng.choice([1, 2, 3, 4]), api_name="/class_answer")
            given.append(answer)
        return given

    reveals = []
    for number in range(1, len(plan["questions"]) + 1):
        client.predict(key, api_name="/class_next")          # the next prepared question, on every phone
        if number == 1:
            client.predict(key, 60, "start", api_name="/class_timer")   # a minute to answer
        answer_all(number, 0.5)
        if number == 2:                                      # discuss with a neighbour, then vote again
            client.predict(key, api_name="/class_round")
            answer_all(number, 0.8)
        reveals.append(client.predict(key, api_name="/class_reveal"))
    report = {form: client.predict(key, form, api_name="/class_report") for form in ("html", "csv")}
    return {"key": key, "code": code, "plan": plan, "reveals": reveals, "report": report}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url", nargs="?", default="http://127.0.0.1:7860/")
    parser.add_argument("--students", type=int, default=30)
    args = parser.parse_args()
    lecture = run(args.url, args.students)
    for reveal in lecture["reveals"]:
        rounds = reveal.get("rounds")
        moved = f"; second vote: {rounds['changed']} changed, moved {rounds['moved']}" if rounds else ""
        print(f"{reveal['question']['text'][:60]}: right {reveal['agreement'].get('right_share', 0):.0%}{moved}")
    for form, made in lecture["report"].items():
        with open(made["filename"], "w", encoding="utf-8") as out:
            out.write(made["text"])
        print(f"wrote {made['filename']}")


if __name__ == "__main__":
    main()
