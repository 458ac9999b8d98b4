"""What the page checker needs from pytest-markdown-docs, which is pinned exactly.

The plugin has public hooks for globals and for the Markdown parser, but none to run a
block differently: the checker registers a runner through the private module
``pytest_markdown_docs._runners``. If an upgrade changes any of this, these tests fail
with a message saying what to look at, instead of pages silently not being checked.
"""

import importlib.metadata
import inspect

from pytest_markdown_docs import _runners

from tools.pagecheck.plugin import PageRunner


def test_pytest_markdown_docs_is_the_pinned_version():
    assert importlib.metadata.version("pytest-markdown-docs") == "0.9.2", (
        "pytest-markdown-docs changed version: tools/pagecheck/plugin.py uses its private "
        "_runners module; check register_runner, DefaultRunner and the runtest signature"
    )


def test_the_private_runner_api_the_checker_uses_still_exists():
    assert callable(getattr(_runners, "register_runner", None)), "_runners.register_runner is gone"
    assert inspect.isclass(getattr(_runners, "DefaultRunner", None)), "_runners.DefaultRunner is gone"
    runtest = inspect.signature(_runners.DefaultRunner.runtest)
    assert "asyncio_runner" in runtest.parameters, f"DefaultRunner.runtest changed: {runtest}"
    assert issubclass(PageRunner, _runners.DefaultRunner)


def test_the_page_runner_is_the_default_runner():
    assert isinstance(_runners.get_runner(None), PageRunner), (
        "pytest-markdown-docs no longer uses the runner registered with default=True"
    )
