"""The CI shards (tests/ci/sharding.py) together run every test file exactly once."""

import pytest

from tests.ci.sharding import parse_shard, shard_of


def test_shards_partition_the_files():
    files = [f"tests/test_{n}.py" for n in range(11)] + ["docs/index.md", "README.md"]
    shards = [shard_of(files, i, 3) for i in (1, 2, 3)]
    assert set().union(*shards) == set(files)
    assert sum(len(s) for s in shards) == len(files)
    assert max(map(len, shards)) - min(map(len, shards)) <= 1


@pytest.mark.parametrize("text", ["0/3", "4/3", "2", "a/b", "1/0"])
def test_a_malformed_shard_is_a_usage_error(text):
    with pytest.raises(pytest.UsageError, match="TEST_SHARD"):
        parse_shard(text)
