"""Lab: Next token (placeholder until its issue is built)."""

from labs import ui

TITLE = "Next token"


def build_tab(demo) -> None:
    ui.placeholder_tab("See a causal LM's next-token distribution, reshape it with temperature, top-k and top-p, and compare greedy, sampling and beam search.")
