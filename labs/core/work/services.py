"""The labs' API endpoints, callable in this process by name: a lab (the workbook) uses what others compute without
importing them.

Labs never import each other, yet the Part B workbook needs what several of them compute: the Fine-tune
lab's run, Fill in the blank's guesses, Pre-training's mask-rate curve, Choosing a model's bias probe. Every
lab declares its endpoints in labs/<lab>/endpoints.py (labs.core.work.endpoints), and app.py offers here those
of the labs it is built with; so the workbook calls an endpoint's function by its name and gets exactly the JSON
a script calling `/fill_mask` gets, computed through the same shared passes and jobs, with no import of the lab
that offers it."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from labs.core.errors import LabError
from labs.core.work.endpoints import Endpoint

_OFFERED: dict[str, Callable] = {}


class NotOffered(LabError):
    """A lab this server was built without."""


def offer(endpoints: Iterable[Endpoint]) -> None:
    """Make these declared endpoints, and only these, callable by name: the labs this server is built with (a
    rebuilt app offers its own again)."""
    offered = {endpoint.name: endpoint.fn for endpoint in endpoints}
    _OFFERED.clear()
    _OFFERED.update(offered)


def get(name: str) -> Callable:
    try:
        return _OFFERED[name]
    except KeyError:
        raise NotOffered(f"This server runs without the lab behind '{name}', so this evidence cannot be "
                         "computed here.") from None


def offered() -> list[str]:
    return sorted(_OFFERED)
