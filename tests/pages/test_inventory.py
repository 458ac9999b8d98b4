"""What the pages hold: blocks that do not run are listed here, so they stay rare."""

from pathlib import Path

from tests.support import ROOT
from tools.source.markdown import read_page


# Python blocks marked {.python notest}, as "page: first line of the block": why it may not run.
NOT_RUN: dict[str, str] = {}


def pages() -> list[Path]:
    return sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]


def not_run_blocks() -> dict[str, int]:
    found = {}
    for path in pages():
        page = read_page(path, ROOT)
        lines = path.read_text("utf8").split("\n")
        for line in page.not_run:
            first = lines[line].strip() if line < len(lines) else ""
            found[f"{path.relative_to(ROOT)}: {first}"] = line
    return found


def test_every_block_that_does_not_run_is_listed_with_a_reason():
    found = not_run_blocks()
    unlisted = sorted(set(found) - set(NOT_RUN))
    assert not unlisted, f"blocks marked notest but not listed in NOT_RUN: {unlisted}"
    stale = sorted(set(NOT_RUN) - set(found))
    assert not stale, f"NOT_RUN lists blocks that no longer exist: {stale}"


def test_pages_have_executable_blocks():
    counts = {str(p.relative_to(ROOT)): len(read_page(p, ROOT).blocks) for p in pages()}
    assert counts["docs/index.md"] >= 2 and counts["README.md"] >= 1, counts


def output(token) -> bool:
    """An Output block: the checker's exact info string."""
    return token.info.strip() == 'text title="Output"'


def test_code_and_output_shown_on_pages_fit_80_columns():
    """Lines of every fence on the pages (code, package snippets, Output blocks, the
    self-checks' verdicts) fit the content column and never scroll sideways (the browser
    test checks the rendered result at 1280 px; this names the line)."""
    from tools.source.markdown import CourseMarkdown

    long = []
    for path in pages():
        for token in CourseMarkdown(ROOT).parse(path.read_text("utf8")):
            if token.type == "fence" and token.map:
                # An Output line's `~` marks a number that varies: the printed
                # line fits 80 columns, each marker adds one.
                long += [f"{path.relative_to(ROOT)}:{token.map[0] + 1}: {line}"
                         for line in token.content.split("\n")
                         if len(line) - line.count("~") * output(token) > 80]
    assert not long, "fence lines over 80 characters:\n" + "\n".join(long)
