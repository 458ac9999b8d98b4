"""Split the test run into shards, for CI runners that run them side by side (hooks in conftest.py).

``TEST_SHARD=2/3 make test`` runs the second of three shards. The tests are cut into the
same units as a parallel run deals out (tools/pagecheck/schedule.py): a page, a test file,
or one browser test of the few files whose tests are long and independent. The units,
sorted, are dealt round-robin, and a shard runs every test of its units (so a page's
blocks stay together, in order, and a file's module fixtures are set up once). Every
unit lands in exactly one shard, so the shards together run the whole suite. Without
``TEST_SHARD`` everything runs. The GitHub workflow (.github/workflows/docs.yml) uses it.
"""

import os

import pytest

from tools.pagecheck.schedule import unit_of


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/3"`` -> ``(2, 3)``; anything else is a usage error naming the value."""
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        index = count = 0
    if not 1 <= index <= count:
        raise pytest.UsageError(f"TEST_SHARD={text!r}: expected INDEX/COUNT, e.g. 2/3")
    return index, count


def shard_of(units: list[str], index: int, count: int) -> set[str]:
    """The units of shard ``index`` of ``count`` (1-based), dealt round-robin in sorted order."""
    return {unit for n, unit in enumerate(sorted(set(units))) if n % count == index - 1}


def pytest_collection_modifyitems(config, items):
    text = os.environ.get("TEST_SHARD")
    if not text:
        return
    index, count = parse_shard(text)
    mine = shard_of([unit_of(item.nodeid) for item in items], index, count)
    keep = [item for item in items if unit_of(item.nodeid) in mine]
    config.hook.pytest_deselected(items=[item for item in items if unit_of(item.nodeid) not in mine])
    items[:] = keep


def pytest_report_header(config):
    if text := os.environ.get("TEST_SHARD"):
        return f"shard {text} (TEST_SHARD): the test files dealt round-robin, this runner's share"
