"""Lab 6, "Embeddings": compute.py (no gradio), then tab.py."""
