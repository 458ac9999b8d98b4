"""What the browser tests share: which browser they drive, the local server, one page visit.

The browser is looked up in this order, and the first one found is used:

1. ``CHROMIUM=/path/to/a/chromium-based/browser``, if set (an explicit choice: a path that
   is not there is an error, never a silent fallback);
2. Debian's headless shell, ``/usr/bin/chromium-headless-shell`` (package
   ``chromium-headless-shell``): the same Chromium without the full browser's display
   pipeline, which loads and lays out a page for about half the CPU time;
3. Debian's Chromium, ``/usr/bin/chromium`` (or ``chromium`` on the ``PATH``);
4. Google Chrome (``google-chrome`` or ``google-chrome-stable`` on the ``PATH``, or its
   usual place on Linux and macOS);
5. Playwright's own Chromium, if ``python -m playwright install chromium`` has put it there.

The same tests run with any of them; the test run's header names the one used.
"""

import http.server
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
DEBIAN_HEADLESS_SHELL = "/usr/bin/chromium-headless-shell"
DEBIAN_CHROMIUM = "/usr/bin/chromium"
GOOGLE_CHROME = ["/opt/google/chrome/chrome",
                 "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome"]


@dataclass(frozen=True)
class BrowserChoice:
    """The browser the tests drive: what it is and where; ``path`` is None if none was found."""

    name: str
    path: str | None
    problem: str = ""  # why there is none, or why the explicit choice is wrong

    def describe(self) -> str:
        if self.path is None:
            return f"none ({self.problem})"
        return f"{self.name} at {self.path}{version_of(self.path)}"


def playwright_chromium() -> str | None:
    """Where Playwright's own Chromium is, if it has been installed (it is not by default)."""
    try:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            path = playwright.chromium.executable_path
    except Exception:  # no playwright, or its driver cannot start: no browser of its own
        return None
    return path if Path(path).exists() else None


def find_browser(environ=os.environ, exists=os.path.exists, which=shutil.which,
                 playwright=playwright_chromium) -> BrowserChoice:
    """The first browser of the lookup order (see the module docstring)."""
    explicit = environ.get("CHROMIUM")
    if explicit:
        if exists(explicit):
            return BrowserChoice("the browser named by CHROMIUM", explicit)
        return BrowserChoice("", None, f"CHROMIUM={explicit} names no file")
    if exists(DEBIAN_HEADLESS_SHELL):
        return BrowserChoice("Debian's Chromium headless shell", DEBIAN_HEADLESS_SHELL)
    if exists(DEBIAN_CHROMIUM):
        return BrowserChoice("Debian's Chromium", DEBIAN_CHROMIUM)
    if path := which("chromium"):
        return BrowserChoice("Chromium", path)
    for path in [which("google-chrome"), which("google-chrome-stable"), *GOOGLE_CHROME]:
        if path and exists(path):
            return BrowserChoice("Google Chrome", path)
    if path := playwright():
        return BrowserChoice("Playwright's Chromium", path)
    return BrowserChoice("", None, "no Chromium, Google Chrome or Playwright Chromium found;"
                         " install the `chromium-headless-shell` package, or set"
                         " CHROMIUM=/path/to/it")


def version_of(path: str) -> str:
    """`` (Chromium 156.0...)``: what the browser says it is, or nothing if it will not say."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = out.stdout.strip().splitlines()
    return f" ({lines[0].strip()})" if out.returncode == 0 and lines else ""


def require_browser(choice: BrowserChoice, environ) -> str:
    """The browser's path; without one, skip the browser tests, or fail them in CI.

    A ``CHROMIUM`` that names nothing fails everywhere: someone asked for that browser.
    """
    if choice.path is not None:
        return choice.path
    message = f"no browser for the browser tests: {choice.problem}"
    if environ.get("CI") == "true" or environ.get("CHROMIUM"):
        pytest.fail(message + ("" if environ.get("CHROMIUM") else "; CI must run them"),
                    pytrace=False)
    pytest.skip(message)


class SiteHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the built site as GitHub Pages would serve it at ``site_url``.

    The site lives under ``site_url``'s path; a missing page gets 404.html. The sitemap
    names pages by their published address, ``site_url``; Material's instant navigation
    only follows links the sitemap lists on the current host and port, so the sitemap is
    served with ``site_url`` replaced by this server's address, as if it were the real host.
    """

    site_url = "/"
    local_url = "/"

    def translate_path(self, path):
        path = urlsplit(path).path
        prefix = urlsplit(self.site_url).path
        if not path.startswith(prefix):
            return str(Path(self.directory) / "does-not-exist")
        return super().translate_path("/" + path[len(prefix):])

    def do_GET(self):
        if not urlsplit(self.path).path.endswith("/sitemap.xml"):
            return super().do_GET()
        sitemap = Path(self.translate_path(self.path)).read_text("utf8")
        self.send_body(200, "application/xml", sitemap.replace(self.site_url, self.local_url))

    def send_error(self, code, message=None, explain=None):
        page = Path(self.directory) / "404.html"
        if code != 404 or not page.exists():
            return super().send_error(code, message, explain)
        self.send_body(404, "text/html; charset=utf-8", page.read_text("utf8"))

    def send_body(self, status: int, content_type: str, text: str):
        body = text.encode("utf8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@dataclass
class Visit:
    """One page load, with everything the browser reported."""

    page: object
    requests: list = field(default_factory=list)
    failed: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    transferred: int = 0  # bytes on the wire: headers and bodies of every response


def visit(browser, url: str, expect_status: int = 200, wait: str = "networkidle",
          **context_options) -> Visit:
    """Open ``url`` in a fresh context (a first-time reader): see :func:`visit_in`."""
    return visit_in(browser.new_context(**context_options), url, expect_status, wait)


def visit_in(context, url: str, expect_status: int = 200, wait: str = "networkidle") -> Visit:
    """Open ``url`` in a new page of ``context``; ``wait="networkidle"`` waits for every
    request to end.

    The listeners are attached to the page before it loads, so they see every request it
    makes, its Web Workers' included.
    """
    page = context.new_page()
    seen = Visit(page)
    page.on("request", lambda r: seen.requests.append(r.url))
    page.on("requestfailed", lambda r: seen.failed.append(f"{r.url} ({r.failure})"))

    def finished(request):
        response = request.response()
        if response and response.status >= 400 and request.url != url:
            seen.failed.append(f"{request.url} (HTTP {response.status})")
        sizes = request.sizes()
        seen.transferred += sizes["responseBodySize"] + sizes["responseHeadersSize"]

    page.on("requestfinished", finished)
    # A 404 page's own status shows as a console error too; only the others count.
    page.on("console", lambda m: seen.errors.append(m.text)
            if m.type == "error" and m.location.get("url") != url else None)
    page.on("pageerror", lambda e: seen.errors.append(str(e)))
    response = page.goto(url, wait_until=wait)
    assert response.status == expect_status, f"{url}: HTTP {response.status}"
    return seen


def origin_of(url: str) -> str:
    """``http://host:port`` of an ``http://`` address."""
    return url[: url.index("/", len("http://"))]


def forget_the_site(profile, server) -> None:
    """Clear the site's cookies and storage in ``profile``, keeping the browser's caches."""
    cdp = profile.new_cdp_session(profile.pages[0])
    cdp.send("Storage.clearDataForOrigin", {
        "origin": origin_of(server),
        "storageTypes": "cookies,local_storage,indexeddb,cache_storage"})
    cdp.detach()


MATERIAL_SCHEME = {"light": "default", "dark": "slate"}  # the reader's scheme -> the theme's


def wait_for_scheme(page, scheme: str) -> None:
    """Wait until the theme shows the reader's colour ``scheme``: Material's script applies
    it once the page has loaded, which on a busy machine can be after the network is idle."""
    expected = MATERIAL_SCHEME[scheme]
    try:
        page.wait_for_function("s => document.body.dataset.mdColorScheme === s", arg=expected,
                               timeout=10_000)
    except Exception:  # Playwright's timeout, which would not say what was awaited
        shown = page.get_attribute("body", "data-md-color-scheme")
        raise AssertionError(f"{page.url}: the {scheme} theme ({expected}) never showed, "
                             f"the page shows {shown}") from None


def page_paths(built_site) -> list[str]:
    """Every page of the built site, as a path under the site's root."""
    paths = sorted(p.parent.relative_to(built_site.site_dir).as_posix()
                   for p in built_site.site_dir.rglob("index.html"))
    return ["" if p == "." else p + "/" for p in paths]
