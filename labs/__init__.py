"""LM Lab: one module per lab, plus the shared model layer (models.py) and UI helpers (ui.py)."""
