"""How a parallel run deals out its tests (tools/pagecheck/schedule.py): whole pages and
test files, the browser tests of SPREAD one by one, the longest unit first."""

from types import SimpleNamespace

from tests.support import ROOT
from tools.pagecheck.schedule import CACHE_KEY, SPREAD, Durations, make_scheduler, unit_of


class Cache(dict):
    """pytest's cache, in memory."""

    def get(self, key, default):
        return super().get(key, default)

    def set(self, key, value):
        self[key] = value


def test_a_page_and_a_test_file_are_units_and_a_spread_test_is_its_own():
    assert unit_of("docs/chapters/ch02-self-attention.md::[CodeFence#3][line:40]") \
        == "docs/chapters/ch02-self-attention.md"
    assert unit_of("tests/package/test_bench.py::test_quick[a::b]") == "tests/package/test_bench.py"
    spread = f"{SPREAD[0]}::test_every_page_has_no_wcag_aa_violation[index.md]"
    assert unit_of(spread) == spread
    assert all((ROOT / path).exists() for path in SPREAD), SPREAD


def test_durations_are_kept_across_runs_and_a_new_test_counts_as_an_average_one():
    cache = Cache({CACHE_KEY: {"old": 1.0, "gone": 3.0}})
    first = Durations(SimpleNamespace(cache=cache))
    for nodeid, seconds in [("old", 0.5), ("old", 2.0), ("new", 4.0)]:  # setup, call; call
        first.add(SimpleNamespace(nodeid=nodeid, duration=seconds))
    first.save()
    assert cache[CACHE_KEY] == {"old": 2.5, "gone": 3.0, "new": 4.0}
    second = Durations(SimpleNamespace(cache=cache))
    assert second.of_unit(["old", "new"]) == 6.5
    assert second.of_unit(["never timed"]) == (2.5 + 3.0 + 4.0) / 3


def test_without_a_cache_nothing_is_kept_and_every_unit_costs_nothing():
    durations = Durations(SimpleNamespace())
    durations.add(SimpleNamespace(nodeid="a", duration=1.0))
    durations.save()
    assert durations.of_unit(["a", "b"]) == 0.0


def test_the_longest_unit_goes_out_first_and_equal_ones_keep_their_order():
    times = {"u.py::a": 0.5, "short.md::1": 1.0, "short.md::2": 1.0, "t.py::long": 9.0,
             "t.py::other": 0.5, "v.py::a": 0.5}
    config = SimpleNamespace(cache=Cache({CACHE_KEY: times}), getvalue={"tx": ["2*popen"]}.get)
    scheduler = make_scheduler(config, None, Durations(config))
    for nodeid in times:  # the work queue as xdist fills it: units in collection order
        scheduler.workqueue.setdefault(unit_of(nodeid), {})[nodeid] = False
    sent = []

    class Node:
        send_runtest_some = sent.append

    node = Node()
    scheduler.registered_collections[node] = list(times)
    while scheduler.workqueue:
        scheduler._assign_work_unit(node)
    assert list(scheduler.assigned_work[node]) == ["t.py", "short.md", "u.py", "v.py"]
    assert sent == [[3, 4], [1, 2], [0], [5]]  # each unit's tests, in their order
