"""Root hooks, for every test file, pages included: CI shards (tests/ci/sharding.py)."""

from tests.ci.sharding import pytest_collection_modifyitems, pytest_report_header  # noqa: F401
