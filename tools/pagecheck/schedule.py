"""How a parallel run (pytest-xdist) deals out the tests: whole pages, the longest work first.

A page (a Markdown file) is one unit of work: its blocks run on one worker, in order, so
each runs exactly once. Every other test is a unit of its own and goes to whichever
worker is free. `--dist loadfile` would keep each test file whole too, which puts all of
a slow file's tests (one browser run per page) on one worker. (Not `--dist loadgroup`
with xdist_group marks: xdist 3.8 tags the group onto `item._nodeid`, which pytest 9.2 no
longer reads, so the groups are ignored.)

The units go out longest first (longest-processing-time first), so that no long test
starts last while the other workers run out of work. A unit's length is what its tests
took in the last run that ran them, kept in pytest's cache (``.pytest_cache``); a unit
with a test never timed counts as the longest, so a new test starts early. Without a
cache (a fresh clone) the order is xdist's: the units with the most tests first.
"""

from __future__ import annotations

import math

CACHE_KEY = "pagecheck/durations"


def unit_of(nodeid: str) -> str:
    """A page's tests share the page's path as their unit; any other test is its own."""
    path = nodeid.split("::", 1)[0]
    return path if path.endswith(".md") else nodeid


class Durations:
    """Seconds each test took (setup, call and teardown), kept across runs in the cache."""

    def __init__(self, config):
        self.cache = getattr(config, "cache", None)  # None under `-p no:cacheprovider`
        self.known: dict[str, float] = self.cache.get(CACHE_KEY, {}) if self.cache else {}
        self.measured: dict[str, float] = {}

    def add(self, report) -> None:
        self.measured[report.nodeid] = self.measured.get(report.nodeid, 0.0) + report.duration

    def save(self) -> None:
        """Keep this run's times, and the earlier ones of the tests it did not run."""
        if self.cache and self.measured:
            self.cache.set(CACHE_KEY, self.known | self.measured)

    def of_unit(self, nodeids) -> float:
        times = [self.known.get(nodeid) for nodeid in nodeids]
        return math.inf if None in times else sum(times)


def make_scheduler(config, log, durations: Durations):
    """The xdist scheduler: LoadScopeScheduling with pages as scopes, longest unit first."""
    from xdist.scheduler import LoadScopeScheduling

    class PageScheduling(LoadScopeScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

        def _assign_work_unit(self, node) -> None:
            # The first call comes once xdist has filled its work queue: sort it once.
            if not self.ordered:
                units = sorted(self.workqueue.items(), key=lambda unit: durations.of_unit(unit[1]),
                               reverse=True)  # stable: equal lengths keep xdist's order
                self.workqueue.clear()
                self.workqueue.update(units)
                self.ordered = True
            super()._assign_work_unit(node)

    return PageScheduling(config, log)
