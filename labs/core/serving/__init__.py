"""Serving a class in Gradio: compressed static files and page (static_cache), Gradio's page script with two
quadratic walks replaced (frontend_patch), session patches (fast_sessions), the grouped tab bar and each page open
(tab_bar), the status line's plain route (status_route), the LMS connection (lti_routes and its lti_* modules: LTI 1.3 launch,
deep links, grades back). A new serving trick goes here."""
