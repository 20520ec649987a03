"""A block of a docs page written by a tool, between its two marker comments: the page with the block replaced,
and the tool's command line (write it, or `--check` whether the committed page is current). Used by
tools/costliest_tests.py and tools/architecture_layout.py, both blocks of docs/architecture.md."""

from __future__ import annotations

from pathlib import Path


def page_with(page: Path, begin: str, end: str, block: str) -> str:
    """The page's text with what stands from `begin` to `end` (markers included) replaced by `block`."""
    text = page.read_text()
    start, stop = text.index(begin), text.index(end) + len(end)
    return text[:start] + block + text[stop:]


def main(argv: list[str], page: Path, current: str, stale: str) -> int:
    """Write `current` (the whole page) to `page`; with --check, print `stale` and return 1 if they differ."""
    if "--check" in argv:
        if current != page.read_text():
            print(stale)
            return 1
        return 0
    page.write_text(current)
    return 0
