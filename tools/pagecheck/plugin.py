"""The page checker: every Python block of every page runs, and prints what the page shows.

A pytest plugin (``-p tools.pagecheck.plugin``) on top of pytest-markdown-docs, which
collects one test per Python fence. It changes how a block runs (``checker.py``):

* The blocks of a page share one namespace and run in page order, like a notebook.
* A block's printed output is captured and compared with the ```` ```text title="Output" ````
  block right after it (``outputs.py``); a mismatch fails with a unified diff and the
  page's file and line; printing without an Output block fails too.
* A fence ```` ```{.python figure="name"} ```` saves the figure the block drew and compares
  it with ``docs/assets/figures/name.svg`` (``figures.py``).
* ``pytest --update-outputs`` (``make outputs``) rewrites Output blocks and figures
  (``update.py``).
* Under pytest-xdist a page is dealt out whole to one worker, and the longest work goes
  first (``schedule.py``).

Blocks marked ```` ```{.python notest} ```` are not run (pseudo-code); keep them rare.

pytest-markdown-docs has no public hook to run a block differently, so this module
registers a runner through its private ``_runners`` module. The plugin is pinned exactly
(requirements-dev.txt) and ``tests/checker/test_plugin_contract.py`` fails loudly if the
private API it relies on changes.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pytest_markdown_docs import _runners  # private API: pytest-markdown-docs is pinned exactly

from tools.pagecheck.checker import (
    DEFAULT_TIMEOUT_S,
    BlockTimeout,
    Checker,
    PageCheckError,
    guard_exit_status,
    set_final_status,
)
from tools.pagecheck.schedule import Durations, make_scheduler
from tools.pagecheck.update import write_outputs
from tools.source.markdown import CourseMarkdown

_checker: Checker | None = None
_durations: Durations | None = None


@_runners.register_runner(default=True)
class PageRunner(_runners.DefaultRunner):
    """Runs a fence through the session's Checker instead of in a fresh namespace."""

    # pytest-markdown-docs calls runtest again, without asyncio_runner, when it raises
    # TypeError; the second call would find the page failed and skip. It re-raises instead.
    raised: dict[int, TypeError] = {}

    def runtest(self, test, args, *, asyncio_runner=None):
        assert _checker is not None, "tools.pagecheck.plugin is not configured"
        if id(test) in self.raised:
            raise self.raised.pop(id(test))
        try:
            _checker.run_block(test)
        except TypeError as error:
            self.raised[id(test)] = error
            raise

    def repr_failure(self, test, excinfo, style=None):
        if isinstance(excinfo.value, BlockTimeout) or (
                isinstance(excinfo.value, AssertionError)
                and type(excinfo.value) is not AssertionError):
            return str(excinfo.value)  # PageCheckError, StaleFigure: the message says it all
        return super().repr_failure(test, excinfo, style)


def pytest_addoption(parser):
    parser.getgroup("pagecheck").addoption(
        "--update-outputs",
        action="store_true",
        default=False,
        help="rewrite the Output blocks (and figures) of the pages from what their blocks do",
    )
    parser.getgroup("pagecheck").addoption(
        "--block-timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        help="seconds a page's block may run (a fence may say timeout=\"600\"); 0: no limit",
    )


def pytest_configure(config):
    global _checker, _durations
    os.environ.setdefault("MPLBACKEND", "Agg")
    if not hasattr(config, "workerinput"):  # an xdist worker's times reach the controller
        _durations = Durations(config)
        guard_exit_status()  # the run's exit status is this process's
    _checker = Checker(Path(config.rootpath).resolve(), config.getoption("update_outputs"),
                       config.getoption("block_timeout"))


@pytest.hookimpl(tryfirst=True)
def pytest_markdown_docs_markdown_it():
    return CourseMarkdown(_checker.root if _checker else Path.cwd())


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Deal a page out as one unit, every other test on its own, longest first (schedule.py)."""
    if config.getvalue("dist") == "each":  # every test on every worker: nothing to group
        return None
    return make_scheduler(config, log, _durations)


def pytest_runtest_logreport(report):
    """Time every test where the run is steered (not on an xdist worker), for the next run."""
    if _durations is not None:
        _durations.add(report)


def pytest_sessionfinish(session, exitstatus):
    if _durations is not None:
        _durations.save()
    if _checker is None:
        return
    if _checker.update:
        changed, failures = write_outputs(_checker)
        for path in changed:
            print(f"\nupdated: {path}")
        for failure in failures:
            print(f"\n{failure}")
        if failures:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    set_final_status(session.exitstatus)
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: report its pages to the controller
        workeroutput["pagecheck_executions"] = [
            [str(path), index, count] for (path, index), count in _checker.executions.items()
        ]
        workeroutput["pagecheck_pages"] = [str(path) for path in _checker.runs]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """xdist controller: gather each worker's execution counts, for the summary line."""
    output = getattr(node, "workeroutput", {}) or {}
    for path, index, count in output.get("pagecheck_executions", []):
        key = (Path(path), index)
        _checker.executions[key] = _checker.executions.get(key, 0) + count
    _checker.pages_seen.update(Path(p) for p in output.get("pagecheck_pages", []))


def pytest_terminal_summary(terminalreporter):
    if _checker is None or not _checker.executions:
        return
    counts = list(_checker.executions.values())
    pages = len(_checker.pages_seen | set(_checker.runs))
    terminalreporter.write_line(
        f"pagecheck: {len(counts)} blocks on {pages} pages; "
        f"executions per block: min {min(counts)}, max {max(counts)}"
    )


def executions() -> dict[tuple[Path, int], int]:
    """How many times each block ran in this session (for the machinery tests)."""
    return dict(_checker.executions) if _checker else {}


__all__ = ["PageCheckError", "PageRunner", "executions"]
