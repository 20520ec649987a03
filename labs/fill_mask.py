"""Lab: Fill in the blank (placeholder until its issue is built)."""

from labs import ui

TITLE = "Fill in the blank"


def build_tab(demo) -> None:
    ui.placeholder_tab("Type a sentence with a [MASK] and see what BERT predicts for it, with probabilities, beside a model that only sees the left context; plus BERT's 15% / 80-10-10 masking simulator.")
