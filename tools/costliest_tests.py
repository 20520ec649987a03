"""The ten costliest test files, from tests/durations.json (written by `./lab test --durations`), as the table in
docs/architecture.md ("The costliest test files"):

    python -m tools.costliest_tests            # rewrites the table in docs/architecture.md
    python -m tools.costliest_tests --check    # says whether the committed table is current (tests/test_docs.py)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tools import generated_block

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
    return generated_block.page_with(PAGE, BEGIN, END, block)


def main(argv: list[str]) -> int:
    return generated_block.main(argv, PAGE, page_with(table()), "docs/architecture.md's costliest test files are out "
                                "of date: python -m tools.costliest_tests")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
