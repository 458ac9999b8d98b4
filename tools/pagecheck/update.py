"""``pytest --update-outputs`` (``make outputs``): rewrite Output blocks and figures.

Every Output block is rewritten from the actual output; missing ones are created and empty
ones dropped. Lines whose varying numbers are still in their band are kept as they are, so
a second run changes nothing; a line whose text still matches but whose numbers left their
band gets the printed numbers, each still marked ``~`` (``outputs.py``); a printed tilde
before a number is written escaped (a backslash before it). It never damages a page: each page is built and encoded whole, then written to
a temporary file beside it and moved over it (``os.replace``), so a failure at any point
leaves the page as it was, and the other pages are still written; a page with a failing
block (one whose output an Output block cannot hold, such as a lone surrogate, fails
naming its line) keeps its outputs and figures; a page whose fences do not parse cleanly
(an unclosed fence) never runs, so it is never rewritten; an Output fence keeps its length
and is always longer than any run of backticks in the output; a CRLF page stays CRLF.
"""

from __future__ import annotations

import re
from pathlib import Path

from tools.pagecheck.checker import Checker, PageRun
from tools.pagecheck.figures import replace_file, write_figure
from tools.pagecheck.outputs import band_factor, new_output_text


def write_outputs(checker: Checker) -> tuple[list[Path], list[str]]:
    """Rewrite the Output blocks and figures of every page run in this session: the paths
    written, and why each page that could not be written was not (it is left whole)."""
    changed, failures = [], []
    for path, run in checker.runs.items():
        if run.failed_line is not None or run.refused:
            continue  # a broken page keeps its outputs until it runs
        try:
            changed += write_page(checker, path, run)
        except Exception as error:  # the page is intact (replace_file); go on with the rest
            failures.append(f"{path}: not updated: {type(error).__name__}: {error}")
    return changed, failures


def write_page(checker: Checker, path: Path, run: PageRun) -> list[Path]:
    """Write one page's figures and Output blocks; the paths written."""
    changed = []
    for name, data in run.figures.items():
        if (written := write_figure(checker.root, name, data)) is not None:
            changed.append(written)
    with open(path, encoding="utf8", newline="") as file:
        original = file.read()
    newline = "\r\n" if "\r\n" in original else "\n"
    lines = original.replace("\r\n", "\n").split("\n")
    for index in sorted(run.actual, reverse=True):  # bottom-up keeps line numbers valid
        block, actual = run.page.blocks[index], run.actual[index]
        text = new_output_text(block.output, actual, band_factor(block.attributes.get("band")))
        fence_line = lines[block.line - 1]
        indent = fence_line[: len(fence_line) - len(fence_line.lstrip())]
        body = [indent + line if line else "" for line in text.split("\n")]
        fence = fence_for(text, lines[block.output_span[0]] if block.output_span else "")
        new = [indent + fence + 'text title="Output"', *body, indent + fence]
        if block.output_span is not None:
            start, end = block.output_span
            if not text:  # the block no longer prints: drop the Output block
                while start > 0 and not lines[start - 1].strip():
                    start -= 1
                lines[start:end] = []
            else:
                lines[start:end] = new
        elif text:
            lines[block.end : block.end] = ["", *new]
    new_text = newline.join(lines)
    if new_text != original:
        replace_file(path, new_text.encode("utf8"))  # strict: nothing half-written
        changed.append(path)
    return changed


def fence_for(text: str, old_opener: str) -> str:
    """Backticks for an Output fence: as long as the old one, and longer than any run of
    backticks in the output (so the output cannot close its own fence)."""
    old = re.match(r"\s*(`{3,})", old_opener)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, len(old[1]) if old else 0, longest + 1)
