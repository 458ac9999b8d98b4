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

from tools.pagecheck.checker import DEFAULT_TIMEOUT_S, Checker, PageCheckError
from tools.pagecheck.update import write_outputs
from tools.source.markdown import CourseMarkdown

_checker: Checker | None = None


@_runners.register_runner(default=True)
class PageRunner(_runners.DefaultRunner):
    """Runs a fence through the session's Checker instead of in a fresh namespace."""

    def runtest(self, test, args, *, asyncio_runner=None):
        assert _checker is not None, "tools.pagecheck.plugin is not configured"
        _checker.run_block(test)

    def repr_failure(self, test, excinfo, style=None):
        if isinstance(excinfo.value, AssertionError) and type(excinfo.value) is not AssertionError:
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
    global _checker
    os.environ.setdefault("MPLBACKEND", "Agg")
    _checker = Checker(Path(config.rootpath).resolve(), config.getoption("update_outputs"),
                       config.getoption("block_timeout"))


@pytest.hookimpl(tryfirst=True)
def pytest_markdown_docs_markdown_it():
    return CourseMarkdown(_checker.root if _checker else Path.cwd())


# Under pytest-xdist a page's blocks must run on one worker, in order, so each runs
# exactly once; every other test may go to any worker. `--dist loadfile` would keep each
# test file whole too, which puts all of a slow file's tests (one browser run per page)
# on one worker. (Not `--dist loadgroup` with xdist_group marks: xdist 3.8 tags the group
# onto `item._nodeid`, which pytest 9.2 no longer reads, so the groups are ignored.)
@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Schedule a page (a Markdown file) as one unit and every other test on its own."""
    if config.getvalue("dist") == "each":  # every test on every worker: nothing to group
        return None
    from xdist.scheduler import LoadScopeScheduling

    class PageScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return path if path.endswith(".md") else nodeid

    return PageScheduling(config, log)


def pytest_sessionfinish(session, exitstatus):
    if _checker is None:
        return
    if _checker.update:
        for path in write_outputs(_checker):
            print(f"\nupdated: {path}")
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
