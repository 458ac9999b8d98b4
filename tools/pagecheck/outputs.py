"""Comparing what a block printed with the Output block the page shows.

Trailing whitespace and blank lines at either end are ignored. A number written ``~3.1``
in an Output block is a varying value (a timing, the memory of this machine): it matches
any number, and nothing else varies.
"""

from __future__ import annotations

import re

NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
VARYING = re.compile(r"~(" + NUMBER + ")")


def output_matches(expected: str, actual: str) -> bool:
    """Compare normalised texts; ``~NUMBER`` in ``expected`` matches any number."""
    exp, act = normalise(expected), normalise(actual)
    return len(exp) == len(act) and all(line_matches(e, a) for e, a in zip(exp, act))


def line_matches(expected: str, actual: str) -> bool:
    if "~" not in expected or not VARYING.search(expected):
        return expected == actual
    parts = VARYING.split(expected)  # literal, number, literal, number, ..., literal
    pattern = ""
    for i, part in enumerate(parts):
        if i % 2:
            pattern += r"\s*" + NUMBER  # a varying number may change its width
        else:
            pattern += r"\s*".join(re.escape(word) for word in re.split(r"\s+", part))
    return re.fullmatch(pattern, actual) is not None


def normalise(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return lines


def new_output_text(expected: str | None, actual: str) -> str:
    """The Output text to write: the actual output, keeping still-matching varying lines."""
    act = normalise(actual)
    if expected is not None:
        exp = normalise(expected)
        if len(exp) == len(act):
            act = [e if VARYING.search(e) and line_matches(e, a) else a for e, a in zip(exp, act)]
    return "\n".join(act)
