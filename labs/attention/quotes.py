"""The course's own words that the Attention lab's panels quote: entries of labs/core/ui/course_quotes.py, the one
table of course text (tests/test_course_quotes.py checks each against ../shared/course/, under its heading)."""

from __future__ import annotations

from labs.core.ui import course_quotes
from labs.core.ui.course_quotes import Quote


def _take(prefix: str) -> tuple[Quote, ...]:
    return tuple(q for q in course_quotes.QUOTES if q.id.startswith(prefix))


STEPS = _take("attention_steps_")
COST = _take("attention_cost_")
LONG_DOCUMENTS = _take("attention_long_")
ALL = STEPS + COST + LONG_DOCUMENTS


def to_json(quotes: tuple[Quote, ...]) -> list[dict]:
    return [{"where": q.cite, "text": q.text} for q in quotes]
