"""How every self-check reports: one printed verdict and True or False, never an exception.

A reader's wrong answer is a verdict, not a crash, so a page can run an unsolved starter
and show the check's message as its checked output.
"""

import re
import textwrap

PASS, FAIL = "✓ Correct: ", "✗ Not yet: "
WIDTH = 80  # the column a page's code and output fit in


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


def call(fn, *args, **kwargs):
    """Call the reader's function; return (result, None) or (None, a failure line)."""
    try:
        return fn(*args, **kwargs), None
    except Exception as error:  # a reader's bug is a verdict, not a crash
        return None, f"your function raised {type(error).__name__}: {error}"


def guard_checks(namespace: dict) -> None:
    """Make every ``check_*`` function defined in a check module safe: whatever the answer
    (wrong types, ragged lists, strings, None, NaN), the check prints a ✗ verdict with a
    reason and returns False instead of raising. Call it at the end of the module:
    ``guard_checks(globals())``."""
    import functools
    import warnings

    import numpy as np

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
            except Exception as error:  # the answer broke the check: still a verdict
                return verdict(False, "your answer could not be checked "
                               f"({type(error).__name__}: {error}); return what the "
                               "exercise asks for, of the type and shape it asks for")
            return bool(result)

        guarded._guarded = True
        namespace[name] = guarded
