"""The holes that adversarial probes of the page checker found (issue 24), each closed.

Most probe pages run together, once, in check mode (``probed``); the exit status and
``make outputs`` probes run on their own folders.
"""

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.checker.test_pagecheck import run_pages
from tools.pagecheck import update
from tools.pagecheck.checker import Checker, PageRun
from tools.pagecheck.figures import replace_file
from tools.pagecheck.outputs import escape_literal, line_matches
from tools.source.markdown import read_page

FENCE = "```"
LOOKALIKES = ['{.text title="Output"}', "text title='Output'", 'text title="Output" linenums="1"',
              'text title="Output" hl_lines="1"', 'txt title="Output"', 'text title="output"',
              'TEXT title="Output"', '{ .text title="Output" }', 'console title="Output"',
              'plain title="Output"', "text title=Output", '{.text linenums="1" title="Output"}']


def page(*blocks: str) -> str:
    """A page of fenced blocks: each item is ``info\\ncode``."""
    parts = ["# Probe\n"]
    for block in blocks:
        info, code = block.split("\n", 1)
        parts.append(f"{FENCE}{info}\n{code.rstrip()}\n{FENCE}\n")
    return "\n".join(parts)


TIMEOUT = '{.python timeout="1"}\nimport signal, time\n'
PROBES = {
    **{f"lookalike_{i}": page("python\nx = 1", f"{info}\nshown but never compared")
       for i, info in enumerate(LOOKALIKES)},
    "timeout_except": page(TIMEOUT + "while True:\n    try:\n        time.sleep(0.05)\n"
                           "    except Exception:\n        pass"),
    "timeout_ignored": page(TIMEOUT + "signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
                            "while True:\n    try:\n        sum(range(100))\n"
                            "    except Exception:\n        pass"),
    "timeout_negative": page('{.python timeout="-1"}\nx = 1'),
    "skip_unittest": page("python\nimport unittest\nraise unittest.SkipTest('no')",
                          "python\nprint(1)", "text title=\"Output\"\nwrong"),
    "skip_pytest": page("python\nimport pytest\npytest.skip('no')"),
    "skip_importorskip": page("python\nimport pytest\npytest.importorskip('no_such_module')"),
    "type_error": page("python\nraise TypeError('broken on purpose')"),
    "fd2": page("python\nimport os\nos.write(2, b'past sys.stderr\\n')"),
    "dunder_stderr": page("python\nimport sys\nsys.__stderr__.write('past sys.stderr\\n')"),
    "fd1": page("python\nimport os\nos.write(1, b'past sys.stdout\\n')"),
    "thread": page("python\nimport threading, time\n"
                   "threading.Thread(target=lambda: (time.sleep(1), print('late'))).start()"),
    "figure_escape": page('{.python figure="../../../escaped"}\n'
                          "import matplotlib.pyplot as plt\nplt.plot([1, 2])"),
    "figure_twice": page('{.python figure="same"}\nimport matplotlib.pyplot as plt\n'
                         "plt.plot([1, 2])", '{.python figure="same"}\nplt.plot([2, 1])'),
    "surrogate": page("python\nimport os\nprint('ok')\nprint(os.fsdecode(b'caf\\xe9.txt'))"),
    "carriage_return": page("python\nprint('50%\\r100%')"),
    "nul": page("python\nprint('a\\x00b')"),
}


def outcomes_of(report: Path) -> dict[str, list[tuple[str, str]]]:
    """Page name -> [(state, message)] of its tests, from a junit report."""
    outcomes = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = (case.get("classname") or case.get("name")).removesuffix(".md")
        state, message = "passed", ""
        for kind in ("failure", "error", "skipped"):
            if (element := case.find(kind)) is not None:
                state = {"failure": "failed", "error": "error", "skipped": "skipped"}[kind]
                message = (element.get("message") or "") + "\n" + (element.text or "")
                break
        outcomes.setdefault(name, []).append((state, message))
    return outcomes


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("probes")
    for name, text in PROBES.items():
        (folder / f"{name}.md").write_text(text, "utf8")
    result = run_pages(folder, f"--junitxml={folder / 'report.xml'}", "-rA", ".")
    return folder, outcomes_of(folder / "report.xml"), result


@pytest.mark.parametrize("number", range(len(LOOKALIKES)), ids=LOOKALIKES)
def test_a_fence_titled_output_is_an_output_block_exactly_or_the_page_fails(probed, number):
    _, outcomes, _ = probed
    [(state, message)] = outcomes[f"lookalike_{number}"]
    assert state == "error" and "line 7:" in message and "titled Output" in message


@pytest.mark.parametrize("name", ["timeout_except", "timeout_ignored"])
def test_a_block_cannot_swallow_or_switch_off_its_timeout(probed, name):
    _, outcomes, _ = probed
    [(state, message)] = outcomes[name]
    assert state == "failed" and "ran longer than 1 s" in message


def test_a_fence_timeout_must_be_positive(probed):
    _, outcomes, _ = probed
    [(state, message)] = outcomes["timeout_negative"]
    assert state == "failed" and 'timeout="-1" must be a number of seconds greater than 0' in message


@pytest.mark.parametrize("name", ["skip_unittest", "skip_pytest", "skip_importorskip"])
def test_page_code_that_skips_fails(probed, name):
    _, outcomes, _ = probed
    state, message = outcomes[name][0]
    assert state == "failed" and "page code that skips" in message


def test_a_type_error_fails_instead_of_rerunning_as_a_skip(probed):
    _, outcomes, _ = probed
    [(state, message)] = outcomes["type_error"]
    assert state == "failed" and "broken on purpose" in message


@pytest.mark.parametrize("name, words", [("fd2", "it wrote to stderr (file descriptor 2"),
                                         ("dunder_stderr", "it wrote to stderr (file descriptor 2"),
                                         ("fd1", "it wrote to file descriptor 1 itself")])
def test_writing_past_sys_stdout_and_sys_stderr_is_caught(probed, name, words):
    _, outcomes, _ = probed
    [(state, message)] = outcomes[name]
    assert state == "failed" and words in message and "past sys.std" in message


def test_a_block_that_leaves_a_thread_running_fails(probed):
    _, outcomes, _ = probed
    [(state, message)] = outcomes["thread"]
    assert state == "failed" and "left 1 thread(s) running" in message


def test_a_figure_name_is_a_name_and_names_one_figure(probed):
    folder, outcomes, _ = probed
    [(state, message)] = outcomes["figure_escape"]
    assert state == "failed" and 'figure="../../../escaped" is not a figure name' in message
    assert not list(folder.parent.rglob("escaped.svg"))
    state, message = outcomes["figure_twice"][1]
    assert state == "failed" and "also the name of the figure drawn at figure_twice.md:3" in message
    assert "cannot fix this" in message


@pytest.mark.parametrize("name, words", [("surrogate", "a lone surrogate, '\\udce9', on line 2"),
                                         ("carriage_return", "a control character, '\\r'"),
                                         ("nul", "a control character, '\\x00'")])
def test_output_a_page_cannot_hold_fails_naming_the_line(probed, name, words):
    _, outcomes, _ = probed
    [(state, message)] = outcomes[name]
    assert state == "failed" and f"{name}.md:3: the block printed {words}" in message


def test_make_outputs_leaves_a_page_it_cannot_write_whole_and_writes_the_others(tmp_path):
    pages = {"a_first": page("python\nprint('new a')"),
             "b_surrogate": page("python\nimport os\nprint(os.fsdecode(b'caf\\xe9'))"),
             "c_control": page("python\nprint('x\\ry')"),
             "d_last": page("python\nprint('new d')")}
    for name, text in pages.items():
        (tmp_path / f"{name}.md").write_text(text, "utf8")
    result = run_pages(tmp_path, "--update-outputs", ".")
    assert result.returncode == 1, result.stdout
    for name in ("b_surrogate", "c_control"):
        assert (tmp_path / f"{name}.md").read_text("utf8") == pages[name]
    for name, printed in (("a_first", "new a"), ("d_last", "new d")):
        assert f'{FENCE}text title="Output"\n{printed}\n{FENCE}' in (tmp_path / f"{name}.md").read_text()
    assert "b_surrogate.md:3: the block printed a lone surrogate" in result.stdout


def test_a_failed_write_leaves_the_page_whole_and_the_others_are_written(tmp_path, monkeypatch):
    paths = []
    for name in ("one", "two", "three"):
        paths.append(tmp_path / f"{name}.md")
        paths[-1].write_text(page("python\nprint(1)"), "utf8")
    checker = Checker(tmp_path, update=True)
    for path in paths:
        checker.runs[path] = PageRun(read_page(path, tmp_path), {}, actual={0: "1\n"})
    real = os.replace

    def fail_on_two(source, target):
        if Path(target).name == "two.md":
            raise OSError("disk full")
        real(source, target)

    monkeypatch.setattr(os, "replace", fail_on_two)
    changed, failures = update.write_outputs(checker)
    assert changed == [paths[0], paths[2]] and len(failures) == 1 and "disk full" in failures[0]
    assert paths[1].read_text("utf8") == page("python\nprint(1)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.md", "three.md", "two.md"]


def test_replace_file_writes_whole_or_not_at_all(tmp_path, monkeypatch):
    path = tmp_path / "page.md"
    path.write_bytes(b"old")
    replace_file(path, b"new")
    assert path.read_bytes() == b"new"
    monkeypatch.setattr(os, "replace", lambda *_: (_ for _ in ()).throw(OSError("no")))
    with pytest.raises(OSError):
        replace_file(path, b"newer")
    assert path.read_bytes() == b"new" and [p.name for p in tmp_path.iterdir()] == ["page.md"]


def test_make_outputs_escapes_tildes_and_expands_tabs_so_the_page_matches(tmp_path):
    text = page("python\nprint('~5 and \\\\~3 and a\\tb')")
    (tmp_path / "page.md").write_text(text, "utf8")
    assert run_pages(tmp_path, "--update-outputs", "page.md").returncode == 0
    written = (tmp_path / "page.md").read_text("utf8")
    assert "\\~5 and \\\\~3 and a    b" in written  # the tab: to column 20
    assert run_pages(tmp_path, "page.md").returncode == 0


EXITS = {"fails": page("python\nprint(1)", 'text title="Output"\n2'),
         "posix_exit": page("python\nimport posix\nposix._exit(0)"),
         "atexit_exit": page("python\nimport atexit, os\natexit.register(lambda: os._exit(0))")}


@pytest.mark.parametrize("mode", [(), ("--update-outputs",), ("-n", "2")],
                         ids=["serial", "make outputs", "xdist"])
def test_a_run_with_a_failure_never_exits_0(tmp_path, mode):
    for name, text in EXITS.items():
        (tmp_path / f"{name}.md").write_text(text, "utf8")
    result = run_pages(tmp_path, *mode, "-rA", ".")  # (and no hang: run_pages times out)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "called os._exit(0)" in result.stdout


def test_a_block_that_catches_every_timeout_ends_the_run_failed(tmp_path):
    (tmp_path / "page.md").write_text(page(
        TIMEOUT + "signal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True:\n"
        "    try:\n        time.sleep(0.05)\n    except BaseException:\n        pass"), "utf8")
    result = run_pages(tmp_path, "page.md")
    assert result.returncode == 1
    assert "ran longer than 1 s" in result.stderr and "would not stop" in result.stderr


@pytest.mark.parametrize("text", [
    "Title\n=== \n\n    ```python\n    print(1)\n    ```\n",
    "Title\n=== Not a tab\n\n    ```python\n    print(1)\n    ```\n",
    "Prose.\n\n    !!! note\n        ```python\n        print(1)\n        ```\n",
])
def test_a_fence_the_site_shows_as_literal_code_is_not_run(tmp_path, text):
    (tmp_path / "page.md").write_text(text, "utf8")
    assert read_page(tmp_path / "page.md", tmp_path).blocks == []


def test_a_varying_marker_matches_ascii_digits_only():
    assert line_matches("~1", "2") and not line_matches("~1", "\u0661")  # U+0661: Arabic-Indic one
    assert not line_matches("t = ~1.5 ms", "t = \u0661.5 ms")


@pytest.mark.parametrize("printed", ["~5", "about ~3 ms", "a \\~ b", "\\~3", "~ ~1e3 ~x",
                                     "x~-2", "~.5"])
def test_a_printed_line_written_escaped_matches_itself(printed):
    assert line_matches(escape_literal(printed), printed)
