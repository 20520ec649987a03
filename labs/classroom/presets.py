"""Questions ready to ask: the handout's own Part A exercises, which ask students to guess before they see a
model, and two that Part B computes. A question marked verbatim is the handout's text, character for
character: an entry of the course's quote table (labs/core/ui/course_quotes_handout.py), which
tests/test_course_quotes.py finds in the handout under its section; the others are written for
LM Lab after the exercise named, and say so."""

from __future__ import annotations

from dataclasses import dataclass, field

from labs.core.ui.course_quotes import text as quote

HANDOUT = "Handout"


@dataclass(frozen=True)
class Preset:
    label: str
    kind: str
    text: str
    source: str  # where in the course; "verbatim" or "written after" says how the text relates to it
    choices: tuple[str, ...] = field(default=())
    correct: str = ""


PRESETS = (
    Preset("A2.1: The cat sat on the ____", "fill_mask", quote("preset_cat_sat"),
           "Handout, A2 “2.1 How We Understand Context”, exercise 1 (verbatim)"),
    Preset("A2.1: I went to the ____ to buy milk", "fill_mask", quote("preset_buy_milk"),
           "Handout, A2 “2.1 How We Understand Context”, exercise 2 (verbatim)"),
    Preset("A2.1: The ____ was delicious but too expensive", "fill_mask", quote("preset_delicious"),
           "Handout, A2 “2.1 How We Understand Context”, exercise 3 (verbatim)"),
    Preset("A2.1: She ____ the ball to her friend", "fill_mask", quote("preset_ball"),
           "Handout, A2 “2.1 How We Understand Context”, exercise 4 (verbatim)"),
    Preset("A2.2: The [BLANK] barked loudly at the mailman", "fill_mask", quote("preset_barked"),
           "Handout, A2 “2.2 One-Way vs Two-Way Understanding” (verbatim)"),
    Preset("A3.1: Once upon a ____", "next_token", "Once upon a",
           "Handout, A3 “3.1 Completing Sentences”, exercise 1 (“Once upon a ____”: the words before the blank)"),
    Preset("A3.1: The weather today is ____", "next_token", "The weather today is",
           "Handout, A3 “3.1 Completing Sentences”, exercise 2 (the words before the blank)"),
    Preset("A3.1: I love to eat ____", "next_token", "I love to eat",
           "Handout, A3 “3.1 Completing Sentences”, exercise 3 (the words before the blank)"),
    Preset("A3.1: The best thing about weekends is ____", "next_token", "The best thing about weekends is",
           "Handout, A3 “3.1 Completing Sentences”, exercise 4 (the words before the blank)"),
    Preset("A3.2: Which requires more creativity?", "choice", quote("preset_creativity"),
           "Handout, A3 “3.2 Generation vs Understanding” (verbatim)",
           ("Filling a blank in the middle of a sentence", "Continuing a sentence from where it stops")),
    Preset("A4: What percentage of language understanding is general?", "number",
           "What percentage of language understanding is general vs task-specific? Your estimate: % general",
           "Written after Handout A4 “4.1 General vs Specific Knowledge” (its Q and “Your estimate”)"),
    Preset("B6.1: LoRA r=16 on a 768×768 weight: trainable parameters?", "number",
           "LoRA with rank r = 16 on one 768 × 768 weight (W + BA): how many trainable parameters?",
           "Written after Handout B6 “11.1 Efficient Fine-tuning” (its exercise; the answer, 2 · 768 · 16, "
           "is the Part B workbook's check)", correct="24576"),
)
BY_LABEL = {p.label: p for p in PRESETS}
