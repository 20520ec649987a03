"""The labs' API endpoints, callable in this process by name.

Labs never import each other, yet the Part B workbook needs what several of them compute: the Fine-tune
lab's run, Fill in the blank's guesses, Pre-training's mask-rate curve, Choosing a model's bias probe. Every
lab already offers its compute as an API endpoint (ui.api registers it here too), so the workbook calls the
endpoint's function by its name and gets exactly the JSON a script calling `/fill_mask` gets, computed
through the same shared passes and jobs, with no import of the lab that offers it."""

from __future__ import annotations

from collections.abc import Callable

from labs.core.errors import LabError

_OFFERED: dict[str, Callable] = {}


class NotOffered(LabError):
    """A lab this server was built without."""


def offer(name: str, fn: Callable) -> None:
    """Make an endpoint's compute function callable by name (the last one registered under a name wins,
    as a rebuilt app registers its endpoints again)."""
    _OFFERED[name] = fn


def get(name: str) -> Callable:
    try:
        return _OFFERED[name]
    except KeyError:
        raise NotOffered(f"This server runs without the lab behind '{name}', so this evidence cannot be "
                         "computed here.") from None


def offered() -> list[str]:
    return sorted(_OFFERED)
