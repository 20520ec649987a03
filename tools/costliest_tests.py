"""The ten costliest test files, from tests/durations.json (written by `./lab test --durations`), as the table in
docs/architecture.md ("The costliest test files"):

    python -m tools.costliest_tests            # rewrites the table in docs/architecture.md
    python -m tools.costliest_tests --check    # says whether the committed table is current (tests/test_docs.py)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DURATIONS = ROOT / "tests" / "durations.json"
PAGE = ROOT / "docs" / "architecture.md"
BEGIN, END = "<!-- costliest test files: python -m tools.costliest_tests -->", "<!-- end of the costliest test files -->"
SHOWN = 10


def table() -> str:
    measured = json.loads(DURATIONS.read_text())
    total = sum(measured["files"].values())
    rows = [f"| `{file}` | {seconds:,.0f} s | {seconds / total:.0%} |"
            for file, seconds in list(measured["files"].items())[:SHOWN]]
    return "\n".join([BEGIN, f"Measured by `./lab test --durations` on {measured['written']}: {len(measured['files'])} "
                      f"files, {total / 60:,.0f} minutes of tests in all (both workers' time added up).", "",
                      "| file | seconds | share |", "|---|---|---|", *rows, END])


def page_with(block: str) -> str:
    text = PAGE.read_text()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + block + text[end:]


def main(argv: list[str]) -> int:
    current = page_with(table())
    if "--check" in argv:
        if current != PAGE.read_text():
            print("docs/architecture.md's costliest test files are out of date: python -m tools.costliest_tests")
            return 1
        return 0
    PAGE.write_text(current)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
