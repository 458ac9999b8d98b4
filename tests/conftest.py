"""Shared fixtures: the site, built once per test session."""

import pytest

from tests.support import ROOT, BuiltSite, build_site


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> BuiltSite:
    return build_site(ROOT / "mkdocs.yml", tmp_path_factory.mktemp("site"))
