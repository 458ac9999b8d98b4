"""Run in the page: the reader's browser runs the blocks, and prints what the page shows.

Chromium (Playwright) opens every page of the built site and presses the page's own Run
controls; every block that the build offers to run must print what the page's checked
Output block shows (the varying-number marker applies, as in the page checker). Any
request that leaves the local server fails the test, as in the other browser tests.

The pages are read in one tab, as a returning reader reads them (one browser profile on
disk, its cookies and storage cleared first): the first page is loaded, and each next one
is reached by a link, which Material's instant navigation follows by swapping the page in
place. Python, started on the first page, serves the next ones, each with a namespace of
its own, and with what it left of the state pages share (NumPy's print options, the
global random generators): what one page sets must not change what the next one prints.
The tests of this file run in order on one worker (tools/pagecheck/schedule.py), so the
tab goes through every page. What only a first-time reader sees (the download, the first
Run) is tested in fresh contexts.
"""

import re
import time

import pytest

from tests.support import ROOT

from tests.site.browsing import forget_the_site, origin_of, visit, visit_in
from tools.pagecheck.outputs import band_factor, output_matches
from tools.site.run_in_page import NOT_IN_BROWSER

SETTLED = "() => !document.querySelector('[data-run-status=running]')"
BLOCKS = """() => [...document.querySelectorAll('div.language-python[data-run-block]')].map(el => {
  const out = document.querySelector(`.run-output[data-for="${el.dataset.runBlock}"] code`);
  let next = el.nextElementSibling;
  while (next && !next.matches('div.highlight')) next = next.nextElementSibling;
  const checked = next && next.querySelector(':scope > .filename')?.textContent === 'Output'
    && !next.classList.contains('run-output');
  return {index: Number(el.dataset.runBlock), needs: el.dataset.runNeeds || null,
          status: el.dataset.runStatus || 'idle', printed: el.runPrinted ?? null,
          shown: out ? out.closest('.run-output').dataset.shown : null,
          box: out ? out.textContent : null,
          seconds: Number(el.dataset.runSeconds || 0), band: el.dataset.runBand || null,
          expected: checked ? next.querySelector('code').textContent : ''};
})"""
CHAPTER_2 = "chapters/ch02-self-attention/"
DOCS = ROOT / "docs"


def run_block(page, index: int, timeout_ms: int = 300_000) -> None:
    """Press Run under block ``index`` and wait until nothing is running."""
    page.locator(f'[data-run-bar="{index}"] button', has_text="Run").first.click(timeout=timeout_ms)
    page.wait_for_function(SETTLED, timeout=timeout_ms)


def run_whole_page(page) -> list[dict]:
    """Run every block the page offers to run (Run on the last one runs the rest)."""
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    while True:
        blocks = page.evaluate(BLOCKS)
        idle = [b for b in blocks if b["needs"] is None and b["status"] == "idle"]
        if not idle:
            return blocks
        run_block(page, idle[-1]["index"])


def pages_with_python() -> list[str]:
    """The Markdown pages under docs/ that have a Python block (one test each)."""
    fence = re.compile(r"^\s*```+\s*(?:python|\{\s*\.python)", re.M)
    return sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")
                  if fence.search(p.read_text("utf8")))


class ReadingTab:
    """One tab of the returning reader's browser, which goes from page to page."""

    def __init__(self, context):
        self.context = context
        self.seen = None  # the tab and everything it reported, since its first page

    def open(self, url: str):
        """Open ``url``: load it in a new tab, or in the tab already open follow a link to it
        (instant navigation), and wait until its Run controls are in place. Returns the
        tab's Visit and how many requests, failures and errors it had recorded before."""
        if self.seen is None:
            self.seen = visit_in(self.context, url, wait="load")
            return self.seen, (0, 0, 0)
        seen = self.seen
        before = (len(seen.requests), len(seen.failed), len(seen.errors))
        seen.page.evaluate("""url => {
            document.querySelector('article').dataset.left = '';
            const link = document.createElement('a');
            link.href = url;
            document.body.append(link);
            link.click(); }""", url)
        # (The address may gain an anchor: Material names the section scrolled to.)
        seen.page.wait_for_function("""url => location.href.split('#')[0] === url
            && document.querySelector('article:not([data-left]) [data-run-bar]')""",
                                    arg=url, timeout=60_000)
        return seen, before


@pytest.fixture(scope="module")
def reading_tab(reader_profile, server):
    """The returning reader's tab for the pages of this file, with the site's cookies and
    storage cleared before the first page."""
    forget_the_site(reader_profile, server)
    tab = ReadingTab(reader_profile)
    yield tab
    if tab.seen is not None:
        tab.seen.page.close()


# The pages whose blocks take 25 s or more in the browser's WebAssembly Python (one worker,
# December 2026): chapter 7 trains its GPT, the speed post times attention, chapter 6
# checks its gradients against finite differences. `make test` runs the others in
# the reading tab; `make audit` (which CI runs after it) runs these three too.
LONG_IN_THE_BROWSER = {"chapters/ch06-backpropagation.md", "chapters/ch07-train-a-gpt.md",
                       "blog/posts/attention-numpy-speed.md"}


def case(source: str):
    """The page as a test case: left to `make audit` if it is long in the browser."""
    if source in LONG_IN_THE_BROWSER:
        return pytest.param(source, marks=pytest.mark.audit)
    return source


def test_the_pages_left_to_make_audit_are_pages_with_python():
    assert LONG_IN_THE_BROWSER <= set(pages_with_python())


@pytest.mark.parametrize("source", [case(source) for source in pages_with_python()])
def test_every_runnable_block_prints_what_the_page_shows(source, reading_tab, server,
                                                         built_site, capsys):
    # Run from the load event on (the favicon may still be on its way): every request, to
    # the end of the run, is still checked below; no half-second wait for an idle network.
    seen, (requests, failed, errors) = reading_tab.open(server + built_site.addresses[source])
    start = time.perf_counter()
    blocks = run_whole_page(seen.page)
    seconds = time.perf_counter() - start
    outside = [url for url in seen.requests[requests:] if not url.startswith(origin_of(server))]
    problems = [f"request to another host: {url}" for url in outside]
    problems += [f"failed request: {f}" for f in seen.failed[failed:]]
    problems += [f"console error: {e}" for e in seen.errors[errors:]]
    not_run = [f"block {b['index']}: {b['needs']}" for b in blocks if b["needs"]]
    for block in blocks:
        if block["needs"]:
            continue
        if block["status"] != "ran":
            problems.append(f"block {block['index']}: {block['status']}\n{block['printed']}"
                                f"\nthe box shows:\n{block['box']}")
        elif not output_matches(block["expected"], block["printed"],
                                band_factor(block["band"])):
            problems.append(f"block {block['index']} printed\n{block['printed']}\n"
                            f"but the page shows\n{block['expected']}")
        elif block["printed"].strip() and block["shown"] not in ("same", "text"):
            # The browser's own comparison (run-in-page.js) agrees: no diff shown.
            problems.append(f"block {block['index']}: the box shows {block['shown']}:\n"
                            f"{block['box']}")
    with capsys.disabled():
        print(f"\nrun in the browser: {source}: {len(blocks) - len(not_run)} of {len(blocks)} "
              f"blocks in {seconds:.1f} s; not run there: {not_run or 'none'}")
        slow = sorted(blocks, key=lambda b: -b["seconds"])[:3]
        print("  slowest: " + ", ".join(f"block {b['index']} {b['seconds']:.1f} s" for b in slow))
    assert not problems, f"{source} in the browser:\n" + "\n\n".join(problems)
    # The blocks the browser cannot run stay few: a page is mostly NumPy.
    assert len(not_run) <= max(2, len(blocks) // 2), not_run


def test_the_tab_kept_python_from_page_to_page(reading_tab):
    """Python was loaded once for all the pages (if this file's page tests ran first)."""
    if reading_tab.seen is None:
        pytest.skip("no page of this file ran before this test")
    loads = [url for url in reading_tab.seen.requests if url.endswith("/pyodide.asm.wasm.gz")]
    assert len(loads) == 1, loads


def test_few_blocks_are_kept_out_of_the_browser_by_hand():
    assert sum(len(skips) for skips in NOT_IN_BROWSER.values()) <= 8
    for source in NOT_IN_BROWSER:
        assert (DOCS / source).exists(), f"NOT_IN_BROWSER names {source}, which does not exist"


def test_a_plain_page_view_downloads_no_python(browser, server):
    seen = visit(browser, server + CHAPTER_2)
    assert not [url for url in seen.requests if "pyodide" in url or url.endswith(".whl")]
    seen.page.context.close()


def first_run(browser, server, page: str, record_property, capsys) -> tuple[object, float]:
    """A first-time reader's first Run on ``page``: (what the tab saw, bytes it fetched
    for it), the figures written to the test's report (bytes and seconds to the first
    output: the seconds are reported, not asserted, on a shared machine)."""
    seen = visit(browser, server + page)
    before = seen.transferred
    start = time.perf_counter()
    run_block(seen.page, 0)
    seconds = time.perf_counter() - start
    seen.page.wait_for_load_state("networkidle")
    downloaded = seen.transferred - before
    record_property("first_run_bytes", downloaded)
    record_property("first_run_seconds", round(seconds, 1))
    with capsys.disabled():
        print(f"\nfirst Run on {page}: {downloaded / 1e6:.2f} MB downloaded in "
              f"{sum(1 for url in seen.requests if 'pyodide/' in url)} files, "
              f"first output after {seconds:.1f} s")
    return seen, downloaded


def test_first_run_download_and_time_to_first_output(browser, server, record_property, capsys):
    seen, downloaded = first_run(browser, server, CHAPTER_2, record_property, capsys)
    status = seen.page.evaluate(BLOCKS)[0]["status"]
    progress = seen.page.evaluate("window.runInPage.statusLog")
    assert status == "ran"
    # The runtime comes gzipped (it was 17.1 MB), and the reader sees it arrive in MB.
    # Chapter 7's checkpoint stays behind: this page does not read it (it was 11.2 MB),
    # and NumPy and the standard library come repacked (it was 9.06 MB).
    assert not [url for url in seen.requests if "checkpoint" in url]
    assert downloaded < 8e6, downloaded
    assert any(re.fullmatch(r"Downloading Python and NumPy, once: \d+\.\d of \d+\.\d MB", text)
               for text in progress), progress
    seen.page.context.close()


def test_the_first_run_on_chapter_7_fetches_its_checkpoint(browser, server, record_property,
                                                           capsys):
    seen, downloaded = first_run(browser, server, "chapters/ch07-train-a-gpt/",
                                 record_property, capsys)
    assert seen.page.evaluate(BLOCKS)[0]["status"] == "ran"
    assert len([url for url in seen.requests if "checkpoint" in url]) == 1
    assert downloaded < 11e6, downloaded
    seen.page.context.close()


def exercise_blocks(page):
    """The indices of chapter 2's exercise 1 starter and the check right after it."""
    return page.evaluate("""() => {
      const els = [...document.querySelectorAll('div.language-python[data-run-block]')];
      const starter = els.find(el => el.textContent.includes('def attention_weights'));
      const check = els.find(el => el.textContent.startsWith('check_attention_weights'));
      return [Number(starter.dataset.runBlock), Number(check.dataset.runBlock)];
    }""")


def verdict(page, index: int) -> str:
    return page.locator(f'.run-output[data-for="{index}"] code').text_content().strip()


def solve_with_keyboard(page, starter: int) -> None:
    """Edit the starter in place, as a reader would: select its code, paste the answer."""
    page.locator(f'[data-run-bar="{starter}"] button', has_text="Edit").click()
    code = page.locator(f'div[data-run-block="{starter}"] code')
    code.focus()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    source = (ROOT / "exercises" / "ch02.py").read_text("utf8")
    answer = source.split("# --8<-- [start:ex1-solution]\n", 1)[1].split("# --8<-- [end:", 1)[0]
    page.keyboard.insert_text(answer)  # pasted: typed, Enter would indent it once more


def test_exercise_starter_fails_and_typed_answer_passes_also_after_navigation(returning_reader,
                                                                             server):
    seen = visit_in(returning_reader, server + CHAPTER_2, wait="load")
    page = seen.page
    for visit_number in (1, 2):
        starter, check = exercise_blocks(page)
        run_block(page, check)
        assert verdict(page, check).startswith("✗ Not yet"), verdict(page, check)
        # The verdict is shown (not "same as the page") and styled as one.
        assert page.locator(f'.run-output[data-for="{check}"] .run-fail').count() == 1
        solve_with_keyboard(page, starter)
        assert page.locator(f'div[data-run-block="{check}"]').get_attribute("data-run-status") == "stale"
        run_block(page, check)
        assert verdict(page, check).startswith("✓ Correct"), verdict(page, check)
        assert page.locator(f'.run-output[data-for="{check}"] .run-pass').count() == 1
        if visit_number == 1:  # instant navigation away and back: the page is swapped in place
            here = page.url
            page.locator("a.md-footer__link--next").click()
            page.wait_for_function(f"() => location.href !== {here!r}")
            page.go_back()
            page.wait_for_function(f"() => location.href === {here!r}")
            # The address changes before the content: wait for this page's exercise (the
            # next page had Run controls too), then for its Run controls.
            page.locator("div[data-run-block]", has_text="def attention_weights").first.wait_for()
            page.wait_for_selector("[data-run-bar]")
    assert not seen.errors, seen.errors
    # Instant navigation swapped the pages in place: Python was loaded once and kept.
    assert sum(url.endswith("/pyodide.asm.wasm.gz") for url in seen.requests) == 1, seen.requests
    page.close()


def test_stop_ends_a_runaway_loop_and_the_next_run_works(returning_reader, server):
    seen = visit_in(returning_reader, server + CHAPTER_2, wait="load")
    page = seen.page
    run_block(page, 0)
    page.locator('[data-run-bar="1"] button', has_text="Edit").click()
    page.locator('div[data-run-block="1"] code').focus()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text("while True:\n    pass\n")
    stop = page.locator('[data-run-bar="1"] button', has_text="Stop")
    assert not stop.is_visible()  # Stop shows only while a block runs
    page.locator('[data-run-bar="1"] button', has_text="Run").click()
    stop.wait_for(state="visible")
    assert page.locator('div[data-run-block="1"]').get_attribute("data-run-status") == "running"
    page.locator('[data-run-bar="1"] button', has_text="Stop").click()
    page.wait_for_function(SETTLED, timeout=10_000)
    page.locator('[data-run-bar="1"] button', has_text="Restore").click()
    run_block(page, 1)
    assert page.locator('div[data-run-block="1"]').get_attribute("data-run-status") == "ran"
    page.close()
