"""The model layer: which models are offered, loading one with the head a lab asks for, the offline copies
and downloads. A new model family goes into registry.py.

Its modules: registry (names, families, constants; imports nothing from the loading side),
offered (what this server offers), models (loading, keyed by model and head), offline_cache, extra_models,
download, on_meta (a published model's shapes from its config, no weights)."""
