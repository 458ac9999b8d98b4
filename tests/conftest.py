"""Shared fixtures: the site, built once per test session."""

import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class BuiltSite:
    """The site built from this checkout with ``--strict``, and what each page became."""

    site_dir: Path
    seconds: float
    pages: dict[Path, str] = field(default_factory=dict)  # Markdown source -> HTML
    blog_dir: str = "blog"
    site_url: str = ""


class _Recorder:
    """A stand-in MkDocs plugin that keeps each page's final HTML."""

    def __init__(self, pages: dict):
        self.pages = pages

    def on_post_page(self, output, page, config):
        if page.file.abs_src_path:
            self.pages[Path(page.file.abs_src_path)] = output
        return output


def build_site(config_file: Path, site_dir: Path) -> BuiltSite:
    """Build like ``mkdocs build --strict``: any warning aborts the build, and is shown."""
    import logging

    from mkdocs.commands.build import build
    from mkdocs.config import load_config
    from mkdocs.exceptions import Abort

    warnings: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: warnings.append(record.getMessage())
    logging.getLogger("mkdocs").addHandler(handler)
    logging.getLogger("mkdocs").setLevel(logging.INFO)
    start = time.perf_counter()
    config = load_config(str(config_file), site_dir=str(site_dir), strict=True)
    pages: dict[Path, str] = {}
    config.plugins["render-recorder"] = _Recorder(pages)
    config.plugins.on_startup(command="build", dirty=False)
    try:
        build(config)
    except Abort as abort:
        raise Abort(f"{abort}\n" + "\n".join(warnings)) from None
    finally:
        config.plugins.on_shutdown()
        logging.getLogger("mkdocs").removeHandler(handler)
    blog = config.plugins.get("material/blog")
    blog_dir = blog.config.blog_dir if blog is not None else "blog"
    return BuiltSite(site_dir, time.perf_counter() - start, pages, blog_dir, config.site_url or "")


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> BuiltSite:
    return build_site(ROOT / "mkdocs.yml", tmp_path_factory.mktemp("site"))


def pytest_report_header(config):
    """Name the browser the browser tests drive (tests/site/browsing.py), in every run's header."""
    from tests.site.browsing import find_browser

    return f"browser tests: {find_browser().describe()}"
