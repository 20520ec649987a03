"""The checkable answers of Part A and Part B, judged against a live computation: the softmax, the masking
draw of transformers' DataCollatorForLanguageModeling, the connections counted in the two masks, one SGD step,
peft's LoRA count, the models' configs, the course's own recipes. Each check returns a Verdict with the
expected values, the tolerance and the evidence (Markdown: how the expected value was computed)."""

from __future__ import annotations

from dataclasses import dataclass, field

from labs.core.errors import BadInput, check_int
from labs.part_b import answers, facts
from labs.part_b.questions import BY_ID

RIGHT, WRONG, OPEN, NOT_MEASURED = "right", "wrong", "open", "not measured here"


@dataclass
class Verdict:
    id: str
    verdict: str
    expected: dict = field(default_factory=dict)
    tolerance: str = ""
    evidence: str = ""
    fields: dict = field(default_factory=dict)  # per field: right / wrong / empty

    def to_json(self) -> dict:
        return {"id": self.id, "verdict": self.verdict, "expected": self.expected, "tolerance": self.tolerance,
                "evidence": self.evidence, "fields": self.fields}


def _judge(qid: str, marks: dict, expected: dict, evidence: str) -> Verdict:
    """Right when every field is right; an empty field is wrong (and says so)."""
    verdict = RIGHT if marks and all(m == RIGHT for m in marks.values()) else WRONG
    return Verdict(qid, verdict, expected, BY_ID[qid].tolerance, evidence, marks)


def _near(value: float | None, want: float, absolute: float = 0.0, relative: float = 0.0) -> str:
    if value is None:
        return "empty"
    return RIGHT if abs(value - want) <= max(absolute, relative * abs(want)) else WRONG


def _numbers(qid: str, given: dict) -> dict:
    q = BY_ID[qid]
    return {f.key: answers.number(given.get(f.key), f.label) for f in q.fields}


def _said(qid: str, given: dict, key: str) -> str:
    label = next(f.label for f in BY_ID[qid].fields if f.key == key)
    return answers.text(given.get(key), label)


def _mark_words(value: str, accepted: tuple[str, ...], refused: tuple[str, ...] = ()) -> str:
    if not value:
        return "empty"
    return RIGHT if answers.mentions(value, accepted) and not answers.mentions(value, refused) else WRONG


# ---- Part A ---------------------------------------------------------------------------------------
def check_a2_2(given: dict) -> Verdict:
    choice = _said("A2.2", given, "better")
    mark = _mark_words(choice, ("2", "two", "approach 2", "second", "entire", "whole", "both sides", "full"),
                       ("1", "one", "approach 1", "first"))
    return _judge("A2.2", {"better": mark}, {"better": "Approach 2 (the entire sentence)"},
                  "With only “The ____” any noun fits; “barked loudly at the mailman” leaves a dog. "
                  "Show the evidence puts a causal LM's guesses after “The” beside a masked LM's on the whole "
                  "sentence.")


def check_a5(given: dict) -> Verdict:
    n = _numbers("A5", given)
    scratch, shared = 5 * 500_000, 1_000_000 + 5 * 10_000
    want = {"scratch_total": scratch, "shared_total": shared, "saved": scratch - shared}
    marks = {k: _near(n[k], v, absolute=0.5) for k, v in want.items()}
    return _judge("A5", marks, want, f"5 × \\$500,000 = \\${scratch:,}; \\$1,000,000 + 5 × \\$10,000 = \\${shared:,}; "
                                     f"saved \\${scratch - shared:,} ({(scratch - shared) / scratch:.0%}).")


# ---- Part B ---------------------------------------------------------------------------------------
def check_b1_1(given: dict) -> Verdict:
    n = _numbers("B1.1", given)
    draw = facts.masking_draws("The quick brown fox jumps")
    marks = {"expected": _near(n["expected"], draw.expected, absolute=0.05)}
    return _judge("B1.1", marks, {"expected": draw.expected}, draw.markdown())


def check_b1_2(given: dict) -> Verdict:
    n = _numbers("B1.2", given)
    if n["n"] is None:
        raise BadInput("Type the sequence length n you counted for (for example 6).")
    length = check_int(n["n"], "The sequence length n", 1, facts.MAX_MASK_LENGTH)
    counts = facts.connections(length)
    marks = {"n": RIGHT, "bert": _near(n["bert"], counts["bert"]), "gpt": _near(n["gpt"], counts["gpt"])}
    return _judge("B1.2", marks, {"n": length, **counts}, counts["markdown"])


def check_b2_1(given: dict) -> Verdict:
    n = {f.key: answers.probability(given.get(f.key), f.label) for f in BY_ID["B2.1"].fields}
    probs = facts.softmax(facts.B2_LOGITS)
    want = dict(zip(facts.B2_WORDS, (round(p, 4) for p in probs)))
    marks = {k: _near(n[k], want[k], absolute=0.005) for k in want}
    return _judge("B2.1", marks, want, facts.softmax_markdown(facts.B2_LOGITS, probs))


TEMPERATURE_WORDS = {
    "sharper": ("sharper", "sharp", "peaked", "peakier", "more peaked", "confident", "more confident",
                "less random", "deterministic", "more deterministic", "focused", "conservative", "greedy", "safer",
                "predictable", "more predictable", "lower entropy", "less diverse", "less creative", "repetitive"),
    "unchanged": ("unchanged", "same", "normal", "no change", "as is", "original", "default", "standard",
                  "unmodified", "baseline", "the model s own", "neutral", "balanced"),
    "flatter": ("flatter", "flat", "more random", "random", "diverse", "more diverse", "creative", "more creative",
                "uniform", "softer", "less confident", "higher entropy", "chaotic", "surprising", "wild"),
}


def check_b2_2b(given: dict) -> Verdict:
    shapes = facts.temperature_shapes(facts.B2_LOGITS)
    marks, want = {}, {}
    for key, t in (("t05", 0.5), ("t10", 1.0), ("t20", 2.0)):
        expected = shapes[t]["shape"]
        others = tuple(w for shape, ws in TEMPERATURE_WORDS.items() if shape != expected for w in ws
                       if w not in TEMPERATURE_WORDS[expected])
        marks[key] = _mark_words(_said("B2.2b", given, key), TEMPERATURE_WORDS[expected], others)
        want[key] = expected
    return _judge("B2.2b", marks, want, facts.temperature_markdown(shapes))


def check_b3_1(given: dict) -> Verdict:
    sign = _said("B3.1", given, "sign")
    theta = answers.number(given.get("theta"), "θ_new")
    step = facts.one_sgd_step()
    sign_mark = "empty" if not sign else RIGHT if sign.strip() in ("-", "−", "–") or answers.mentions(
        sign, ("minus", "subtract", "subtracted", "subtraction", "negative")) else WRONG
    marks = {"sign": sign_mark, "theta": _near(theta, step["theta_new"], absolute=0.001)}
    return _judge("B3.1", marks, {"sign": "−", "theta": round(step["theta_new"], 6)}, facts.step_markdown(step))


def check_b4_1(given: dict) -> Verdict:
    table = facts.architecture_table()
    marks = {key: _mark_words(_said("B4.1", given, key), *table["accepted"][key]) for key in table["accepted"]}
    return _judge("B4.1", marks, table["expected"], table["markdown"])


def check_b4_2(given: dict) -> Verdict:
    matches = facts.task_matches()
    marks = {}
    for key, row in matches["rows"].items():
        said = _said("B4.2", given, key)
        family = answers.words(said).strip().split(" ")[0] if said else ""
        marks[key] = "empty" if not said else RIGHT if family.upper() in row["accepted"] else WRONG
    return _judge("B4.2", marks, {k: row["best"] for k, row in matches["rows"].items()}, matches["markdown"])


def check_b6_1(given: dict) -> Verdict:
    n = _numbers("B6.1", given)
    lora = facts.lora_counts()
    percent = n["percent"]
    accepted = (lora["percent_of_matrix"], lora["percent_of_340m"])
    mark = "empty" if percent is None else RIGHT if any(
        _near(percent, p, relative=0.02) == RIGHT for p in accepted) else WRONG
    marks = {"trainable": _near(n["trainable"], lora["trainable"]), "percent": mark}
    return _judge("B6.1", marks, {"trainable": lora["trainable"], "percent": [round(p, 4) for p in accepted]},
                  lora["markdown"])


def check_b6_2(given: dict) -> Verdict:
    n = _numbers("B6.2", given)
    carbon = facts.carbon()
    want = {"co2": carbon["co2"], "cost": carbon["cost"], "savings": carbon["savings"]}
    marks = {k: _near(n[k], v, relative=0.02) for k, v in want.items()}
    return _judge("B6.2", marks, {k: round(v, 2) for k, v in want.items()}, carbon["markdown"])


def check_b5_1(given: dict) -> Verdict:
    recipe = facts.course_recipe()
    marks = {}
    frozen = _said("B5.1", given, "requires_grad")
    marks["requires_grad"] = _mark_words(frozen, ("false",), ("true",))
    values = {f.key: answers.number(given.get(f.key), f.label) for f in BY_ID["B5.1"].fields
              if f.key in recipe["ranges"]}
    for key, (low, high) in recipe["ranges"].items():
        value = values[key]
        marks[key] = "empty" if value is None else RIGHT if low <= value <= high else WRONG
    expected = {"requires_grad": "False", **{k: list(v) for k, v in recipe["ranges"].items()}}
    return _judge("B5.1", marks, expected, recipe["markdown"])


def check_b5_2(given: dict) -> Verdict:
    greedy = _said("B5.2", given, "greedy")
    settings = facts.parse_greedy(greedy) if greedy else None
    t = answers.number(given.get("temperature"), "temperature")
    beams = answers.number(given.get("beams"), "num_beams")
    marks = {"greedy": "empty" if settings is None else RIGHT if settings["greedy"] else WRONG,
             "temperature": "empty" if t is None else RIGHT if 0 < t <= facts.MAX_TEMPERATURE else WRONG,
             "beams": "empty" if beams is None else RIGHT if beams == int(beams) and 2 <= beams <= 16 else WRONG}
    return _judge("B5.2", marks, {"greedy": "do_sample=False (num_beams=1)", "temperature": "> 0 (0.7–1.0 usual)",
                                  "beams": "2 to 16 (4–5 usual)"}, facts.generate_markdown(settings))


CHECKS = {"A2.2": check_a2_2, "A5": check_a5, "B1.1": check_b1_1, "B1.2": check_b1_2, "B2.1": check_b2_1,
          "B2.2b": check_b2_2b, "B3.1": check_b3_1, "B4.1": check_b4_1, "B4.2": check_b4_2, "B5.1": check_b5_1,
          "B5.2": check_b5_2, "B6.1": check_b6_1, "B6.2": check_b6_2}


def check(qid: str, given: dict) -> Verdict:
    """One entry judged; open questions and guesses get "open" and their model answer's pointer."""
    if qid not in BY_ID:
        raise BadInput(f"There is no question {str(qid)[:20]!r} in the workbook; the ids are A1 … B7.2.")
    if not isinstance(given, dict):
        raise BadInput(f"The answers to {qid} must be an object of field: answer.")
    for f in BY_ID[qid].fields:  # every field's length is checked, also where nothing is marked
        answers.text(given.get(f.key), f.label)
    if qid in CHECKS:
        return CHECKS[qid](given)
    return Verdict(qid, OPEN, {}, BY_ID[qid].tolerance,
                   "Never marked: write your answer, then Show the evidence for the lab's measurement and a "
                   "model answer.")

