"""The built site in a real browser (Chromium or Chrome, driven by Playwright) on a local server.

The site is served as GitHub Pages serves it: under the path of ``site_url``, with
``404.html`` for any address it does not have. Every request the pages make is recorded;
any that goes to another host fails the tests, so the site provably loads nothing from
outside itself. Screenshots of the home page and chapter 2, light and dark, are saved
under ``artifacts/screenshots/`` for a human to look at.

Which browser: see tests/site/browsing.py (the run's header names it). Without one the
tests are skipped with a message, except in CI (``CI=true``), where that is a failure.
"""

import re
import time
from dataclasses import dataclass

import pytest

from tests.support import ROOT
from tests.site.browsing import (DEBIAN_CHROMIUM, DEBIAN_HEADLESS_SHELL, DESKTOP, PHONE,
                                 BrowserChoice, Visit, find_browser, origin_of, page_paths,
                                 require_browser, visit, wait_for_scheme)

SCREENSHOTS = ROOT / "artifacts" / "screenshots"
CHAPTER_2 = "chapters/ch02-self-attention/"


def test_browser_lookup_order_explicit_then_debian_then_chrome_then_playwright():
    found = {DEBIAN_HEADLESS_SHELL, DEBIAN_CHROMIUM, "/usr/bin/google-chrome", "/pw/chrome",
             "/my/chrome"}
    which = {"google-chrome": "/usr/bin/google-chrome"}.get

    def lookup(environ, present):
        return find_browser(environ, exists=lambda p: p in present, which=which,
                            playwright=lambda: "/pw/chrome" if "/pw/chrome" in present else None)

    assert lookup({"CHROMIUM": "/my/chrome"}, found) == BrowserChoice(
        "the browser named by CHROMIUM", "/my/chrome")
    assert lookup({}, found) == BrowserChoice("Debian's Chromium headless shell",
                                              DEBIAN_HEADLESS_SHELL)
    found -= {DEBIAN_HEADLESS_SHELL}
    assert lookup({}, found) == BrowserChoice("Debian's Chromium", DEBIAN_CHROMIUM)
    assert lookup({}, found - {DEBIAN_CHROMIUM}).name == "Google Chrome"
    assert lookup({}, {"/pw/chrome"}) == BrowserChoice("Playwright's Chromium", "/pw/chrome")
    assert lookup({}, set()).path is None
    # An explicit choice that is not there is an error, not a silent fallback.
    wrong = lookup({"CHROMIUM": "/no/such"}, found)
    assert wrong.path is None and "CHROMIUM=/no/such" in wrong.problem


def test_the_run_header_names_the_browser_and_its_version():
    """CI installs whatever Chromium Debian serves that day (150, then 156: issue 38), so the
    header of every run says which version the browser tests drove."""
    from tests.conftest import pytest_report_header

    if find_browser().path is None:
        pytest.skip("no browser to name")
    assert re.search(r"\((Chromium|Google Chrome)[^()]* \d+(\.\d+){3}\)$",
                     pytest_report_header(None)), pytest_report_header(None)


def test_missing_browser_skips_on_a_laptop_but_fails_in_ci_or_when_asked_for():
    none = BrowserChoice("", None, "nothing here")
    with pytest.raises(pytest.skip.Exception, match="nothing here"):
        require_browser(none, {})
    with pytest.raises(pytest.fail.Exception, match="CI must run them"):
        require_browser(none, {"CI": "true"})
    with pytest.raises(pytest.fail.Exception, match="nothing here"):
        require_browser(none, {"CHROMIUM": "/no/such"})


def problems_of(seen: Visit, base: str, html: str) -> list[str]:
    found = [f"request to another host: {u}" for u in seen.requests
             if not u.startswith(origin_of(base))]
    found += [f"failed request: {f}" for f in seen.failed]
    found += [f"console error: {e}" for e in seen.errors]
    if 'class="arithmatex"' in html:
        shown = seen.page.eval_on_selector_all(
            "math", "ms => ms.filter(m => getComputedStyle(m).display.includes('math')"
            " && m.getBoundingClientRect().width > 0).length")
        if not shown:
            found.append("the page has formulas but shows no typeset math")
    highlighted = ".highlight pre span[class]"
    if 'class="highlight' in html and not seen.page.locator(highlighted).count():
        found.append("the page has code but none of it is highlighted")
    copy_buttons = seen.page.locator("button[data-md-type=copy]").count()
    if seen.page.locator(".highlight pre > code").count() and not copy_buttons:
        found.append("the page's code blocks have no copy button")
    return found


# The longest line of every code or Output block in the content that scrolls sideways.
WIDE_BLOCKS = """() => [...document.querySelectorAll('.md-content pre, .md-content pre > code')]
  .filter(e => e.scrollWidth > e.clientWidth + 1)
  .map(e => e.textContent.split('\\n').reduce((a, b) => (b.length > a.length ? b : a), ''))"""


@dataclass
class PageReport:
    problems: list  # what is wrong with the page on a desktop screen
    phone_width: int  # document width at a 390-px viewport
    wide_blocks: list  # code or Output blocks that scroll sideways at 1280 px: longest lines


QUIET = 0.5  # seconds without network activity: idle, as Playwright's "networkidle" means


def wait_until_quiet(visits: list[Visit]) -> None:
    """Wait until none of the ``visits`` has started or ended a request for QUIET seconds.

    Counted from the visits' own records (requests, failures, bytes received), which
    Playwright updates while it waits: with many pages loading at once, the headless
    shell sometimes never reports the idle network that Playwright's own wait needs."""
    def activity():
        return [(len(v.requests), len(v.failed), v.transferred) for v in visits]

    last, quiet_since = activity(), time.monotonic()
    while time.monotonic() - quiet_since < QUIET:
        visits[-1].page.wait_for_timeout(50)
        if (now := activity()) != last:
            last, quiet_since = now, time.monotonic()


@pytest.fixture(scope="session")
def page_reports(browser, server, built_site) -> dict[str, PageReport]:
    """Every page loaded, checked on a desktop screen, then narrowed to a phone's width.

    The pages load one after the other, each in a tab of its own, and are checked once
    none of them has used the network for half a second: a page's late requests (its
    search index, its favicon) are recorded while the next pages load.
    """
    paths = page_paths(built_site)
    visits = [visit(browser, server + path, wait="load") for path in paths]
    wait_until_quiet(visits)
    reports = {}
    for path, seen in zip(paths, visits):
        html = (built_site.site_dir / path / "index.html").read_text("utf8")
        problems = problems_of(seen, server, html)
        seen.page.set_viewport_size(DESKTOP)
        wide = seen.page.evaluate(WIDE_BLOCKS)
        seen.page.set_viewport_size(PHONE)
        width = seen.page.evaluate("document.documentElement.scrollWidth")
        reports[path or "/"] = PageReport(problems, width, wide)
        seen.page.context.close()
    return reports


def test_every_page_loads_with_no_error_and_nothing_from_outside(page_reports):
    assert CHAPTER_2 in page_reports, f"chapter 2 was not built: {sorted(page_reports)}"
    problems = {path: r.problems for path, r in page_reports.items() if r.problems}
    assert not problems, problems


def test_no_code_or_output_block_scrolls_sideways_at_1280_px(page_reports):
    wide = {path: sorted(set(r.wide_blocks)) for path, r in page_reports.items() if r.wide_blocks}
    assert not wide, ("code or Output blocks that scroll sideways in a 1280-px window (keep "
                      f"lines to about 80 characters; a wide table can be a table): {wide}")


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
    section = page.locator(f'.md-search-result a[href*="{CHAPTER_2}"]:not([href*="/notebook/"])[href$="#24-the-causal-mask"]')
    section.wait_for(state="attached", timeout=10_000)  # chapter 2's section is among the results
    page.locator(f'.md-search-result__item a[href*="{CHAPTER_2}"]').first.click()
    page.wait_for_url(f"**/{CHAPTER_2}**")
    assert page.locator("mark").count() > 0, "the search term is not highlighted on the page"
    assert not seen.errors
    page.context.close()


# What a reader types, and the section that teaches it, which must be the first result's
# first section (issue 41: included source listings and exercises came first). Hyphenated
# terms are searched whole (mkdocs.yml's search separator).
CH = {n: f"chapters/{name}/#" for n, name in [
    (1, "ch01-foundations"), (2, "ch02-self-attention"), (3, "ch03-transformer-block"),
    (4, "ch04-generation"), (5, "ch05-attention-at-scale"), (6, "ch06-backpropagation"),
    (7, "ch07-train-a-gpt"), (8, "ch08-long-contexts"),
    (9, "ch09-smaller-caches-steadier-logits"), (10, "ch10-linear-attention"),
    (11, "ch11-serving"), (12, "ch12-sparse-attention"),
    (13, "ch13-encoders-and-cross-attention"), (14, "ch14-what-attention-learns")]}
SEARCHES = {
    # MLA is taught over two sections: its data flow (9.2) and its absorbed form (9.3);
    # cross-attention is introduced in 2.7 and built against T5 in 13.3
    "mla": (CH[9] + "92-", CH[9] + "93-"), "kv cache": CH[4] + "42-", "flash attention": CH[5] + "54-",
    "FlashAttention": CH[5] + "54-", "online softmax": CH[5] + "53-",
    "causal mask": CH[2] + "24-", "multi-head attention": CH[2] + "25-",
    "grouped-query attention": CH[2] + "26-", "cross-attention": (CH[2] + "27-", CH[13] + "133-"),
    "padding mask": CH[2] + "28-", "RoPE": CH[3] + "rotary-position-embeddings-rope",
    "sinusoidal": CH[3] + "sinusoidal-encodings", "SwiGLU": CH[3] + "swiglu",
    "pre-LN": CH[3] + "pre-ln-and-post-ln-measured", "beam search": CH[4] + "45-",
    "top-p": CH[4] + "44-", "min-p": CH[4] + "44-", "log-sum-exp": CH[1] + "18-",
    "broadcasting": CH[1] + "13-", "einsum": CH[1] + "14-",
    "softmax Jacobian": CH[6] + "61-", "LayerNorm backward": CH[6] + "65-",
    "Adam": CH[6] + "adam", "BPE": CH[7] + "71-", "YaRN": CH[8] + "82-",
    "ALiBi": CH[8] + "83-", "sliding window": CH[8] + "84-",
    "attention sinks": CH[8] + "85-", "QK-norm": CH[9] + "94-",
    "soft-capping": CH[9] + "95-", "mixture of experts": CH[9] + "97-",
    "load balance": CH[9] + "99-", "linear attention": CH[10] + "101-",
    "delta rule": CH[10] + "103-", "UT transform": CH[10] + "104-",
    "Gated DeltaNet": CH[10] + "105-", "speculative decoding": CH[11] + "111-",
    "paged KV cache": CH[11] + "112-", "continuous batching": CH[11] + "113-",
    "split-KV": CH[11] + "114-"}


def test_search_puts_the_section_that_teaches_a_term_first_with_no_wall_of_code(
        browser, server):
    seen = visit(browser, server)
    page = seen.page
    box = page.locator("input.md-search__input")
    wrong, walls = {}, {}
    for query, section in SEARCHES.items():
        box.click()
        box.fill("")  # no query, no results: the next ones are for the whole query
        page.locator(".md-search-result__item").first.wait_for(state="detached")
        box.fill(query[:-1])  # typed at once, then the last key: one search, whole query
        box.press(query[-1])
        first = page.locator(".md-search-result__item").first
        first.wait_for(state="attached", timeout=10_000)
        shown = first.evaluate("""item => ({
            section: [...item.querySelectorAll('a')].map(a => a.getAttribute('href'))
                .find(href => href.includes('#')),
            code: item.querySelectorAll('pre').length,
            height: item.getBoundingClientRect().height})""")
        href = shown["section"] or "#"
        found = href.split("?")[0] + "#" + href.split("#", 1)[1]  # less the ?h= highlight
        if not any(s in found for s in ((section,) if isinstance(section, str)
                                        else section)):
            wrong[query] = found
        if shown["code"] or shown["height"] > 1000:  # the preview is prose, not a listing
            walls[query] = shown
    assert len(SEARCHES) >= 30
    assert not wrong, f"the first section found is not the one that teaches the term: {wrong}"
    assert not walls, f"previews of code: {walls}"
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


def test_the_next_pages_address_keeps_no_anchor_of_the_page_left(browser, server):
    """Anchor tracking writes the section in view into the address 250 ms after a scroll;
    when that write comes while the next page is fetched (here the fetch is slowed), the
    next page's address ended in the old page's anchor, /practice/ch10/#ex5 (issue 41).
    docs/javascripts/instant-navigation.js puts back the address the reader asked for."""
    seen = visit(browser, server + "practice/ch09/", wait="load", viewport=DESKTOP)
    page = seen.page
    page.route("**/practice/ch10/", lambda route: (time.sleep(1.5), route.continue_()))
    page.evaluate("() => document.getElementById('ex5').scrollIntoView()")
    page.wait_for_timeout(1000)  # tracking settles: the address names no section yet
    page.mouse.wheel(0, 200)  # a scroll: the next write of the address is 250 ms away
    page.locator('a[href$="practice/ch10/"]').first.evaluate("a => a.click()")
    page.wait_for_function("() => document.querySelector('article h1')?.textContent"
                           ".includes('10')", timeout=30_000)
    page.wait_for_timeout(1000)  # any late write has come
    assert page.url == server + "practice/ch10/"
    assert not seen.errors
    page.context.close()


def test_questions_page_links_to_each_question_with_instant_navigation(browser, server):
    seen = visit(browser, server + "interview-questions/")  # instant navigation is ready
    assert seen.page.locator(f'article a[href*="{CHAPTER_2}#q-"]').count() >= 8
    # The first question, in view as the page opens: a link that must be scrolled to first
    # lets Material's navigation.tracking put the questions page's own section anchor
    # (#foundations) on the next page's address.
    links = seen.page.locator('article a[href*="chapters/"][href*="#q-"]')
    href = links.first.get_attribute("href")
    target = href.split("chapters/", 1)[1]
    seen.page.evaluate("window.beforeTheClick = true")
    links.first.click()
    anchor = href.split("#")[1]
    # The question arrives and is scrolled into view (the swap and the scroll take a moment).
    seen.page.wait_for_function(
        """id => { const e = document.getElementById(id);
                   const top = e ? e.getBoundingClientRect().top : -1;
                   return top >= 0 && top < window.innerHeight; }""", arg=anchor, timeout=10_000)
    assert seen.page.url.endswith(f"chapters/{target}"), (seen.page.url, target)
    # Instant navigation: the page was swapped in place, not reloaded.
    assert seen.page.evaluate("window.beforeTheClick === true")
    seen.page.context.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("name, path", [("home", ""), ("chapter-2", CHAPTER_2)])
def test_screenshots_and_transfer_size(browser, server, name, path, scheme, capsys):
    seen = visit(browser, server + path, color_scheme=scheme, viewport=DESKTOP)
    wait_for_scheme(seen.page, scheme)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    seen.page.screenshot(path=SCREENSHOTS / f"{name}-{scheme}.jpg", full_page=True, quality=80)
    if scheme == "light":
        with capsys.disabled():
            print(f"\n  transfer size of {name}: {seen.transferred / 1024:.0f} KiB in "
                  f"{len(seen.requests)} requests (uncompressed: the test server does not gzip)",
                  end="")
    seen.page.context.close()
