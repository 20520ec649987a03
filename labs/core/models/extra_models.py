"""Models a lecturer adds through LAB_EXTRA_MODELS: comma-separated Hub ids or local folders. An
entry that cannot be used is left out with its reason, which the status line shows."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from labs.core.models.registry import ModelChoice, family_from_config, hub_online, in_hub_cache, task_from_config

log = logging.getLogger(__name__)

WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")


def choice_for(entry: str):
    """The registry entry for one item (a local folder or a Hub id); ValueError with the reason when
    it cannot be used."""
    folder = Path(entry).expanduser()
    if folder.is_dir():
        if not (folder / "config.json").exists():
            raise ValueError("the folder has no config.json (save the model with save_pretrained)")
        if not any((folder / name).exists() for name in WEIGHT_FILES):
            raise ValueError("the folder has a config.json but no weights (model.safetensors or pytorch_model.bin)")
        config = json.loads((folder / "config.json").read_text())
        return ModelChoice(folder.name, family_from_config(config), "local", str(folder.resolve()),
                           f"Local model from {entry}", task=task_from_config(config))
    if entry.startswith(("/", ".", "~")) or os.sep + os.sep in entry:
        raise ValueError("no such folder")
    if not hub_online() and not in_hub_cache(entry):
        raise ValueError("neither a folder here nor in the local Hugging Face cache; while online, run "
                         f"`./lab download {entry}`")
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(entry, local_files_only=not hub_online()).to_dict()
    except Exception as exc:
        raise ValueError(f"not a model on the Hugging Face Hub ({type(exc).__name__})") from None
    return ModelChoice(entry, family_from_config(config), "hub", entry, f"Added by LAB_EXTRA_MODELS: {entry}",
                       task=task_from_config(config))


def read(entries: str) -> tuple[list, list[str]]:
    """(the usable entries as ModelChoices, "entry: reason" for each one left out)."""
    found, skipped = [], []
    for entry in filter(None, (e.strip() for e in entries.split(","))):
        try:
            found.append(choice_for(entry))
        except ValueError as exc:  # one bad entry must not stop the app
            log.warning("LAB_EXTRA_MODELS: skipping %r: %s", entry, exc)
            skipped.append(f"{entry}: {exc}")
    return found, skipped
