"""Run in the page, as a reader uses it: what the output box shows, the editor's keys,
out-of-date blocks, a failed download, streaming, tracebacks and long output.

All on the home page (five blocks, four of which run in the browser), in the returning
reader's browser (tests/site/conftest.py), one tab for the whole file.
"""

import math

import pytest

from tests.site.browsing import forget_the_site, visit_in
from tests.site.test_run_in_page import SETTLED, run_block
from tools.pagecheck.outputs import output_matches

HOME = ""


@pytest.fixture(scope="module")
def home(reader_profile, server):
    """The home page in the returning reader's browser, the first download made to fail."""
    forget_the_site(reader_profile, server)
    returning_reader = reader_profile
    failed = []

    def fail_once(route):
        if failed:
            return route.continue_()
        failed.append(route.request.url)
        route.abort()

    pattern = "**/assets/pyodide/pyodide.asm.wasm*"
    returning_reader.route(pattern, fail_once)
    seen = visit_in(returning_reader, server + HOME, wait="load")
    yield seen
    returning_reader.unroute(pattern)
    seen.page.close()


def status(page, index: int) -> str:
    return page.locator(f'div[data-run-block="{index}"]').get_attribute("data-run-status")


def box(page, index: int) -> dict:
    return page.evaluate("""i => {
      const out = document.querySelector(`.run-output[data-for="${i}"]`);
      return {hidden: out.hidden, shown: out.dataset.shown, text: out.querySelector('code').textContent,
              title: out.querySelector('.filename').textContent,
              label: document.querySelector(`[data-run-bar="${i}"] .run-status`).textContent};
    }""", index)


def edit(page, index: int, code: str) -> None:
    """Replace the code of block ``index`` (as a paste would), opening its editor if needed."""
    edit_button = page.locator(f'[data-run-bar="{index}"] button', has_text="Edit")
    if edit_button.get_attribute("aria-pressed") != "true":
        edit_button.click()
    page.locator(f'div[data-run-block="{index}"] code').focus()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(code)


def restore(page, index: int) -> None:
    page.locator(f'[data-run-bar="{index}"] button', has_text="Restore").click()
    if page.locator(f'[data-run-bar="{index}"] button', has_text="Edit").get_attribute("aria-pressed") == "true":
        page.locator(f'[data-run-bar="{index}"] button', has_text="Edit").click()


def test_a_failed_download_is_not_kept_and_the_next_run_loads(home):
    """The first load of the runtime fails (the route aborts it): Run says so, and the next
    Run loads Python afresh instead of repeating the cached failure."""
    page = home.page
    intro = page.locator(".run-intro").first
    assert intro.text_content().startswith("4 of 5 Python blocks on this page run in your browser")
    assert intro.locator("a").get_attribute("href").endswith("#run-the-code-in-your-browser")
    run_block(page, 0)
    assert status(page, 0) == "failed"
    assert "Python could not be loaded" in box(page, 0)["text"]
    run_block(page, 0)
    assert status(page, 0) == "ran", box(page, 0)


def test_the_box_shows_nothing_the_same_or_a_diff(home):
    page = home.page
    run_block(page, 2)
    # Block 0 defines softmax and prints nothing: no empty box, its status says so.
    assert box(page, 0)["hidden"] and box(page, 0)["label"].endswith("printed nothing")
    # Block 2 prints what the page shows: no second copy.
    assert box(page, 2)["shown"] == "same" and not box(page, 2)["hidden"]
    assert box(page, 2)["text"].endswith("Printed the same as the page's Output above.")
    edit(page, 2, "print(softmax(big))\nprint('one more line')")
    run_block(page, 2)
    shown = box(page, 2)
    assert shown["shown"] == "diff" and "differs from the page" in shown["title"]
    lines = [line for line in shown["text"].split("\n") if line]
    assert lines == ["  [0.665 0.245 0.09 ]", "- [0.665 0.245 0.09 ]", "+ one more line"], lines
    restore(page, 2)


def test_a_block_the_page_gives_the_reader_shows_its_output_plainly(home):
    """A "Your turn" block (marked data-run-yours by the build) invites a change: what the
    reader's code prints is shown as it is, not as a diff against the page (issue 41)."""
    page = home.page
    page.evaluate("() => document.querySelector('div[data-run-block=\"2\"]')"
                  ".dataset.runYours = ''")
    run_block(page, 2)  # the page's code first: the blocks before it define `big`
    edit(page, 2, "print(softmax(big))\nprint('one more line')")
    run_block(page, 2)
    shown = box(page, 2)
    page.evaluate("() => delete document.querySelector('div[data-run-block=\"2\"]')"
                  ".dataset.runYours")
    restore(page, 2)
    assert shown["shown"] == "text" and shown["title"] == "Output in your browser", shown
    assert shown["text"] == "[0.665 0.245 0.09 ]\none more line\n", shown


def test_running_an_earlier_block_again_marks_the_later_ones_out_of_date(home):
    page = home.page
    run_block(page, 2)
    assert status(page, 2) == "ran"
    run_block(page, 1)
    assert status(page, 1) == "ran" and status(page, 2) == "stale"
    assert box(page, 2)["label"].startswith("Out of date")


def test_the_editor_indents_keeps_indentation_and_lets_the_keyboard_out(home):
    page = home.page
    edit_button = page.locator('[data-run-bar="1"] button', has_text="Edit")
    edit_button.focus()
    page.keyboard.press("Enter")  # the keyboard presses Edit
    code = page.locator('div[data-run-block="1"] code')
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.type("for i in range(2):")
    page.keyboard.press("Enter")  # keeps the indentation, and adds a level after ':'
    page.keyboard.type("x = i")
    page.keyboard.press("Enter")
    page.keyboard.press("Shift+Tab")  # dedents the new line
    page.keyboard.type("y = 1")
    page.keyboard.press("Home")
    page.keyboard.press("Tab")  # indents where the caret is
    assert code.text_content().rstrip("\n") == "for i in range(2):\n    x = i\n    y = 1"
    assert page.evaluate("document.activeElement.tagName") == "CODE"  # Tab stayed inside
    page.keyboard.press("Control+A")
    page.keyboard.press("Shift+Tab")  # dedents every selected line
    assert code.text_content().rstrip("\n") == "for i in range(2):\nx = i\ny = 1"
    page.keyboard.press("Escape")  # leaves the editor: focus on Edit, no longer pressed
    assert page.evaluate("document.activeElement.textContent") == "Edit"
    assert edit_button.get_attribute("aria-pressed") == "false"
    assert code.get_attribute("contenteditable") is None
    restore(page, 1)


def test_the_editors_keys_add_no_blank_lines_at_the_end(home):
    """Each Tab or Enter rewrites the code; a last empty line needs one newline more to
    show, and that newline was added again on every key: after 4 Tabs and 3 Enters the
    block ended in 8 newlines (issue 41). The end stays as the first key left it."""
    page = home.page
    page.locator('[data-run-bar="1"] button', has_text="Edit").click()
    code = page.locator('div[data-run-block="1"] code')
    original = code.text_content()
    page.keyboard.press("Control+Home")
    page.keyboard.press("Enter")
    first = code.text_content()
    for key in ["Enter"] * 2 + ["Tab"] * 4:
        page.keyboard.press(key)
    text = code.text_content()
    trailing = len(text) - len(text.rstrip("\n"))
    assert trailing == len(first) - len(first.rstrip("\n")) <= 2, repr(text[-20:])
    assert text.rstrip("\n") == "\n" * 3 + "    " * 4 + original.rstrip("\n"), repr(text[:40])
    page.keyboard.press("Escape")
    restore(page, 1)


def test_output_streams_with_the_time_and_tracebacks_and_long_output_are_shown(home):
    page = home.page
    # Pyodide's time.sleep returns at once (it cannot block the worker): the block waits
    # by reading the clock.
    edit(page, 2, "import sys, time, warnings\nfor i in range(3):\n    print(i)\n"
                  "    end = time.monotonic() + 0.7\n    while time.monotonic() < end:\n"
                  "        pass\nwarnings.warn('careful')\nprint('late', file=sys.stderr)")
    page.locator('[data-run-bar="2"] button', has_text="Run").click()
    # The first line shows while the block still runs, with the time it has taken so far.
    page.wait_for_function("""() => document.querySelector('.run-output[data-for="2"] code')
        .textContent.startsWith('0') && document.querySelector('div[data-run-block="2"]')
        .dataset.runStatus === 'running'""", timeout=300_000)  # Python may load first
    page.wait_for_function("""() => /Running… \\d+\\.\\d s/.test(
        document.querySelector('[data-run-bar="2"] .run-status').textContent)""")
    page.wait_for_function(SETTLED, timeout=30_000)
    shown = box(page, 2)
    assert shown["text"].startswith("0\n1\n2\n") and "UserWarning: careful" in shown["text"]
    assert page.locator('.run-output[data-for="2"] .run-stderr', has_text="late").count() == 1
    edit(page, 2, "def f():\n    return 1 / 0\n\nf()")
    run_block(page, 2)
    text = box(page, 2)["text"]
    assert status(page, 2) == "failed"
    # Named so the reader finds it: the page numbers neither blocks nor lines (issue 41).
    assert ('File "<block 3 under \"How the pages are verified\">", line 4, in <module>\n'
            '    f()') in text, text
    assert text.rstrip().endswith("ZeroDivisionError: division by zero")
    edit(page, 2, "for i in range(30_000):\n    print('0123456789')")
    run_block(page, 2)
    text = box(page, 2)["text"]
    assert "[Output cut: the block printed 330,000 characters; the first 200,000 are shown.]" in text
    assert len(text) < 201_000
    restore(page, 2)


def test_the_browser_and_the_page_checker_compare_outputs_alike(home):
    cases = [("a ~1.5 ms", "a 12.25 ms"), ("~1 ~2", "12"), ("x   ~3", "x 3"), ("\\~3", "~3"),
             ("t ~1e-14", "t 2.0e-15"), ("same\n\n", "\nsame"), ("a", "b"), ("~3", "3x"),
             ("a ~1.5 ms", "a 2.9 ms"), ("a ~1.5 ms", "a 3.1 ms"), ("~-2.0", "2.0"),
             ("~0.0", "-0.1"), ("~2e-16", "4e-16"), ("~3.1 ms", "6.3 ms")]
    for band in (2, 10, math.inf):
        for expected, actual in cases:
            browser = home.page.evaluate(
                "([e, a, b]) => window.runInPage.outputMatches(e, a, b)",
                [expected, actual, band])
            assert browser == output_matches(expected, actual, band), (expected, actual, band)
