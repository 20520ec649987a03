"""Lab 3, "Masks": compute.py (no gradio), then tab.py."""
