"""Lab 9, "Cost & scale": presets.py (every published figure), compute.py, memory.py, scaling.py, course.py,
measure.py (no gradio), then tab.py and its panels."""
