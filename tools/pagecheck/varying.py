"""The numbers a page's ``~`` markers stand for, as one run of the page prints them.

A ``~`` number must truly vary between runs (``outputs.py``); one that comes out the same
in two runs of the page is deterministic, and the page must print it exactly. To tell,
``tests/checker/test_varying_numbers.py`` runs each page that has markers twice, each time
in a fresh process (``python -m tools.pagecheck.varying PAGE OUT`` writes them to OUT as JSON),
and compares. A run goes only as far as the page's last block with a marker.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tools.pagecheck.checker import Checker
from tools.pagecheck.outputs import VARYING, normalise, printed_numbers
from tools.source.markdown import read_page


def marked_blocks(path: Path, root: Path) -> list[int]:
    """The indices of the blocks of a page whose Output block has a ``~`` marker."""
    blocks = read_page(path, root).blocks
    return [i for i, b in enumerate(blocks) if b.output and VARYING.search(b.output)]


def marked_numbers(path: Path, root: Path) -> dict[int, list[str | None]]:
    """Run the page up to its last marked block: for each marked block (by its fence's
    line), the printed numbers of its markers, in order (None for a line whose text no
    longer matches its Output line: the page's own test fails on that)."""
    marked = marked_blocks(path, root)
    checker = Checker(root, update=True)
    run = checker.page_run(path)
    numbers: dict[int, list[str | None]] = {}
    for index in range(max(marked, default=-1) + 1):
        block = run.page.blocks[index]
        printed = checker.execute(run, index, "\n" * block.line + block.code)
        if index not in marked:
            continue
        shown, actual = normalise(block.output), normalise(printed)
        found: list[str | None] = []
        for n, line in enumerate(shown):
            pairs = printed_numbers(line, actual[n]) if n < len(actual) else None
            count = len(VARYING.findall(line))
            found += [p for _, p in pairs] if pairs is not None else [None] * count
        numbers[block.line] = found
    return numbers


if __name__ == "__main__":
    page, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2])
    out.write_text(json.dumps(marked_numbers(page, Path.cwd().resolve())))
