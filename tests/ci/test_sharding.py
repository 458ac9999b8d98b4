"""The CI shards (tests/ci/sharding.py) together run every unit of tests exactly once."""

import pytest

from tests.ci.sharding import parse_shard, shard_of
from tools.pagecheck.schedule import SPREAD, unit_of


def test_shards_partition_the_units():
    units = [f"tests/test_{n}.py" for n in range(11)] + ["docs/index.md", "README.md"]
    shards = [shard_of(units, i, 3) for i in (1, 2, 3)]
    assert set().union(*shards) == set(units)
    assert sum(len(s) for s in shards) == len(units)
    assert max(map(len, shards)) - min(map(len, shards)) <= 1


def test_the_audit_of_every_page_is_dealt_to_both_shards_and_a_file_stays_whole():
    audit = [f"{SPREAD[0]}::test_audit[{page}]" for page in ("a", "b", "c", "d")]
    units = [unit_of(nodeid) for nodeid in audit + ["tests/x.py::test_1", "tests/x.py::test_2"]]
    first, second = shard_of(units, 1, 2), shard_of(units, 2, 2)
    assert first & set(audit) and second & set(audit)
    assert "tests/x.py" in first | second


@pytest.mark.parametrize("text", ["0/3", "4/3", "2", "a/b", "1/0"])
def test_a_malformed_shard_is_a_usage_error(text):
    with pytest.raises(pytest.UsageError, match="TEST_SHARD"):
        parse_shard(text)
