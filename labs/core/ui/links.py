"""Links to an exact example: a tab's inputs written into the page's URL
(`?tab=next_token&prompt=Once+upon+a+time&temperature=0.5`) and read back when the page opens.

Everything read from a URL is untrusted input: each value is checked against what its input box
accepts (length, the models offered here, a slider's range); a value that fails is replaced by the
tab's default and named in a note. Unknown parameters are ignored, so a link made for a newer LM Lab
still opens. The values only ever become input values (escaped by the browser like typed text)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from urllib.parse import urlencode

TAB_PARAM, PRESENT_PARAM = "tab", "present"


@dataclass(frozen=True)
class Spec:
    """What one input accepts: kind "text" (max_chars), "choice" (choices) or "number" (low, high, integer)."""
    kind: str
    max_chars: int = 0
    choices: tuple = ()
    low: float = -math.inf
    high: float = math.inf
    integer: bool = False


def query(tab: str, values: dict) -> str:
    """The query string for a tab showing these values ("?tab=…&name=…")."""
    shown = {k: ("" if v is None else v) for k, v in values.items() if not isinstance(v, (list, dict))}
    return "?" + urlencode({TAB_PARAM: tab, **shown})


def checked(name: str, raw: str, spec: Spec):
    """The value a link gives this input, or a ValueError whose message says why it was not used."""
    if spec.kind == "text":
        if len(raw) > spec.max_chars:
            raise ValueError(f"the {name} is {len(raw):,} characters long (at most {spec.max_chars:,})")
        return raw
    if spec.kind == "choice":
        for choice in spec.choices:
            if str(choice) == raw:
                return choice
        raise ValueError(f"“{raw[:80]}” is not offered here for {name}")
    try:
        number = float(raw)
    except ValueError:
        raise ValueError(f"the {name} “{raw[:40]}” is not a number") from None
    if not (math.isfinite(number) and spec.low <= number <= spec.high):
        raise ValueError(f"the {name} must be between {spec.low:g} and {spec.high:g}")
    if spec.integer:
        if number != int(number):
            raise ValueError(f"the {name} must be a whole number")
        return int(number)
    return number


def read(params: dict[str, str], tabs: list[str], specs: dict[str, dict[str, Spec]]) -> tuple[str | None, dict, list]:
    """The tab a link opens, the values it sets ({(tab, name): value}) and notes on what it could not
    use. Only the named tab's parameters are read."""
    tab = params.get(TAB_PARAM)
    if tab is None:
        return None, {}, []
    if tab not in tabs:
        return None, {}, [f"The link opens a tab called “{tab[:40]}”, which this LM Lab does not have."]
    values, notes = {}, []
    for name, spec in specs.get(tab, {}).items():
        if name in params:
            try:
                values[(tab, name)] = checked(name, params[name], spec)
            except ValueError as why:
                notes.append(f"The link's {name} was not used ({why}); the default is shown instead.")
    return tab, values, notes
