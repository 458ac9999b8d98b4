"""A page's notebook with the outputs of the page's tested run, for the site to show.

The page checker runs every block of a page, in order and in one namespace as a kernel
would, and fails unless what a block prints is the page's Output block under it
(``tools/pagecheck``). The Output blocks are therefore the outputs of the tested run, and
the notebook shown on the site takes them from there: no kernel runs at build time
(running every chapter again would cost minutes, and a second run could differ where a
page marks a number as varying). Figures need nothing: the page's prose shows each one,
and the notebook's Markdown cells carry that prose. A number the page marks as varying
(``~3.1``) is shown as the page shows it, without the mark.
"""

from __future__ import annotations

import copy

import nbformat

from tools.pagecheck.outputs import TOKEN
from tools.source.markdown import Block


def as_printed(output: str) -> str:
    """An Output block's text as a run prints it: ``~3.1`` is 3.1, ``\\~`` a tilde."""
    return TOKEN.sub(lambda m: "~" if m[0] == "\\~" else m[1], output)


def with_outputs(nb: nbformat.NotebookNode, blocks: list[Block]) -> nbformat.NotebookNode:
    """A copy of ``nb`` whose code cells hold what the page's ``blocks`` printed.

    The first code cell installs the package and is not run; every other code cell must
    be one of ``blocks``, in page order (a practice notebook holds some of them): its
    Output block becomes the cell's ``stdout``, and the cells are numbered as they ran.
    """
    nb = copy.deepcopy(nb)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    remaining = iter(blocks)
    for count, cell in enumerate(code[1:], start=1):
        block = next((b for b in remaining if b.code.rstrip("\n") == cell.source), None)
        if block is None:
            raise ValueError(f"notebook cell {count + 1} is not a block of its page, or "
                             f"not in page order: {cell.source[:60]!r}")
        cell.execution_count = count
        cell.outputs = ([nbformat.v4.new_output("stream", name="stdout",
                                                   text=as_printed(block.output))]
                        if block.output else [])
    return nb
