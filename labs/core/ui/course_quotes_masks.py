"""The course as the panels of Masks (#55: the encoder that cheats) quote it. Part of the one table of the course's words
(labs/core/ui/course_quotes.py adds these entries to QUOTES), kept apart only for size; tests/test_course_quotes.py
checks each verbatim under its heading."""

from __future__ import annotations

from labs.core.ui.course_documents import LECTURE, STRATEGIES, SUMMARY, TEXTBOOK, Quote  # noqa: F401

QUOTES: tuple[Quote, ...] = (
    Quote('cheating_lm', STRATEGIES, 'Encoders Cannot Be Used for Language Modeling',
          'A standard language model (**LM**) predicts the next word using only previous words:'),
    Quote('cheating_see_future', STRATEGIES, 'Why this makes language modeling impossible',
          'If the model can see the future word (e.g., “cake”), it cannot meaningfully learn to predict it:'),
    Quote('cheating_leak', STRATEGIES, 'Why this makes language modeling impossible',
          'Encoders leak future information, so they cannot be trained to predict the next word in a left-to-right '
          'manner.'),
    Quote('cheating_summary', STRATEGIES, 'Why this makes language modeling impossible',
          'Encoder models cannot be used for language modeling because their bidirectional attention lets each token '
          'see future words, which violates the causal constraint required for predicting the next word.'),
)
