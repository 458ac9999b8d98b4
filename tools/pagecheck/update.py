"""``pytest --update-outputs`` (``make outputs``): rewrite Output blocks and figures.

Every Output block is rewritten from the actual output; missing ones are created and empty
ones dropped. Lines whose varying numbers still match are kept as they are, so a second
run changes nothing. A page with a failing block keeps its outputs and figures.
"""

from __future__ import annotations

from pathlib import Path

from tools.pagecheck.checker import Checker
from tools.pagecheck.figures import write_figure
from tools.pagecheck.outputs import new_output_text


def write_outputs(checker: Checker) -> list[Path]:
    """Rewrite the Output blocks and figures of every page run in this session."""
    changed = []
    for path, run in checker.runs.items():
        if run.failed_line is not None:
            continue  # a broken page keeps its outputs until it runs
        for name, data in run.figures.items():
            if (written := write_figure(checker.root, name, data)) is not None:
                changed.append(written)
        lines = path.read_text("utf8").split("\n")
        for index in sorted(run.actual, reverse=True):  # bottom-up keeps line numbers valid
            block, actual = run.page.blocks[index], run.actual[index]
            text = new_output_text(block.output, actual)
            fence_line = lines[block.line - 1]
            indent = fence_line[: len(fence_line) - len(fence_line.lstrip())]
            body = [indent + line if line else "" for line in text.split("\n")]
            new = [indent + '```text title="Output"', *body, indent + "```"]
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
        new_text = "\n".join(lines)
        if new_text != path.read_text("utf8"):
            path.write_text(new_text, "utf8")
            changed.append(path)
    return changed
