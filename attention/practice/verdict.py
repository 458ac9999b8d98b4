"""How every self-check reports: one printed line and True or False, never an exception.

A reader's wrong answer is a verdict, not a crash, so a page can run an unsolved starter
and show the check's message as its checked output.
"""

PASS, FAIL = "✓ Correct: ", "✗ Not yet: "


def verdict(ok: bool, message: str) -> bool:
    """Print "✓ Correct: message" or "✗ Not yet: message" and return ``ok``."""
    print((PASS if ok else FAIL) + message)
    return ok


def call(fn, *args, **kwargs):
    """Call the reader's function; return (result, None) or (None, a failure line)."""
    try:
        return fn(*args, **kwargs), None
    except Exception as error:  # a reader's bug is a verdict, not a crash
        return None, f"your function raised {type(error).__name__}: {error}"
