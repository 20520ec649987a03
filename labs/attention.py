"""Lab: Attention (placeholder until its issue is built)."""

from labs import ui

TITLE = "Attention"


def build_tab(demo) -> None:
    ui.placeholder_tab("Explore real attention weights with bertviz's head and model views and heatmaps of every layer and head.")
