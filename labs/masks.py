"""Lab: Masks (placeholder until its issue is built)."""

from labs import ui

TITLE = "Masks"


def build_tab() -> None:
    ui.placeholder_tab("Compare the causal and bidirectional attention masks for your own sentence, and check them against real models.")
