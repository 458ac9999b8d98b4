"""Running a page's blocks like a notebook, and checking what each printed and drew.

The blocks of a page share one namespace and run in page order, each exactly once per
test run. Selecting a single block (``-k``) first runs the blocks before it, silently, so
it still works alone. State that could leak between pages is reset before each page
(``tools.pagecheck.state``).
"""

from __future__ import annotations

import contextlib
import difflib
import io
import os
import signal
import sys
import threading
import types
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tools.pagecheck.figures import check_figure, current_figure_svg
from tools.pagecheck.outputs import normalise, output_matches, unmatched_lines
from tools.pagecheck.state import reset_page_state
from tools.source.markdown import Page, read_page


class PageCheckError(AssertionError):
    """A page whose blocks do not print what the page shows."""


class BlockTimeout(AssertionError):
    """A block that ran longer than its limit."""


class BlockExit(AssertionError):
    """A block that tried to end the interpreter (``os._exit``), which would end the run
    without a failure."""


DEFAULT_TIMEOUT_S = 300.0


@contextlib.contextmanager
def time_limit(seconds: float, where: str):
    """Raise BlockTimeout in the block after ``seconds`` (main thread only: SIGALRM)."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise BlockTimeout(
            f"{where}: the block ran longer than {seconds:g} s. If it must, give it more "
            f'time on the page: ```{{.python timeout="{2 * seconds:g}"}}'
        )

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def no_exit(where: str):
    """``os._exit`` inside a block fails the block instead of ending the run (with status 0)."""
    real = os._exit

    def refuse(status=0):
        raise BlockExit(f"{where}: the block called os._exit({status}), which would end the "
                        "test run without reporting; a page must not end the interpreter")

    os._exit = refuse
    try:
        yield
    finally:
        os._exit = real


@dataclass
class PageRun:
    """The state of one page during a test run."""

    page: Page
    namespace: dict
    next_block: int = 0
    failed_line: int | None = None
    actual: dict[int, str] = field(default_factory=dict)  # block index -> printed text
    figures: dict[str, bytes] = field(default_factory=dict)  # figure name -> SVG drawn
    stray: dict[int, list[str]] = field(default_factory=dict)  # block index -> stderr, warnings


class Checker:
    """Holds every page's namespace and outputs for one pytest session."""

    def __init__(self, root: Path, update: bool, timeout: float = DEFAULT_TIMEOUT_S):
        self.root = root
        self.update = update
        self.timeout = timeout
        self.runs: dict[Path, PageRun] = {}
        self.executions: dict[tuple[Path, int], int] = {}
        self.pages_seen: set[Path] = set()  # pages run by xdist workers (controller only)

    def page_run(self, path: Path) -> PageRun:
        path = Path(path).resolve()
        if path not in self.runs:
            reset_page_state(self.root)
            module = types.ModuleType(f"page_{len(self.runs)}")
            module.__file__ = str(path)
            sys.modules[module.__name__] = module  # dataclasses defined on a page need this
            self.runs[path] = PageRun(read_page(path, self.root), module.__dict__)
        return self.runs[path]

    def execute(self, run: PageRun, index: int, source: str) -> str:
        """Run one block; return what it printed. What it wrote to stderr or warned is kept
        in ``run.stray`` unless the fence allows it (``allow="stderr warnings"``)."""
        block = run.page.blocks[index]
        key = (run.page.path, index)
        self.executions[key] = self.executions.get(key, 0) + 1
        buffer, errors = io.StringIO(), io.StringIO()
        where = self.where(run, index)
        timeout = float(block.attributes.get("timeout", self.timeout))
        try:
            code = compile(source, str(run.page.path), "exec", dont_inherit=True)
            with contextlib.ExitStack() as stack:
                stack.enter_context(contextlib.redirect_stdout(buffer))
                stack.enter_context(contextlib.redirect_stderr(errors))
                caught = stack.enter_context(warnings.catch_warnings(record=True))
                stack.enter_context(no_exit(where))
                stack.enter_context(time_limit(timeout, where))
                exec(code, run.namespace)
            allowed = set(block.attributes.get("allow", "").split())
            stray = []
            if errors.getvalue().strip() and "stderr" not in allowed:
                stray.append(f"it wrote to stderr:\n{errors.getvalue().rstrip()}")
            if caught and "warnings" not in allowed:
                stray.append("it warned:\n" + "\n".join(
                    f"{w.category.__name__}: {w.message}" for w in caught))
            run.stray[index] = stray
            if "figure" in block.attributes:
                name = block.attributes["figure"]
                run.figures[name] = current_figure_svg(self.where(run, index), name)
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
        if run.stray.get(index):
            raise PageCheckError(
                f"{self.where(run, index)}: " + "\n".join(run.stray[index])
                + '\nFix the cause, or allow it on the fence: ```{.python allow="stderr warnings"}'
            )
        if not self.update:
            self.compare(run, index, actual)

    def compare(self, run: PageRun, index: int, actual: str) -> None:
        block = run.page.blocks[index]
        where = self.where(run, index)
        if "figure" in block.attributes:
            name = block.attributes["figure"]
            check_figure(self.root, name, run.figures[name], where)
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
            if not diff.strip() or diff.count("\n") < 3:
                diff = "\n".join(unmatched_lines(block.output, actual))
            raise PageCheckError(
                f"{where}: the block's output differs from the page.\n{diff}\n"
                "If the new output is right, run `make outputs` and review the diff."
            )
