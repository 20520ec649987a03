"""The model layer: registry (names, families, constants; imports nothing from the loading side),
offered (what this server offers), models (loading, keyed by model and head), offline_cache, extra_models,
download, on_meta (a published model's shapes from its config, no weights)."""
