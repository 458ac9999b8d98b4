"""The page checker fails when it should and passes when it should.

Each fixture page under tests/checker/fixtures/pages is copied to a temporary folder and run by
pytest in a subprocess, with the page checker, as `make test` runs the real pages.
"""

import math
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.support import ROOT
from tools.pagecheck.outputs import band_factor, line_matches, output_matches

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "pages"


def run_pages(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """pytest with the page checker on the pages in ``folder``, in a subprocess.

    Without Hypothesis's plugin, which no fixture page uses and which costs each run more
    CPU than the rest of pytest's start.
    """
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PAGECHECK_UPDATE", None)
    command = [
        sys.executable, "-m", "pytest", "-p", "tools.pagecheck.plugin", "-p", "no:cacheprovider",
        "-p", "no:hypothesispytest", "--markdown-docs", "--markdown-docs-syntax=superfences",
        "--continue-on-collection-errors",
        "--rootdir", str(folder),
        "-c", os.devnull, *args,
    ]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """Run every fixture page once in check mode; per-test outcomes and the full output."""
    folder = tmp_path_factory.mktemp("pages")
    for path in FIXTURES.iterdir():
        shutil.copy(path, folder / path.name)
    (folder / "roundtrip.md").unlink()  # it is run separately, in update mode
    for name in ("state_a.md", "state_b.md"):  # run separately, in both orders
        (folder / name).unlink()
    report = folder / "report.xml"
    result = run_pages(folder, f"--junitxml={report}", "-rA", ".")
    outcomes = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        page = (case.get("classname") or case.get("name")).removesuffix(".md")
        failure = case.find("failure")
        error = case.find("error")
        skipped = case.find("skipped")
        state = "failed" if failure is not None else "error" if error is not None else "skipped" if skipped is not None else "passed"
        message = "" if state == "passed" else (failure if failure is not None else error if error is not None else skipped).text or ""
        outcomes.setdefault(page, []).append((case.get("name"), state, message))
    return outcomes, result.stdout + result.stderr


def test_good_page_passes_including_containers_and_snippets(checked):
    outcomes, _ = checked
    assert [state for _, state, _ in outcomes["good"]] == ["passed"] * 4


def test_wrong_output_fails_with_diff_and_location(checked):
    outcomes, _ = checked
    [(name, state, message)] = outcomes["wrong_output"]
    assert state == "failed"
    assert "wrong_output.md:3" in message
    assert "-3" in message and "+2" in message  # unified diff: page vs actual
    assert "make outputs" in message


def test_missing_output_block_fails(checked):
    outcomes, _ = checked
    [(name, state, message)] = outcomes["missing_output"]
    assert state == "failed"
    assert "no ```text title=\"Output\"``` block follows it" in message
    assert "missing_output.md:3" in message


def test_exception_fails_the_block_and_skips_the_rest_of_the_page(checked):
    outcomes, output = checked
    states = [state for _, state, _ in outcomes["exception"]]
    assert states == ["passed", "failed", "skipped"]
    assert "ValueError: broken on purpose" in outcomes["exception"][1][2]
    assert "Printed by exception.md:7 before the error:\nbefore" in output


def test_missing_snippet_section_fails(checked):
    outcomes, output = checked
    [(name, state, message)] = outcomes["missing_snippet"]
    assert state == "error"
    assert "in the fence opened on line 3" in message
    assert "no_such_section" in output and "could not be" in output


def test_varying_value_matches_only_inside_its_marked_part(checked):
    outcomes, _ = checked
    assert [state for _, state, _ in outcomes["varying"]] == ["passed"]
    [(name, state, message)] = outcomes["varying_outside"]
    assert state == "failed" and "n = 512" in message


def test_each_block_runs_exactly_once(checked):
    outcomes, output = checked
    assert [state for _, state, _ in outcomes["counting"]] == ["passed"] * 3
    assert re.search(r"executions per block: min 1, max 1", output)


def test_selecting_one_block_runs_the_blocks_before_it(tmp_path):
    shutil.copy(FIXTURES / "counting.md", tmp_path / "counting.md")
    result = run_pages(tmp_path, "counting.md", "-k", "line:13")
    assert result.returncode == 0, result.stdout
    assert "1 passed, 2 deselected" in result.stdout
    assert "3 blocks on 1 pages; executions per block: min 1, max 1" in result.stdout


def test_update_outputs_rewrites_creates_drops_and_round_trips(tmp_path):
    page = tmp_path / "roundtrip.md"
    shutil.copy(FIXTURES / "roundtrip.md", page)
    before = run_pages(tmp_path, "roundtrip.md")
    assert before.returncode == 1

    assert run_pages(tmp_path, "roundtrip.md", "--update-outputs").returncode == 0
    once = page.read_text()
    assert '```python\nprint("a new output")\n```\n\n```text title="Output"\na new output\n```' in once
    assert "something old" not in once and "an outdated output" in once
    assert "a block that no longer prints" not in once
    # A varying number in its band is kept as marked; one outside it is refreshed, marked.
    assert "elapsed: ~12.34 s\nstale: ~4.00 s\nfixed line" in once
    assert '    ```text title="Output"\n    inside a container\n    ```' in once

    assert run_pages(tmp_path, "roundtrip.md", "--update-outputs").returncode == 0
    assert page.read_text() == once  # a second run changes nothing
    assert run_pages(tmp_path, "roundtrip.md").returncode == 0


@pytest.mark.parametrize(
    "expected, actual, same",
    [
        ("t = ~1.5 ms", "t = 2.25 ms", True),
        ("t = ~1e-05 ms", "t = 1.5e-05 ms", True),
        ("| 512 |   ~0.12 |", "| 512 |  0.15 |", True),  # padding before a marker may shrink
        ("| 512 |   ~0.12 |", "| 512 |      0.2 |", True),  # or grow
        ("t = ~1.5 ms", "t = fast ms", False),
        ("n = 512, ~1.5 ms", "n = 1024, 1.5 ms", False),
        ("approx ~ 3", "approx ~ 3", True),
        ("[0.5 0.25]", "[0.5 0.26]", False),
        # A marker stands for one whole number; the literal text around it must match.
        ("[~0.1 2 ~0.8 8]", "[0.12 0.88]", False),
        ("[~0.1 ~2 ~0.8 ~8]", "[0.12 0.88]", False),
        ("~1 ~2", "12", False),
        ("a ~1", "a1", False),
        ("x=~1;", "x=+1.5;", True),
        ("~1 ms", "1.5 ms", True),
        ("~1 ms", "1.5 ms total", False),
        ("(~1)", "( 1)", False),
        # An escaped tilde is a tilde; an unescaped one before a number is a marker.
        ("about \\~3 ms", "about ~3 ms", True),
        ("about \\~3 ms", "about ~4 ms", False),
        ("about ~3 ms", "about ~3 ms", False),
    ],
)
def test_varying_marker_matches_numbers_only(expected, actual, same):
    assert line_matches(expected, actual) is same


@pytest.mark.parametrize(
    "expected, actual, band, same",
    [
        # Within a factor of 2 by default, each number read as the range it rounds from.
        ("~3.1 ms", "6.3 ms", 2, True), ("~3.1 ms", "6.4 ms", 2, False),
        ("~3.1 ms", "1.5 ms", 2, True), ("~3.1 ms", "1.4 ms", 2, False),
        ("~0.103", "1.270", 2, False), ("~0.206", "4.320", 2, False),  # chapter 8's stale pair
        ("~2e-16", "4e-16", 2, True), ("~2e-16", "6e-16", 2, False),
        ("~24", "48", 2, True), ("~24", "50", 2, False),
        # Never across zero, unless the shown number rounds to zero.
        ("~-2.0", "-4.1", 2, True), ("~-2.0", "-1.0", 2, True), ("~-2.0", "2.0", 2, False),
        ("~1.5", "-1.5", 2, False), ("~0.5", "0.0", 2, False),
        ("~0.0", "-0.1", 2, True), ("~0.0", "0.04", 2, True), ("~0.0", "0.2", 2, False),
        # A fence's band="..." widens (or narrows) the factor for its block.
        ("~1.0 ms", "5.0 ms", 10, True), ("~1.0 ms", "0.2 ms", 10, True),
        ("~1.0 ms", "11.0 ms", 10, False), ("~1.0 ms", "1.4 ms", 1.2, False),
        # band="any": a number drawn at random, of any size and sign; the text still counts.
        ("is ~+7.973e+00", "is -3.1e-05", math.inf, True), ("is ~1", "was 1", math.inf, False),
        # Every marker of the line must be in its band.
        ("~1.0 and ~2.0", "1.1 and 2.2", 2, True), ("~1.0 and ~2.0", "1.1 and 9.0", 2, False),
        # Numbers past float's range are compared, not raised on.
        ("~2", "1e999", 2, False), ("~1e-999", "0", 2, True),
    ],
)
def test_a_varying_number_matches_only_within_its_band(expected, actual, band, same):
    assert line_matches(expected, actual, band) is same


@pytest.mark.parametrize("raw", ["1", "0.5", "-3", "nan", "inf", "ten", ""])
def test_a_band_must_be_a_factor_above_one(raw):
    with pytest.raises(ValueError, match=f'band="{raw}" must be a number greater than 1'):
        band_factor(raw)
    assert band_factor(None) == 2 and band_factor("10") == 10
    assert band_factor("any") == math.inf


def test_a_stale_varying_number_fails_naming_its_band(checked):
    outcomes, _ = checked
    [(name, state, message)] = outcomes["tilde_stale"]
    assert state == "failed"
    assert "tilde_stale.md:5" in message and "-largest change: ~0.103" in message
    assert "+largest change: 1.270" in message


def test_a_drifting_timing_passes_within_its_band(checked):
    outcomes, _ = checked
    assert [state for _, state, _ in outcomes["tilde_drifting"]] == ["passed"]


def test_the_band_syntax_widens_a_blocks_band_and_refuses_a_bad_one(checked):
    outcomes, _ = checked
    (_, wide, _), (_, default, message), (_, bad, refusal) = outcomes["tilde_band"]
    assert wide == "passed"
    assert default == "failed" and "5.0 for ~1.0: outside the band" in message
    assert bad == "failed" and 'tilde_band.md:19: band="1" must be a number greater than 1' in refusal


def test_update_outputs_refreshes_a_stale_varying_number_keeping_its_marker(tmp_path):
    page = tmp_path / "tilde_stale.md"
    shutil.copy(FIXTURES / "tilde_stale.md", page)
    assert run_pages(tmp_path, "tilde_stale.md", "--update-outputs").returncode == 0
    assert "```text title=\"Output\"\nlargest change: ~1.270\n```" in page.read_text()
    assert run_pages(tmp_path, "tilde_stale.md").returncode == 0


def test_trailing_whitespace_and_blank_edges_are_ignored():
    assert output_matches("a\nb\n", "a  \nb\n\n")
    assert not output_matches("a\nb", "a\n\nb")


def test_in_parallel_each_page_stays_whole_on_one_worker_and_counts_add_up(tmp_path):
    for name in ("counting.md", "good.md", "exception.md", "snippet_src.py"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    result = run_pages(tmp_path, "-n", "2", "--dist", "loadscope", "-rA",
                       "counting.md", "good.md", "exception.md")
    output = result.stdout + result.stderr
    assert "1 failed, 8 passed, 1 skipped" in output, output
    assert "9 blocks on 3 pages; executions per block: min 1, max 1" in output, output


# The holes of issue 9, each with a fixture page that passed (or was ignored) before ------

def test_a_fence_indented_by_a_tab_inside_an_admonition_runs(checked):
    outcomes, _ = checked
    assert [state for _, state, _ in outcomes["tabs"]] == ["passed"]


def test_a_fence_highlighted_as_python_that_would_not_run_is_refused(checked):
    outcomes, _ = checked
    [(name, state, message)] = outcomes["alias"]
    assert state == "error" and "line 3" in message and "```Python" in message
    assert "write ```python" in message


def test_a_pycon_transcript_is_never_run(checked):
    outcomes, _ = checked
    assert [state for _, state, _ in outcomes["pycon"]] == ["passed"]  # only the real block


@pytest.mark.parametrize("page, line", [("orphan_prose", 9), ("orphan_double", 11)])
def test_an_output_block_not_directly_after_its_python_block_fails(checked, page, line):
    outcomes, _ = checked
    [(name, state, message)] = outcomes[page]
    assert state == "error" and f"line {line}: an Output block must directly follow" in message


def test_an_unclosed_fence_is_refused_naming_its_line(checked):
    outcomes, _ = checked
    [(name, state, message)] = outcomes["unclosed"]
    assert state == "error" and "line 11: the fence opened here (```) is never closed" in message


def test_a_tilde_before_a_number_is_written_with_a_backslash(checked):
    outcomes, _ = checked
    assert [state for _, state, _ in outcomes["tilde"]] == ["passed"]
    [(name, state, message)] = outcomes["tilde_unescaped"]
    assert state == "failed"
    assert "does not match the printed 'about ~3 ms'" in message  # never an empty diff
    assert "write \\~ for a tilde" in message


def test_a_block_that_runs_too_long_fails_with_a_clear_timeout(checked):
    outcomes, _ = checked
    [(name, state, message)] = outcomes["timeout"]
    assert state == "failed" and "ran longer than 1 s" in message and 'timeout="2"' in message


def test_os_exit_in_a_block_fails_the_block_instead_of_ending_the_run(checked):
    outcomes, _ = checked
    assert [state for _, state, _ in outcomes["exit"]] == ["failed", "skipped"]
    assert "called os._exit(0)" in outcomes["exit"][0][2]


def test_stderr_and_warnings_fail_unless_the_fence_allows_them(checked):
    outcomes, _ = checked
    states = [(state, message) for _, state, message in outcomes["stderr"]]
    assert states[0][0] == "failed" and "it wrote to stderr:\nto stderr" in states[0][1]
    assert states[1][0] == "failed" and "UserWarning: a warning from the page" in states[1][1]
    assert states[2][0] == "passed"


@pytest.mark.parametrize("order", [("state_a.md", "state_b.md"), ("state_b.md", "state_a.md")])
def test_pages_do_not_leak_state_into_each_other_in_either_order(tmp_path, order):
    for name in order:
        shutil.copy(FIXTURES / name, tmp_path / name)
    result = run_pages(tmp_path, *order)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed" in result.stdout


def update(tmp_path, text: str, name="page.md", newline="\n"):
    page = tmp_path / name
    page.write_bytes(text.replace("\n", newline).encode("utf8"))
    result = run_pages(tmp_path, name, "--update-outputs")
    return result, page.read_bytes().decode("utf8")


def test_update_writes_an_output_fence_longer_than_any_backticks_in_the_output(tmp_path):
    result, text = update(tmp_path, '# Page\n\n```python\nprint("```")\n```\n')
    assert result.returncode == 0, result.stdout
    assert '````text title="Output"\n```\n````' in text
    assert run_pages(tmp_path, "page.md").returncode == 0


def test_update_keeps_an_output_fences_length(tmp_path):
    page = '# Page\n\n```python\nprint(2)\n```\n\n`````text title="Output"\n1\n`````\n'
    result, text = update(tmp_path, page)
    assert result.returncode == 0 and '`````text title="Output"\n2\n`````' in text


def test_update_keeps_a_crlf_page_crlf(tmp_path):
    result, text = update(tmp_path, "# Page\n\n```python\nprint(3)\n```\n", newline="\r\n")
    assert result.returncode == 0, result.stdout
    assert "print(3)\r\n" in text and '```text title="Output"\r\n3\r\n```' in text
    assert "\n" not in text.replace("\r\n", "")


def test_update_refuses_a_page_with_an_unclosed_fence_and_leaves_it_alone(tmp_path):
    original = (FIXTURES / "unclosed.md").read_text("utf8")
    result, text = update(tmp_path, original)
    assert result.returncode != 0 and "line 11" in result.stdout + result.stderr
    assert text == original


def test_update_does_not_redraw_the_figures_of_a_page_whose_blocks_failed(tmp_path):
    page = ('# Page\n\n```{.python figure="demo"}\nimport matplotlib.pyplot as plt\n'
            'plt.plot([1, 2])\n```\n\n```python\nraise ValueError("broken")\n```\n')
    result, _ = update(tmp_path, page)
    assert result.returncode != 0
    assert not (tmp_path / "docs" / "assets" / "figures" / "demo.svg").exists()
    fixed = page.replace('raise ValueError("broken")', "x = 1")
    result, _ = update(tmp_path, fixed)
    assert result.returncode == 0 and (tmp_path / "docs" / "assets" / "figures" / "demo.svg").exists()
    assert run_pages(tmp_path, "page.md").returncode == 0  # and now it is current
