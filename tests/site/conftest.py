"""The browser tests' fixtures: the built site on a local server, and one browser per session."""

import functools
import http.server
import os
import threading
from urllib.parse import urlsplit

import pytest

from tests.site.browsing import CHROMIUM_ARGS, SiteHandler, find_browser, require_browser


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
def browser():
    """The browser of the lookup order (tests/site/browsing.py), driven by Playwright."""
    executable = require_browser(find_browser(), os.environ)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield browser
        browser.close()
