"""Lab 5, "Fine-tune": data.py, strategies.py, training.py, codegen.py (no gradio), then tab.py."""
