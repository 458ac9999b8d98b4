"""Shared fixtures: the site, built once per test session."""

import pytest

from tests.support import ROOT, BuiltSite, build_site


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> BuiltSite:
    return build_site(ROOT / "mkdocs.yml", tmp_path_factory.mktemp("site"))


def pytest_report_header(config):
    """Name the browser the browser tests drive (tests/site/browsing.py), in every run's header."""
    from tests.site.browsing import find_browser

    return f"browser tests: {find_browser().describe()}"
