"""How a parallel run (pytest-xdist) deals out the tests: in whole units, the longest first.

The units of work:

* a page (a Markdown file): its blocks run on one worker, in order, so each runs exactly
  once;
* a test file: its tests share module-scoped fixtures (a benchmark run, a fixture site,
  the browser tab that reads every page in Run in the page's tests), which are then set
  up once, as in a serial run;
* except the test files of ``SPREAD``, whose tests are long and independent (each opens
  its own browser page): each of their tests is a unit of its own (the accessibility
  audit of one page).

(Not `--dist loadgroup` with xdist_group marks: xdist 3.8 tags the group onto
`item._nodeid`, which pytest 9.2 no longer reads, so the groups are ignored.)

The units go out longest first (longest-processing-time first), so that no long unit
starts last while the other workers run out of work. A unit's length is the sum of what
its tests took in the last run that ran them, kept in pytest's cache (``.pytest_cache``);
a test never timed counts as an average one. Without a cache (a fresh clone) the order is
xdist's: the units with the most tests first.
"""

from __future__ import annotations

CACHE_KEY = "pagecheck/durations"
SPREAD = ("tests/site/test_accessibility.py",)


def unit_of(nodeid: str) -> str:
    """The unit a test goes out in: its page, its test file, or (in SPREAD) itself."""
    path = nodeid.split("::", 1)[0]
    return nodeid if path in SPREAD else path


class Durations:
    """Seconds each test took (setup, call and teardown), kept across runs in the cache."""

    def __init__(self, config):
        self.cache = getattr(config, "cache", None)  # None under `-p no:cacheprovider`
        self.known: dict[str, float] = self.cache.get(CACHE_KEY, {}) if self.cache else {}
        self.measured: dict[str, float] = {}
        self.average = sum(self.known.values()) / len(self.known) if self.known else 0.0

    def add(self, report) -> None:
        self.measured[report.nodeid] = self.measured.get(report.nodeid, 0.0) + report.duration

    def save(self) -> None:
        """Keep this run's times, and the earlier ones of the tests it did not run."""
        if self.cache and self.measured:
            self.cache.set(CACHE_KEY, self.known | self.measured)

    def of_unit(self, nodeids) -> float:
        return sum(self.known.get(nodeid, self.average) for nodeid in nodeids)


def make_scheduler(config, log, durations: Durations):
    """The xdist scheduler: LoadScopeScheduling with our units as scopes, longest first."""
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):
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

    return UnitScheduling(config, log)
