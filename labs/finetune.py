"""Lab: Fine-tune (placeholder until its issue is built)."""

from labs import ui

TITLE = "Fine-tune"


def build_tab(demo) -> None:
    ui.placeholder_tab("Run a short, live fine-tuning of a small pre-trained encoder on CPU and compare it with training from scratch.")
