"""The page checker: every Python block of every page runs, and prints what the page shows.

A pytest plugin on top of pytest-markdown-docs (which collects one test per Python fence).
It changes how a block runs:

* The blocks of a page share one namespace and run in page order, like a notebook, each
  exactly once per test run. Selecting a single block (``-k``) first runs the blocks
  before it, silently, so it still works alone.
* A block's printed output is captured and compared with the ```` ```text title="Output" ````
  block right after it (trailing whitespace aside). A mismatch fails with a unified diff
  and the page's file and line; printing without an Output block fails too.
* A number in an Output block written as ``~3.1`` is a varying value (a timing, the memory
  of this machine): it matches any number. Nothing else varies.
* ``pytest --update-outputs`` (``make outputs``) rewrites every Output block from the
  actual output, creates missing ones and drops empty ones. Lines whose varying numbers
  still match are kept as they are, so a second run changes nothing.

Blocks marked ```` ```{.python notest} ```` are not run (pseudo-code); keep them rare.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import os
import re
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from pytest_markdown_docs import _runners  # private API: pytest-markdown-docs is pinned exactly

from tools.markdown_source import CourseMarkdown, Page, read_page

NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
VARYING = re.compile(r"~(" + NUMBER + ")")


class PageCheckError(AssertionError):
    """A page whose blocks do not print what the page shows."""


def output_matches(expected: str, actual: str) -> bool:
    """Compare normalised texts; ``~NUMBER`` in ``expected`` matches any number."""
    exp, act = normalise(expected), normalise(actual)
    return len(exp) == len(act) and all(line_matches(e, a) for e, a in zip(exp, act))


def line_matches(expected: str, actual: str) -> bool:
    if "~" not in expected or not VARYING.search(expected):
        return expected == actual
    parts = VARYING.split(expected)  # literal, number, literal, number, ..., literal
    pattern = ""
    for i, part in enumerate(parts):
        if i % 2:
            pattern += r"\s*" + NUMBER  # a varying number may change its width
        else:
            pattern += r"\s*".join(re.escape(word) for word in re.split(r"\s+", part))
    return re.fullmatch(pattern, actual) is not None


def normalise(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return lines


def new_output_text(expected: str | None, actual: str) -> str:
    """The Output text to write: the actual output, keeping still-matching varying lines."""
    act = normalise(actual)
    if expected is not None:
        exp = normalise(expected)
        if len(exp) == len(act):
            act = [e if VARYING.search(e) and line_matches(e, a) else a for e, a in zip(exp, act)]
    return "\n".join(act)


@dataclass
class PageRun:
    """The state of one page during a test run."""

    page: Page
    namespace: dict
    next_block: int = 0
    failed_line: int | None = None
    actual: dict[int, str] = field(default_factory=dict)  # block index -> printed text


class Checker:
    """Holds every page's namespace and outputs for one pytest session."""

    def __init__(self, root: Path, update: bool):
        self.root = root
        self.update = update
        self.runs: dict[Path, PageRun] = {}
        self.executions: dict[tuple[Path, int], int] = {}

    def page_run(self, path: Path) -> PageRun:
        path = Path(path).resolve()
        if path not in self.runs:
            module = types.ModuleType(f"page_{len(self.runs)}")
            module.__file__ = str(path)
            sys.modules[module.__name__] = module  # dataclasses defined on a page need this
            self.runs[path] = PageRun(read_page(path, self.root), module.__dict__)
        return self.runs[path]

    def execute(self, run: PageRun, index: int, source: str) -> str:
        block = run.page.blocks[index]
        key = (run.page.path, index)
        self.executions[key] = self.executions.get(key, 0) + 1
        buffer = io.StringIO()
        try:
            code = compile(source, str(run.page.path), "exec", dont_inherit=True)
            with contextlib.redirect_stdout(buffer):
                exec(code, run.namespace)
        except BaseException:
            run.failed_line = block.line
            printed = buffer.getvalue()
            if printed:
                sys.stderr.write(f"\nPrinted by {self.where(run, index)} before the error:\n{printed}")
            raise
        finally:
            run.next_block = index + 1
        return buffer.getvalue()

    def where(self, run: PageRun, index: int) -> str:
        path = run.page.path
        shown = path.relative_to(self.root) if path.is_relative_to(self.root) else path
        return f"{shown}:{run.page.blocks[index].line}"

    def run_block(self, test) -> None:
        run = self.page_run(test.source_path)
        line = test.start_line  # 1-based line of the opening fence
        index = next(i for i, b in enumerate(run.page.blocks) if b.line == line)
        if run.failed_line is not None:
            pytest.skip(f"an earlier block of this page (line {run.failed_line}) failed")
        if run.next_block > index:  # asked again for a block already run: start the page over
            self.runs.pop(run.page.path)
            run = self.page_run(test.source_path)
        for earlier in range(run.next_block, index):  # e.g. `-k` selected this block alone
            block = run.page.blocks[earlier]
            self.execute(run, earlier, "\n" * block.line + block.code)
        actual = self.execute(run, index, test.source)
        run.actual[index] = actual
        if not self.update:
            self.compare(run, index, actual)

    def compare(self, run: PageRun, index: int, actual: str) -> None:
        block = run.page.blocks[index]
        where = self.where(run, index)
        if block.output is None:
            if normalise(actual):
                raise PageCheckError(
                    f"{where}: the block prints, but no ```text title=\"Output\"``` block follows it.\n"
                    f"It printed:\n{actual}\nRun `make outputs` to add the Output block."
                )
            return
        if not normalise(actual) and normalise(block.output):
            raise PageCheckError(
                f"{where}: the page shows an Output block, but the block printed nothing.\n"
                "Run `make outputs` to remove it, or make the block print."
            )
        if not output_matches(block.output, actual):
            diff = "\n".join(
                difflib.unified_diff(
                    normalise(block.output),
                    normalise(actual),
                    fromfile=f"{where} (Output block on the page)",
                    tofile=f"{where} (printed by the block)",
                    lineterm="",
                )
            )
            raise PageCheckError(
                f"{where}: the block's output differs from the page.\n{diff}\n"
                "If the new output is right, run `make outputs` and review the diff."
            )

    def write_outputs(self) -> list[Path]:
        """Rewrite the Output blocks of every page run in this session (``--update-outputs``)."""
        changed = []
        for path, run in self.runs.items():
            if run.failed_line is not None:
                continue  # a broken page keeps its outputs until it runs
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


_checker: Checker | None = None


@_runners.register_runner(default=True)
class PageRunner(_runners.DefaultRunner):
    """Runs a fence through the session's Checker instead of in a fresh namespace."""

    def runtest(self, test, args, *, asyncio_runner=None):
        assert _checker is not None, "tools.pagecheck is not configured"
        _checker.run_block(test)

    def repr_failure(self, test, excinfo, style=None):
        if isinstance(excinfo.value, PageCheckError):
            return str(excinfo.value)
        return super().repr_failure(test, excinfo, style)


def pytest_addoption(parser):
    parser.getgroup("pagecheck").addoption(
        "--update-outputs",
        action="store_true",
        default=False,
        help="rewrite the Output blocks of the pages from what their blocks print",
    )


def pytest_configure(config):
    global _checker
    os.environ.setdefault("MPLBACKEND", "Agg")
    if config.getoption("update_outputs"):
        os.environ["PAGECHECK_UPDATE"] = "1"  # tools.figures rewrites figures too
    _checker = Checker(Path(config.rootpath).resolve(), config.getoption("update_outputs"))


@pytest.hookimpl(tryfirst=True)
def pytest_markdown_docs_markdown_it():
    return CourseMarkdown(_checker.root if _checker else Path.cwd())


def pytest_sessionfinish(session, exitstatus):
    if _checker is None:
        return
    if _checker.update:
        for path in _checker.write_outputs():
            print(f"\nupdated outputs: {path}")


def pytest_terminal_summary(terminalreporter):
    if _checker is None or not _checker.executions:
        return
    counts = list(_checker.executions.values())
    terminalreporter.write_line(
        f"pagecheck: {len(counts)} blocks on {len(_checker.runs)} pages; "
        f"executions per block: min {min(counts)}, max {max(counts)}"
    )


def executions() -> dict[tuple[Path, int], int]:
    """How many times each block ran in this session (for the machinery tests)."""
    return dict(_checker.executions) if _checker else {}
