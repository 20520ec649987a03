"""The course's documents as the app cites them, and one quote of them (course_quotes.py holds the table; its
parts in course_quotes_*.py take these names from here)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

LECTURE, HANDOUT, STRATEGIES, TEXTBOOK, SUMMARY = (
    "Lecture, Week 6", "Handout", "Lecture, Pre-training Strategies", "Textbook", "Summary sheet")
# The course's documents in ../shared/course, by how the app cites them (the README there)
FILES = {LECTURE: "000_e134d1b9ed4e6724.txt", HANDOUT: "001_a53bc6faf6cc4263.txt",
         STRATEGIES: "002_e542dddf905ba18f.txt", TEXTBOOK: "003_4e137ff2e23b0b86.txt",
         SUMMARY: "004_1eb174af2e36d6dc.txt"}
COURSE_DIR = Path(__file__).resolve().parents[4] / "shared" / "course"  # beside the clone, as in CI


@dataclass(frozen=True)
class Quote:
    id: str
    document: str  # as the app cites it: LECTURE, HANDOUT, STRATEGIES, TEXTBOOK or SUMMARY
    where: str  # the slide title or section heading, as the document writes it
    text: str  # verbatim

    @property
    def file(self) -> str:
        return FILES[self.document]

    @property
    def cite(self) -> str:
        """"Textbook, “20.2.2 Architecture”": the document and the heading the text stands under."""
        return f"{self.document}, “{self.where}”"
