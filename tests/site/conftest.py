"""The browser tests' fixtures: the built site on a local server, and the browsers that visit it."""

import functools
import http.server
import os
import threading
from urllib.parse import urlsplit

import pytest

from tests.site.browsing import (CHROMIUM_ARGS, SiteHandler, find_browser, forget_the_site,
                                 require_browser)


@pytest.fixture(scope="session")
def server(built_site):
    """The base URL of the built site, served on 127.0.0.1 at a free port."""
    site_url = built_site.site_url.rstrip("/") + "/"
    handler = type("Handler", (SiteHandler,), {"site_url": site_url})
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(built_site.site_dir))
    )
    handler.local_url = f"http://127.0.0.1:{httpd.server_address[1]}{urlsplit(site_url).path}"
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield handler.local_url
    httpd.shutdown()


@pytest.fixture(scope="session")
def playwright():
    """Playwright's driver, for the session's browsers."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="session")
def browser_path() -> str:
    """The browser of the lookup order (tests/site/browsing.py)."""
    return require_browser(find_browser(), os.environ)


@pytest.fixture(scope="session")
def browser(playwright, browser_path):
    """The browser, driven by Playwright: each visit opens a fresh context in it."""
    browser = playwright.chromium.launch(executable_path=browser_path, args=CHROMIUM_ARGS)
    yield browser
    browser.close()


@pytest.fixture(scope="session")
def reader_profile(playwright, browser_path, tmp_path_factory):
    """A second browser, with a profile on disk: its cache keeps what earlier pages compiled
    (V8 caches Pyodide's WebAssembly with the response), which an in-memory fresh context
    never keeps."""
    context = playwright.chromium.launch_persistent_context(
        tmp_path_factory.mktemp("reader-profile"), executable_path=browser_path,
        args=CHROMIUM_ARGS)
    yield context
    context.close()


@pytest.fixture
def returning_reader(reader_profile, server):
    """The profile's context with the site's cookies and storage cleared: a reader who has
    been here before, with nothing left from the last page but the browser's caches."""
    forget_the_site(reader_profile, server)
    return reader_profile
