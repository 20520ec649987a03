"""The look and the Gradio helpers: ui (wiring, friendly errors, API), theme, plots, links, status, switches;
course_quotes, the one table of the course's words the labs quote."""
