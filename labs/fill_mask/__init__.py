"""Lab 1, "Fill in the blank": compute.py (no gradio), then tab.py."""
