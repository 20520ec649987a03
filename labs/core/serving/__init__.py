"""Serving a class in Gradio: compressed static files and page (static_cache), session patches (fast_sessions), the
grouped tab bar and each page open (tab_bar), the status line's plain route (status_route). A new serving trick goes
here."""
