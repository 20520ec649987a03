"""The look and the Gradio helpers: ui (wiring, friendly errors, API), theme, plots, links, status, switches."""
