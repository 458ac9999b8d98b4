"""How every self-check reports: one printed verdict and True or False, never an exception.

A reader's wrong answer is a verdict, not a crash, so a page can run an unsolved starter
and show the check's message as its checked output. The reader's function is called
through ``call``: it gets copies of the check's inputs, a wall-clock limit, and whatever
it raises (``SystemExit`` and ``KeyboardInterrupt`` included) or changes in its inputs
becomes the reason of a ✗ verdict.
"""

import copy
import functools
import inspect
import re
import signal
import textwrap
import threading
import time
import warnings

import numpy as np

PASS, FAIL = "✓ Correct: ", "✗ Not yet: "
WIDTH = 80  # the column a page's code and output fit in
LIMIT_S = 10.0  # the longest one call of a reader's function may run


def verdict(ok: bool, message: str) -> bool:
    """Print "✓ Correct: message" or "✗ Not yet: message" and return ``ok``.

    One verdict, wrapped at WIDTH columns with its later lines indented, so that it
    reads without scrolling on a page, in a notebook and in a terminal. Words are never
    split: joining the lines with single spaces gives the message back.
    """
    text = (PASS if ok else FAIL) + re.sub(r"\s+", " ", str(message)).strip()
    print(textwrap.fill(text, WIDTH, subsequent_indent="  ", break_long_words=False,
                        break_on_hyphens=False))
    return ok


def num(x) -> str:
    """A number as a verdict shows it: always the same width (so a verdict wraps the
    same way whatever random input it was drawn from), or nan / inf as they are."""
    x = float(x)
    return f"{x:+.3e}" if np.isfinite(x) else str(x)


class TimeUp(BaseException):
    """Raised inside the reader's function when it runs past its limit."""


def _limited(thunk, limit):
    """Run ``thunk()``; past ``limit`` seconds raise TimeUp inside it. Uses the real-time
    interval timer where there is one (the main thread of CPython on Unix), restoring any
    timer already set (a page checker's own timeout keeps counting); elsewhere (a
    thread, the browser) the time is measured afterwards."""
    start = time.perf_counter()
    armed = False
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
        def stop(signum, frame):
            raise TimeUp
        try:
            outer_left = signal.getitimer(signal.ITIMER_REAL)[0]
            first = min(limit, outer_left) if outer_left > 0 else limit
            before = signal.signal(signal.SIGALRM, stop)
            outer = signal.setitimer(signal.ITIMER_REAL, first)
            armed = True
        except (ValueError, OSError, AttributeError):  # no usable timer here
            pass
    try:
        result = thunk()
    finally:
        if armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, before)
            if outer[0] > 0:  # an outer timeout was counting: let it go on counting
                left = outer[0] - (time.perf_counter() - start)
                signal.setitimer(signal.ITIMER_REAL, max(left, 1e-3), outer[1])
    if time.perf_counter() - start > limit:
        raise TimeUp
    return result


def _names(fn, args, kwargs):
    """The reader's parameter names for the arguments given, where they can be read."""
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
        return {id(value): name for name, value in bound.arguments.items()}
    except (TypeError, ValueError):
        return {}


def _changed(before, after) -> str | None:
    """Where ``after`` differs from ``before`` (arrays, numbers, lists, dicts), or None."""
    if isinstance(before, np.ndarray):
        if not isinstance(after, np.ndarray) or after.shape != before.shape:
            return "its shape or type"
        same = (after == before) | (np.isnan(after) & np.isnan(before)) if (
            np.issubdtype(before.dtype, np.inexact)) else after == before
        if np.all(same):
            return None
        where = tuple(int(i) for i in np.argwhere(~same)[0])
        was, now = num(before[where]), num(after[where])
        if was == now:  # differs beyond the digits shown
            was, now = f"{float(before[where]):.17g}", f"{float(after[where]):.17g}"
        return f"entry {list(where)} was {was}, is now {now}"
    if isinstance(before, dict):
        if not isinstance(after, dict) or after.keys() != before.keys():
            return "its keys"
        for key in before:
            if (why := _changed(before[key], after[key])) is not None:
                return f"[{key!r}]: {why}"
        return None
    if isinstance(before, (list, tuple)):
        if type(after) is not type(before) or len(after) != len(before):
            return "its length"
        for i, (b, a) in enumerate(zip(before, after)):
            if (why := _changed(b, a)) is not None:
                return f"[{i}]: {why}"
        return None
    return None


class Forbidden(BaseException):
    """Raised when the reader's function calls what its exercise forbids."""


def _stand_in(name):
    def refuse(*args, **kwargs):
        raise Forbidden(name)
    return refuse


class _RefusedModule:
    """Stands for a forbidden module in the reader's names: any use of it is refused."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        raise Forbidden(f"{self._name}.{attr}")


def _forbidding(fn, forbidden):
    """Swap, in the reader's global names (and in the modules that define them), every
    forbidden function for one that raises Forbidden, and every forbidden module for a
    stand-in that refuses any use; return a function that puts everything back."""
    undo = []
    names = getattr(fn, "__globals__", None)
    modules = [m for m in forbidden if inspect.ismodule(m)]
    functions = [f for f in forbidden if not inspect.ismodule(f)]

    def swap(space, key, value):
        undo.append((space, key, space[key]))
        space[key] = value

    def label(f):
        return f"{getattr(f, '__module__', None) or 'numpy'}.{getattr(f, '__name__', f)}"

    if names is not None:
        for key, value in list(names.items()):
            if any(value is m for m in modules):
                swap(names, key, _RefusedModule(value.__name__))
            elif any(value is f for f in functions) or any(
                    getattr(value, "__module__", None) and callable(value)
                    and not inspect.isclass(value)
                    and str(value.__module__).split(".")[0] == m.__name__.split(".")[0]
                    for m in modules):
                swap(names, key, _stand_in(label(value)))
    for f in functions:  # attribute uses, np.matmul(...) or softmax.softmax(...)
        for module in {np, inspect.getmodule(f)} - {None}:
            space = vars(module)
            for key, value in list(space.items()):
                if value is f:
                    swap(space, key, _stand_in(label(f)))

    def restore():
        for space, key, value in reversed(undo):
            space[key] = value
    return restore


def call(fn, *args, may_change=(), limit=LIMIT_S, forbidden=(), **kwargs):
    """Call the reader's function on copies of the arguments; return (result, None) or
    (None, a failure line).

    A failure is: anything raised (``SystemExit``, ``KeyboardInterrupt`` and the
    time limit included), or an argument changed in place (unless its parameter name is
    in ``may_change``, for exercises that ask for an in-place update: what the answer
    did to those is copied back into the check's own arguments). The check's other
    inputs are never touched, so what the check compares afterwards is what it drew.
    ``forbidden``: functions and modules the exercise forbids; a call of one (through
    the reader's names or the module's attribute) is the reason of the failure.
    """
    if not callable(fn):
        return None, (f"what was checked is a {type(fn).__name__}, not a function: "
                      "pass the function itself, without calling it")
    copies = copy.deepcopy((args, kwargs))
    names = _names(fn, *copies)
    restore = _forbidding(fn, forbidden) if forbidden else (lambda: None)
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = _limited(lambda: fn(*copies[0], **copies[1]), limit)
    except Forbidden as error:
        return None, (f"your function called {error}, which this exercise asks you "
                      "not to use; compute the answer yourself")
    except TimeUp:
        return None, (f"your function ran for more than {limit:g} s on one input; "
                      "look for a loop that never ends, or one over every entry")
    except SystemExit as error:
        return None, (f"your function called sys.exit({error.code!r}) (SystemExit); "
                      "return the answer instead")
    except KeyboardInterrupt:
        return None, "your function was interrupted (KeyboardInterrupt) before it returned"
    except BaseException as error:  # a reader's bug is a verdict, not a crash
        return None, f"your function raised {type(error).__name__}: {error}"
    finally:
        restore()
    given = list(copies[0]) + list(copies[1].values())
    for original, passed in zip(list(args) + list(kwargs.values()), given):
        name = names.get(id(passed), "an argument")
        if name in may_change:  # an in-place exercise: the check sees the update
            _write_back(original, passed)
            continue
        why = _changed(original, passed)
        if why is not None:
            return None, (f"your function changed its input {name} in place ({why}); "
                          "leave the inputs as they are and return a new array "
                          "(x = x / s, not x /= s)")
    return result, None


def _write_back(original, passed):
    """Copy what the answer did to a copy of an argument into the check's own
    argument (dicts of arrays, nested), for ``may_change`` arguments."""
    if isinstance(original, dict) and isinstance(passed, dict):
        for key, value in passed.items():
            if (isinstance(original.get(key), np.ndarray)
                    and isinstance(value, np.ndarray)
                    and original[key].shape == value.shape):
                original[key][...] = value
            elif isinstance(original.get(key), dict):
                _write_back(original[key], value)
            else:
                original[key] = value
    elif isinstance(original, np.ndarray) and np.shape(passed) == original.shape:
        original[...] = passed


def guard_checks(namespace: dict) -> None:
    """Make every ``check_*`` function defined in a check module safe: whatever the answer
    (wrong types, ragged lists, strings, None, NaN, an object whose methods raise or
    exit), the check prints a ✗ verdict with a reason and returns False instead of
    raising. Call it at the end of the module: ``guard_checks(globals())``."""
    for name, check in list(namespace.items()):
        if not (name.startswith("check_") and callable(check)):
            continue
        if getattr(check, "__module__", None) != namespace.get("__name__"):
            continue
        if getattr(check, "_guarded", False):
            continue

        @functools.wraps(check)
        def guarded(*args, _check=check, **kwargs):
            try:
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    result = _check(*args, **kwargs)
            except BaseException as error:  # the answer broke the check: still a verdict
                return verdict(False, "your answer could not be checked "
                               f"({type(error).__name__}: {error}); return what the "
                               "exercise asks for, of the type and shape it asks for")
            return bool(result)

        guarded._guarded = True
        namespace[name] = guarded
