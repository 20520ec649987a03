"""The course as the panels of Choosing a model (#55: an encoder's and a decoder's features for one classifier; question answering) quote it. Part of the one table of the course's words
(labs/core/ui/course_quotes.py adds these entries to QUOTES), kept apart only for size; tests/test_course_quotes.py
checks each verbatim under its heading."""

from __future__ import annotations

from labs.core.ui.course_documents import LECTURE, STRATEGIES, SUMMARY, TEXTBOOK, Quote  # noqa: F401

QUOTES: tuple[Quote, ...] = (
    # labs/choosing/tab_features.py: the lecture's closing lab, and what its takeaways say of BERT and GPT
    Quote('features_lab_activities', LECTURE, 'Next: Hands-On Feature Extraction',
          '5. Use features for classification\n6. Compare BERT vs GPT effectiveness'),
    Quote('features_no_fine_tuning', LECTURE, 'Next: Hands-On Feature Extraction',
          "We'll use models as feature extractors (simpler, faster)"),
    Quote('features_bert_takeaway', LECTURE, 'Key Takeaways',
          'Masked LM objective, full context, best for classification/QA'),
    Quote('features_gpt_takeaway', LECTURE, 'Key Takeaways',
          'Next token prediction, causal mask, best for text generation'),
    # labs/choosing/qa_check.py: the summary sheet's span prediction
    Quote('qa_two_classifiers', SUMMARY, 'Span Prediction (QA)',
          'Two classifiers: one for start, one for end position.'),
)
