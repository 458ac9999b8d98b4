"""The built site in a real browser: Chromium, driven by Playwright, on a local server.

The site is served as GitHub Pages serves it: under the path of ``site_url``, with
``404.html`` for any address it does not have. Every request the pages make is recorded;
any that goes to another host fails the tests, so the site provably loads nothing from
outside itself. Screenshots of the home page and chapter 2, light and dark, are saved
under ``artifacts/screenshots/`` for a human to look at.

Without Chromium the tests are skipped with a message, except in CI (``CI=true``), where
a missing browser is a failure.
"""

import functools
import http.server
import os
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.support import ROOT

# Another Chromium-based browser (Chrome on a Mac) can stand in: CHROMIUM=/path/to/it.
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
CHAPTER_2 = "chapters/ch02-self-attention/"
PHONE = {"width": 390, "height": 844}


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


def require_chromium(path: str, environ) -> str:
    """``path`` if Chromium is there; else skip the browser tests, or fail them in CI."""
    if Path(path).exists():
        return path
    message = f"Chromium not found at {path} (install the `chromium` package): browser tests not run"
    if environ.get("CI") == "true":
        pytest.fail(message + ", and CI must run them", pytrace=False)
    pytest.skip(message)


def test_missing_chromium_skips_on_a_laptop_but_fails_in_ci(tmp_path):
    missing = str(tmp_path / "no-chromium")
    with pytest.raises(pytest.skip.Exception, match="install the `chromium` package"):
        require_chromium(missing, {})
    with pytest.raises(pytest.fail.Exception, match="CI must run them"):
        require_chromium(missing, {"CI": "true"})


@pytest.fixture(scope="session")
def browser():
    executable = require_chromium(CHROMIUM, os.environ)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@dataclass
class Visit:
    """One page load in a fresh context, with everything the browser reported."""

    page: object
    requests: list = field(default_factory=list)
    failed: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    transferred: int = 0  # bytes on the wire: headers and bodies of every response


def visit(browser, url: str, expect_status: int = 200, wait: str = "networkidle",
          **context_options) -> Visit:
    """Open ``url`` in a fresh context; ``wait="networkidle"`` waits for every request to end.

    The listeners are attached before the page loads, so they see every request it makes.
    """
    context = browser.new_context(**context_options)
    page = context.new_page()
    seen = Visit(page)
    context.on("request", lambda r: seen.requests.append(r.url))
    context.on("requestfailed", lambda r: seen.failed.append(f"{r.url} ({r.failure})"))

    def finished(request):
        response = request.response()
        if response and response.status >= 400 and request.url != url:
            seen.failed.append(f"{request.url} (HTTP {response.status})")
        sizes = request.sizes()
        seen.transferred += sizes["responseBodySize"] + sizes["responseHeadersSize"]

    context.on("requestfinished", finished)
    # A 404 page's own status shows as a console error too; only the others count.
    page.on("console", lambda m: seen.errors.append(m.text)
            if m.type == "error" and m.location.get("url") != url else None)
    page.on("pageerror", lambda e: seen.errors.append(str(e)))
    response = page.goto(url, wait_until=wait)
    assert response.status == expect_status, f"{url}: HTTP {response.status}"
    return seen


def page_paths(built_site) -> list[str]:
    """Every page of the built site, as a path under the site's root."""
    paths = sorted(p.parent.relative_to(built_site.site_dir).as_posix()
                   for p in built_site.site_dir.rglob("index.html"))
    return ["" if p == "." else p + "/" for p in paths]


def problems_of(seen: Visit, base: str, html: str) -> list[str]:
    origin = base[: base.index("/", len("http://"))]
    found = [f"request to another host: {u}" for u in seen.requests if not u.startswith(origin)]
    found += [f"failed request: {f}" for f in seen.failed]
    found += [f"console error: {e}" for e in seen.errors]
    if 'class="arithmatex"' in html:
        shown = seen.page.eval_on_selector_all(
            "math", "ms => ms.filter(m => getComputedStyle(m).display.includes('math')"
            " && m.getBoundingClientRect().width > 0).length")
        if not shown:
            found.append("the page has formulas but shows no typeset math")
    highlighted = ":is(.highlight, .highlight-ipynb) pre span[class]"  # Material; mkdocs-jupyter
    if 'class="highlight' in html and not seen.page.locator(highlighted).count():
        found.append("the page has code but none of it is highlighted")
    copy_buttons = seen.page.locator("button[data-md-type=copy]").count()
    if seen.page.locator(".highlight pre > code").count() and not copy_buttons:
        found.append("the page's code blocks have no copy button")
    return found


@dataclass
class PageReport:
    problems: list  # what is wrong with the page on a desktop screen
    phone_width: int  # document width at a 390-px viewport


@pytest.fixture(scope="session")
def page_reports(browser, server, built_site) -> dict[str, PageReport]:
    """Every page loaded once, checked on a desktop screen, then narrowed to a phone's width."""
    reports = {}
    paths = page_paths(built_site)
    # Start every page loading at once, then wait for each to finish: the waits overlap.
    visits = {path: visit(browser, server + path, wait="commit") for path in paths}
    for path, seen in visits.items():
        seen.page.wait_for_load_state("networkidle")
        html = (built_site.site_dir / path / "index.html").read_text("utf8")
        problems = problems_of(seen, server, html)
        seen.page.set_viewport_size(PHONE)
        width = seen.page.evaluate("document.documentElement.scrollWidth")
        reports[path or "/"] = PageReport(problems, width)
        seen.page.context.close()
    return reports


def test_every_page_loads_with_no_error_and_nothing_from_outside(page_reports):
    assert CHAPTER_2 in page_reports, f"chapter 2 was not built: {sorted(page_reports)}"
    problems = {path: r.problems for path, r in page_reports.items() if r.problems}
    assert not problems, problems


def test_every_page_fits_a_390_px_phone_without_sideways_scrolling(page_reports):
    too_wide = {path: r.phone_width for path, r in page_reports.items()
                if r.phone_width > PHONE["width"]}
    assert not too_wide, f"pages wider than {PHONE['width']} px: {too_wide}"


def test_missing_page_shows_the_custom_404(browser, server):
    seen = visit(browser, server + "no/such/page/", expect_status=404)
    assert seen.page.locator("h1").inner_text() == "Page not found"
    assert problems_of(seen, server, "") == []  # its styles and scripts load from the site root
    seen.page.context.close()


def test_search_for_causal_mask_finds_chapter_2_and_highlights_it(browser, server):
    seen = visit(browser, server)
    page = seen.page
    page.locator("input.md-search__input").click()
    page.locator("input.md-search__input").press_sequentially("causal mask")  # keystrokes
    section = page.locator(f'.md-search-result a[href*="{CHAPTER_2}"][href$="#24-the-causal-mask"]')
    section.wait_for(state="attached", timeout=10_000)  # chapter 2's section is among the results
    page.locator(f'.md-search-result__item a[href*="{CHAPTER_2}"]').first.click()
    page.wait_for_url(f"**/{CHAPTER_2}**")
    assert page.locator("mark").count() > 0, "the search term is not highlighted on the page"
    assert not seen.errors
    page.context.close()


def test_theme_toggle_switches_between_light_and_dark(browser, server):
    seen = visit(browser, server, color_scheme="light", wait="load")
    page = seen.page
    scheme = lambda: page.get_attribute("body", "data-md-color-scheme")  # noqa: E731
    assert scheme() == "default"
    page.locator("form[data-md-component=palette] label:visible").first.click()
    assert scheme() == "slate"
    page.locator("form[data-md-component=palette] label:visible").first.click()
    assert scheme() == "default"
    page.context.close()


def test_interview_answer_opens_on_click(browser, server):
    seen = visit(browser, server + CHAPTER_2, wait="load")
    question = seen.page.locator("details.question").first
    answer = question.locator("p").first
    assert question.get_attribute("open") is None and not answer.is_visible()
    question.locator("summary").click()
    assert question.get_attribute("open") is not None and answer.is_visible()
    seen.page.context.close()


def test_chapter_downloads_as_a_notebook(browser, server):
    seen = visit(browser, server + CHAPTER_2, wait="load", accept_downloads=True)
    with seen.page.expect_download() as download:
        seen.page.get_by_text("Download as notebook").click()
    assert download.value.suggested_filename == "ch02-self-attention.ipynb"
    assert download.value.failure() is None
    seen.page.context.close()


def test_questions_page_links_to_each_question_with_instant_navigation(browser, server):
    seen = visit(browser, server + "interview-questions/")  # instant navigation is ready
    links = seen.page.locator(f'article a[href*="{CHAPTER_2.rstrip("/")}"]')
    assert links.count() >= 8
    href = links.first.get_attribute("href")
    seen.page.evaluate("window.beforeTheClick = true")
    links.first.click()
    anchor = href.split("#")[1]
    # The question arrives and is scrolled into view (the swap and the scroll take a moment).
    seen.page.wait_for_function(
        """id => { const e = document.getElementById(id);
                   const top = e ? e.getBoundingClientRect().top : -1;
                   return top >= 0 && top < window.innerHeight; }""", arg=anchor, timeout=10_000)
    assert seen.page.url.endswith(f"{CHAPTER_2}#{anchor}")
    # Instant navigation: the page was swapped in place, not reloaded.
    assert seen.page.evaluate("window.beforeTheClick === true")
    seen.page.context.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("name, path", [("home", ""), ("chapter-2", CHAPTER_2)])
def test_screenshots_and_transfer_size(browser, server, name, path, scheme, capsys):
    seen = visit(browser, server + path, color_scheme=scheme, viewport={"width": 1280, "height": 900})
    expected = "slate" if scheme == "dark" else "default"
    assert seen.page.get_attribute("body", "data-md-color-scheme") == expected
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    seen.page.screenshot(path=SCREENSHOTS / f"{name}-{scheme}.jpg", full_page=True, quality=80)
    if scheme == "light":
        with capsys.disabled():
            print(f"\n  transfer size of {name}: {seen.transferred / 1024:.0f} KiB in "
                  f"{len(seen.requests)} requests (uncompressed: the test server does not gzip)",
                  end="")
    seen.page.context.close()
