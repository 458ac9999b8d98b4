"""Shared fixtures: the site, built once per test run (shared by the xdist workers)."""

import pytest

from tests.support import BuiltSite, build_site_once_per_run


@pytest.fixture(scope="session")
def built_site(pytestconfig, tmp_path_factory) -> BuiltSite:
    return build_site_once_per_run(pytestconfig, tmp_path_factory)


def pytest_report_header(config):
    """Name the browser the browser tests drive (tests/site/browsing.py), in every run's header."""
    from tests.site.browsing import find_browser

    return f"browser tests: {find_browser().describe()}"
