"""Running a page's blocks like a notebook, and checking what each printed and drew.

The blocks of a page share one namespace and run in page order, each exactly once per
test run. Selecting a single block (``-k``) first runs the blocks before it, silently, so
it still works alone. State that could leak between pages is reset before each page
(``tools.pagecheck.state``).
"""

from __future__ import annotations

import contextlib
import ctypes
import difflib
import io
import math
import os
import posix
import re
import signal
import sys
import tempfile
import threading
import time
import types
import unittest
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tools.pagecheck.figures import FIGURE_NAME, check_figure, current_figure_svg
from tools.pagecheck.outputs import (band_factor, band_misses, normalise, output_matches,
                                    unmatched_lines)
from tools.pagecheck.state import Baseline, reset_page_state
from tools.source.markdown import Page, read_page


class PageCheckError(AssertionError):
    """A page whose blocks do not print what the page shows."""


class BlockTimeout(BaseException):
    """A block that ran longer than its limit. Not an ``Exception``, so that a block's
    ``except Exception:`` does not swallow it; a block that catches even this is ended by
    the watchdog (``time_limit``)."""


class BlockExit(AssertionError):
    """A block that tried to end the interpreter (``os._exit``), which would end the run
    without a failure."""


DEFAULT_TIMEOUT_S = 300.0
# How long a block may go on after its limit, catching the timeout, before the watchdog
# ends the whole run (the process) with a failure.
GRACE_S = 5.0
# The real ``os._exit``, before the checker wraps it (``guard_exit_status``, ``no_exit``).
_REAL_EXIT = posix._exit
# The exit status the run decided, once it has (set by the plugin at the session's end).
_final_status = 0


def guard_exit_status() -> None:
    """A run with a failure never exits 0: an ``os._exit(0)`` after the session's end (from
    an ``atexit`` function a page registered, say) exits with the run's own status."""

    def guarded_exit(status, /):
        _REAL_EXIT(status if status else _final_status)

    os._exit = posix._exit = guarded_exit


def set_final_status(status: int) -> None:
    global _final_status
    _final_status = int(status)


def _inject(thread_id: int, exception: type | None) -> None:
    """Raise ``exception`` in the thread (None: cancel a pending one)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(exception) if exception else None)


@contextlib.contextmanager
def time_limit(seconds: float, where: str):
    """End the block with BlockTimeout after ``seconds``, whatever it does.

    SIGALRM (main thread) interrupts a sleep or a wait; it fires again every second in case
    the block catches it. A watchdog thread raises it in the block's thread too, in case
    the block ignored SIGALRM or stopped the timer; and a block still running ``GRACE_S``
    after its limit ends the process with status 1, saying why, on the real stderr.
    """
    if seconds <= 0:  # only `--block-timeout 0`: a fence's timeout is always > 0
        yield
        return
    message = (f"{where}: the block ran longer than {seconds:g} s. If it must, give it more "
               f'time on the page: ```{{.python timeout="{2 * seconds:g}"}}')
    timeout = type("BlockTimeout", (BlockTimeout,),
                   {"__init__": lambda self, *args: BlockTimeout.__init__(self, message)})

    def expire(signum, frame):
        raise timeout()

    target, done = threading.get_ident(), threading.Event()
    in_main = threading.current_thread() is threading.main_thread()
    console = os.dup(2)  # the block's fd 2 is captured: the watchdog's last word goes here

    def watchdog():
        if done.wait(seconds):
            return
        end = time.monotonic() + GRACE_S
        while not done.wait(0.5):
            if time.monotonic() > end:
                os.write(console, f"\n{message}\nThe block would not stop (it catches the "
                         "timeout or turned it off): the run ends here, failed.\n".encode())
                _REAL_EXIT(1)
            _inject(target, timeout)
            if in_main and signal.getsignal(signal.SIGALRM) is expire:
                signal.pthread_kill(target, signal.SIGALRM)  # wakes a sleeping block

    if in_main:
        previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)
    guard = threading.Thread(target=watchdog, name="pagecheck-watchdog", daemon=True)
    guard.start()
    try:
        yield
    finally:
        done.set()
        while True:  # a timeout arriving as the block ends must not cut this short
            try:
                if in_main:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                guard.join()
                _inject(target, None)
                if in_main:
                    signal.signal(signal.SIGALRM, previous)
                break
            except BlockTimeout:
                continue
        os.close(console)


@contextlib.contextmanager
def no_exit(where: str):
    """``os._exit`` (``posix._exit``) inside a block fails the block instead of ending the
    run, even when the block catches the refusal."""
    real = os._exit
    called = []

    def refuse(status=0, /):
        called.append(status)
        raise BlockExit(f"{where}: the block called os._exit({status}), which would end the "
                        "test run without reporting; a page must not end the interpreter")

    os._exit = posix._exit = refuse
    try:
        yield
    finally:
        os._exit = posix._exit = real
    if called:
        refuse(called[0])


@contextlib.contextmanager
def raw_streams():
    """Capture what the block writes to file descriptors 1 and 2 themselves, past
    ``sys.stdout``/``sys.stderr``: ``os.write(2, ...)``, ``sys.__stderr__``, C code. The
    texts are in the yielded dict, by descriptor, once the block has ended."""
    captured: dict[int, str] = {}
    streams = [s for s in (sys.__stdout__, sys.__stderr__) if s is not None]
    for stream in streams:
        stream.flush()
    files, saved = {}, {}
    for fd in (1, 2):
        files[fd] = tempfile.TemporaryFile()
        saved[fd] = os.dup(fd)
        os.dup2(files[fd].fileno(), fd)
    try:
        yield captured
    finally:
        for stream in streams:
            with contextlib.suppress(Exception):
                stream.flush()
        for fd in (1, 2):
            os.dup2(saved[fd], fd)
            os.close(saved[fd])
            files[fd].seek(0)
            captured[fd] = files[fd].read().decode("utf8", "replace")
            files[fd].close()


# Printed characters an Output block cannot hold: a page is read with them changed (CR to a
# line end, NUL to U+FFFD) or cannot be written at all (a lone surrogate is no UTF-8).
UNWRITABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\ud800-\udfff]")


def unwritable(text: str) -> str | None:
    """Why ``text`` cannot be an Output block's text (None: it can)."""
    found = UNWRITABLE.search(text)
    if found is None:
        return None
    line = text.count("\n", 0, found.start()) + 1
    kind = "a lone surrogate" if "\ud800" <= found[0] <= "\udfff" else "a control character"
    return (f"{kind}, {found[0]!r}, on line {line} of its output, which an Output block "
            "cannot show as printed: print its repr() (or os.fsencode() a file name)")


SKIPS = (unittest.SkipTest, pytest.skip.Exception, pytest.xfail.Exception,
         pytest.exit.Exception)


@dataclass
class PageRun:
    """The state of one page during a test run."""

    page: Page
    namespace: dict
    next_block: int = 0
    failed_line: int | None = None
    actual: dict[int, str] = field(default_factory=dict)  # block index -> printed text
    figures: dict[str, bytes] = field(default_factory=dict)  # figure name -> SVG drawn
    stray: dict[int, list[str]] = field(default_factory=dict)  # block index -> stderr, warnings
    refused: bool = False  # a block ran but failed a check that `make outputs` cannot fix


class Checker:
    """Holds every page's namespace and outputs for one pytest session."""

    def __init__(self, root: Path, update: bool, timeout: float = DEFAULT_TIMEOUT_S):
        self.root = root
        self.update = update
        self.timeout = timeout
        self.runs: dict[Path, PageRun] = {}
        self.executions: dict[tuple[Path, int], int] = {}
        self.pages_seen: set[Path] = set()  # pages run by xdist workers (controller only)
        self.figure_owners: dict[str, str] = {}  # figure name -> the block that draws it
        self.baseline: Baseline | None = None  # taken just before the first page runs

    def page_run(self, path: Path) -> PageRun:
        path = Path(path).resolve()
        if path not in self.runs:
            if self.baseline is None:
                self.baseline = Baseline()
            reset_page_state(self.root, self.baseline)
            module = types.ModuleType(f"page_{len(self.runs)}")
            module.__file__ = str(path)
            sys.modules[module.__name__] = module  # dataclasses defined on a page need this
            self.runs[path] = PageRun(read_page(path, self.root), module.__dict__)
        return self.runs[path]

    def block_timeout(self, run: PageRun, index: int) -> float:
        """The fence's ``timeout="..."`` (a number of seconds > 0), else the run's limit."""
        raw = run.page.blocks[index].attributes.get("timeout")
        if raw is None:
            return self.timeout
        try:
            seconds = float(raw)
        except ValueError:
            seconds = math.nan
        if not (math.isfinite(seconds) and seconds > 0):
            raise PageCheckError(f'{self.where(run, index)}: timeout="{raw}" must be a number '
                                 "of seconds greater than 0 (a block always has a time limit)")
        return seconds

    def claim_figure(self, run: PageRun, index: int) -> None:
        """A fence's ``figure="name"``: a plain name, drawn by this block only."""
        name, where = run.page.blocks[index].attributes.get("figure"), self.where(run, index)
        if name is None:
            return
        if not FIGURE_NAME.fullmatch(name):
            raise PageCheckError(f'{where}: figure="{name}" is not a figure name: lower-case '
                                 "letters, digits and dashes (it names docs/assets/figures/"
                                 "<name>.svg, and nothing outside that folder)")
        owner = self.figure_owners.setdefault(name, where)
        if owner != where:
            raise PageCheckError(f'{where}: figure="{name}" is also the name of the figure '
                                 f"drawn at {owner}: give each figure its own name (`make "
                                 "outputs` cannot fix this: one file cannot hold two figures)")

    def execute(self, run: PageRun, index: int, source: str) -> str:
        """Run one block; return what it printed (tabs expanded, as the page is read).
        What it wrote to stderr (through ``sys.stderr`` or file descriptor 2) or warned is
        kept in ``run.stray`` unless the fence allows it (``allow="stderr warnings"``)."""
        block = run.page.blocks[index]
        key = (run.page.path, index)
        self.executions[key] = self.executions.get(key, 0) + 1
        buffer, errors = io.StringIO(), io.StringIO()
        where = self.where(run, index)
        try:
            timeout = self.block_timeout(run, index)
            self.claim_figure(run, index)
            code = compile(source, str(run.page.path), "exec", dont_inherit=True)
            threads = set(threading.enumerate())
            with contextlib.ExitStack() as stack:
                stack.enter_context(time_limit(timeout, where))
                raw = stack.enter_context(raw_streams())
                stack.enter_context(contextlib.redirect_stdout(buffer))
                stack.enter_context(contextlib.redirect_stderr(errors))
                caught = stack.enter_context(warnings.catch_warnings(record=True))
                stack.enter_context(no_exit(where))
                try:
                    exec(code, run.namespace)
                except SKIPS as error:
                    raise PageCheckError(
                        f"{where}: the block raised {type(error).__name__}({error}): page code "
                        "that skips, expects a failure or ends the run fails (a page runs "
                        "whole, or it is broken)") from error
            self.check_threads(threads, where)
            if problem := unwritable(buffer.getvalue()):
                raise PageCheckError(f"{where}: the block printed {problem}")
            run.stray[index] = self.stray(block, errors.getvalue(), raw, caught)
            if "figure" in block.attributes:
                name = block.attributes["figure"]
                run.figures[name] = current_figure_svg(self.where(run, index), name)
        except BaseException:
            run.failed_line = block.line
            printed = buffer.getvalue()
            if printed:
                sys.stderr.write(f"\nPrinted by {self.where(run, index)} before the error:\n"
                                 + printed.encode("utf8", "backslashreplace").decode("utf8"))
            raise
        finally:
            run.next_block = index + 1
        return buffer.getvalue().expandtabs(4)

    @staticmethod
    def check_threads(before: set[threading.Thread], where: str) -> None:
        """A block must not leave a thread running: what it printed later would land in
        the output of whichever block runs then."""
        left = [t for t in threading.enumerate() if t not in before]
        for thread in left:
            thread.join(0.1)
        if alive := [t.name for t in left if t.is_alive()]:
            raise PageCheckError(f"{where}: the block left {len(alive)} thread(s) running "
                                 f"({', '.join(alive)}): what they print would land in a later "
                                 "block's output. Join them (thread.join()) before it ends")

    @staticmethod
    def stray(block, errors: str, raw: dict[int, str], caught) -> list[str]:
        """What a block wrote past its Output, and the fence does not allow."""
        allowed = set(block.attributes.get("allow", "").split())
        stray = []
        if raw[1].strip():
            stray.append("it wrote to file descriptor 1 itself (os.write(1, ...), "
                         f"sys.__stdout__), past its Output block:\n{raw[1].rstrip()}")
        for text, how in ((errors, ""), (raw[2], " (file descriptor 2: os.write(2, ...), "
                                             "sys.__stderr__ or C code)")):
            if text.strip() and "stderr" not in allowed:
                stray.append(f"it wrote to stderr{how}:\n{text.rstrip()}")
        if caught and "warnings" not in allowed:
            stray.append("it warned:\n" + "\n".join(
                f"{w.category.__name__}: {w.message}" for w in caught))
        return stray

    def where(self, run: PageRun, index: int) -> str:
        path = run.page.path
        shown = path.relative_to(self.root) if path.is_relative_to(self.root) else path
        return f"{shown}:{run.page.blocks[index].line}"

    def run_block(self, test) -> None:
        run = self.page_run(test.source_path)
        line = test.start_line  # 1-based line of the opening fence
        index = next(i for i, b in enumerate(run.page.blocks) if b.line == line)
        if run.failed_line is not None:
            pytest.skip(f"an earlier block of this page (line {run.failed_line}) failed")
        if run.next_block > index:  # asked again for a block already run: start the page over
            self.runs.pop(run.page.path)
            run = self.page_run(test.source_path)
        for earlier in range(run.next_block, index):  # e.g. `-k` selected this block alone
            block = run.page.blocks[earlier]
            self.execute(run, earlier, "\n" * block.line + block.code)
        actual = self.execute(run, index, test.source)
        run.actual[index] = actual
        if run.stray.get(index):
            run.refused = True  # `make outputs` leaves this page as it is
            raise PageCheckError(
                f"{self.where(run, index)}: " + "\n".join(run.stray[index])
                + '\nFix the cause, or allow it on the fence: ```{.python allow="stderr warnings"}'
            )
        if not self.update:
            self.compare(run, index, actual)

    def compare(self, run: PageRun, index: int, actual: str) -> None:
        block = run.page.blocks[index]
        where = self.where(run, index)
        if "figure" in block.attributes:
            name = block.attributes["figure"]
            check_figure(self.root, name, run.figures[name], where)
        if block.output is None:
            if normalise(actual):
                raise PageCheckError(
                    f"{where}: the block prints, but no ```text title=\"Output\"``` block follows it.\n"
                    f"It printed:\n{actual}\nRun `make outputs` to add the Output block."
                )
            return
        if not normalise(actual) and normalise(block.output):
            raise PageCheckError(
                f"{where}: the page shows an Output block, but the block printed nothing.\n"
                "Run `make outputs` to remove it, or make the block print."
            )
        try:
            band = band_factor(block.attributes.get("band"))
        except ValueError as error:
            raise PageCheckError(f"{where}: {error}") from None
        if not output_matches(block.output, actual, band):
            diff = "\n".join(
                difflib.unified_diff(
                    normalise(block.output),
                    normalise(actual),
                    fromfile=f"{where} (Output block on the page)",
                    tofile=f"{where} (printed by the block)",
                    lineterm="",
                )
            )
            if not diff.strip() or diff.count("\n") < 3:
                diff = "\n".join(unmatched_lines(block.output, actual, band))
            else:
                diff = "\n".join([diff, *band_misses(block.output, actual, band)])
            raise PageCheckError(
                f"{where}: the block's output differs from the page.\n{diff}\n"
                "If the new output is right, run `make outputs` and review the diff."
            )
