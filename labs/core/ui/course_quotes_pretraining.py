"""The course as the panels of Pre-training (#55: curation's classifiers and C4's rules) quote it. Part of the one table of the course's words
(labs/core/ui/course_quotes.py adds these entries to QUOTES), kept apart only for size; tests/test_course_quotes.py
checks each verbatim under its heading."""

from __future__ import annotations

from labs.core.ui.course_documents import LECTURE, STRATEGIES, SUMMARY, TEXTBOOK, Quote  # noqa: F401

QUOTES: tuple[Quote, ...] = (
    Quote('curation_toxicity', TEXTBOOK, '20.13.1 The Importance of Data Quality',
          '- Toxicity filtering: Remove content that is offensive, harmful, or inappropriate using toxicity '
          'classifiers.'),
    Quote('c4_dataset', TEXTBOOK, '20.10.4 The C4 Dataset',
          'T5 was pre-trained on the Colossal Clean Crawled Corpus (C4)---approximately 750GB of cleaned English '
          'text from Common Crawl. The cleaning pipeline removes:'),
    Quote('c4_sentences', TEXTBOOK, '20.10.4 The C4 Dataset', '- Pages with fewer than 5 sentences'),
    Quote('c4_offensive', TEXTBOOK, '20.10.4 The C4 Dataset', '- Pages containing offensive words'),
    Quote('c4_duplicates', TEXTBOOK, '20.10.4 The C4 Dataset', '- Duplicate content'),
    Quote('c4_language', TEXTBOOK, '20.10.4 The C4 Dataset', '- Non-English text'),
    Quote('c4_code', TEXTBOOK, '20.10.4 The C4 Dataset', '- Pages with code (curly braces as a heuristic)'),
)
