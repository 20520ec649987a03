"""The look and the Gradio helpers: ui (wiring, friendly errors, API), build (the context each app build hands
its labs), theme, plots, tables, figures' text alternatives, links, status, switches, class_hooks; course_quotes, the one table of the course's words the labs
quote. A new plot style goes into plots.py."""
