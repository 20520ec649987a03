"""Repository tools, not part of the app: api_docs writes docs/api.md from the app's endpoints."""
