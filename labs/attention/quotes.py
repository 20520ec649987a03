"""The course's own words that the Attention lab's panels quote, each with its document, the section or
heading it stands under, and the text exactly as written (tests/test_forward_steps.py checks every one
against ../shared/course/, inside its section)."""

from __future__ import annotations

from dataclasses import dataclass

TEXTBOOK, SUMMARY = "003_4e137ff2e23b0b86.txt", "004_1eb174af2e36d6dc.txt"


@dataclass(frozen=True)
class Quote:
    document: str  # the file in the course folder
    where: str  # as the app cites it: the document and the section or heading
    section_start: str  # the line the section starts with ...
    section_end: str  # ... and the text that starts the next one
    text: str


def _walkthrough(text: str) -> Quote:
    return Quote(TEXTBOOK, "Textbook 20.2.5 BERT Architecture Walkthrough", "20.2.5 BERT Architecture Walkthrough",
                 "20.2.6 Pre-training Data and Compute", text)


def _architecture(text: str) -> Quote:
    return Quote(TEXTBOOK, "Textbook 20.2.2 Architecture", "20.2.2 Architecture",
                 "20.2.3 Pre-training Objective 1", text)


def _long_documents(text: str) -> Quote:
    return Quote(TEXTBOOK, "Textbook 20.11.2 Handling Long Documents", "20.11.2 Handling Long Documents",
                 "20.11.3 Mixed Precision Training", text)


STEPS = (
    _architecture("Segment embeddings: Distinguish between Sentence A and Sentence B (for sentence-pair tasks)."),
    _architecture("Position embeddings: Learned absolute position embeddings (unlike the sinusoidal encodings we "
                  "implemented in Chapter 18)."),
    _walkthrough("Multi-head self-attention (as we built in Chapter 18): Each token attends to every other token, "
                 "producing a context-aware representation. BERT-Base uses 12 attention heads, each operating on "
                 "64 dimensions."),
    _walkthrough("The masked positions feed into the MLM prediction head (a linear layer + GELU + LayerNorm + "
                 "linear layer projecting to vocabulary size)."),
)
COST = (
    Quote(SUMMARY, "Summary sheet, “BERT Architecture”", "BERT Architecture", "Pre-training Objectives",
          "Attention is O(n²) in sequence length"),
)
LONG_DOCUMENTS = (
    _long_documents("BERT and its variants are limited to 512 tokens. For longer documents:"),
    _long_documents(
        "Truncation: Simply cut the text at 512 tokens (loses information). Use head truncation for tasks where the "
        "beginning is most informative (news articles) or tail truncation for tasks where the end matters (reviews "
        "with a concluding sentence). Head+tail truncation (keeping the first 128 and last 384 tokens) often "
        "outperforms either alone."),
    _long_documents("Chunking: Split the document into overlapping chunks, process each separately, and aggregate "
                    "predictions."),
    _long_documents(
        "Practical tip: Before using a specialized long-document model, check whether simple truncation or chunking "
        "achieves acceptable performance. For many tasks (sentiment classification, intent detection), the first 512 "
        "tokens contain sufficient information, and the engineering complexity of long-range models is not "
        "warranted."),
)
ALL = STEPS + COST + LONG_DOCUMENTS


def to_json(quotes: tuple[Quote, ...]) -> list[dict]:
    return [{"where": q.where, "text": q.text} for q in quotes]
