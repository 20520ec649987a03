"""Nothing credited to the course that it does not say: wherever the app or its docs put words in quotation marks
after "the lecture's", "the textbook's", "the handout's" or "the summary sheet's", those words are in the course's
documents (../shared/course), character for character; and a student never sees a note pointing at ERRATA.md by
number (a file students never see): the erratum itself is shown."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from labs.core.ui import course_quotes
from labs.part_b import questions

ROOT = Path(__file__).resolve().parents[1]
CREDIT = re.compile(r"(?:lecture|textbook|handout|summary sheet)(?:’s|'s) (?:“([^”]{3,200})”|\"([^\"{}]{3,200})\")")
SOURCES = [*sorted((ROOT / "labs").rglob("*.py")), ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def course_text() -> str:
    return "\n".join((course_quotes.COURSE_DIR / name).read_text(encoding="utf-8")
                     for name in course_quotes.FILES.values())


def credits() -> list[tuple[str, str]]:
    """(where, the words credited) for every quoted credit in the code and the docs, f-string fields left out."""
    found = []
    for path in SOURCES:
        if path.name == "api.md":  # generated from the endpoints' notes, which are among SOURCES
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if path.suffix == ".py":  # the words as the program shows them: a string literal's escapes undone
                line = line.replace("\\\"", "\"").replace("\\\\", "\\")
            for match in CREDIT.finditer(line):
                words = match.group(1) or match.group(2)
                if "{" not in words:
                    found.append((f"{path.relative_to(ROOT)}:{number}", words))
    return found


def test_the_scan_finds_the_credits_it_is_meant_to_check():
    found = dict(credits())
    assert len(found) >= 5
    assert "What happens if we set learning_rate=1e-2?" in found.values()


@pytest.mark.parametrize("where, words", credits())
def test_words_credited_to_the_course_are_in_its_documents(where, words):
    assert words in course_text(), f"{where} credits the course with “{words}”, which no document says"


def test_a_student_sees_the_erratum_not_its_number_in_a_file_they_never_see():
    for question in questions.QUESTIONS:
        assert "ERRATA" not in (question.erratum or ""), question.id
    for path in sorted((ROOT / "labs").rglob("*.py")):
        strings = [line for line in path.read_text(encoding="utf-8").splitlines()
                   if re.search(r"\(ERRATA \d+\)", line) and not line.lstrip().startswith("#")]
        shown = [line for line in strings if '"' in line and '"""' not in line]
        assert not shown, f"{path.relative_to(ROOT)}: {shown[0].strip()}"


def test_every_row_of_check_the_course_is_linked_from_the_lab_it_names():
    """Each erratum's row is reached from its lab (ui.course_links on the lab's page), not only from Choosing's table."""
    from labs.choosing import course

    for row_id, row in course.ROWS.items():
        lab = row().lab
        tab = (ROOT / "labs" / lab / "tab.py").read_text()
        assert f'("{row_id}",' in tab.split("ui.course_links(", 1)[-1], f"{row_id}: not linked from {lab}'s page"
