"""Comparing what a block printed with the Output block the page shows.

Trailing whitespace and blank lines at either end are ignored; everything else must be
equal, except varying numbers. ``~3.1`` in an Output block stands for one number (a
timing, the memory of this machine): it matches any single number, which may take more
or less room to its left (the spaces before a marker are a column's padding: at least one
stays one), and nothing else. The text around it must match exactly, as on a line without
a marker, and the number is whole: ``~1 ~2`` never matches ``12``. ``\\~`` is a literal tilde
(output that really shows ``~3``).
"""

from __future__ import annotations

import re

# ASCII digits only: ``\d`` would also take other scripts' digits (``~1`` matching "١٢").
NUMBER = r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
VARYING = re.compile(r"(?<!\\)~(" + NUMBER + ")")
# A marker or an escaped tilde, in the order they appear.
TOKEN = re.compile(r"\\~|~(" + NUMBER + ")")


def output_matches(expected: str, actual: str) -> bool:
    """Compare normalised texts; ``~NUMBER`` in ``expected`` matches any number."""
    exp, act = normalise(expected), normalise(actual)
    return len(exp) == len(act) and all(line_matches(e, a) for e, a in zip(exp, act))


def line_pattern(expected: str) -> str:
    """The regular expression of one expected line: literal text, ``~N`` markers, ``\\~``."""
    pattern, at = "", 0
    for match in TOKEN.finditer(expected):
        literal = expected[at : match.start()]
        if match.group(0) == "\\~":
            pattern += re.escape(literal) + "~"
        else:  # one whole number; the spaces before it are padding (a right-aligned column)
            padded = literal.rstrip(" ")
            pattern += re.escape(padded) + (" +" if padded != literal else "")
            pattern += r"(?<![0-9.])" + NUMBER + r"(?![0-9.])"
        at = match.end()
    return pattern + re.escape(expected[at:])


def line_matches(expected: str, actual: str) -> bool:
    if "~" not in expected:
        return expected == actual
    return re.fullmatch(line_pattern(expected), actual) is not None


def unmatched_lines(expected: str, actual: str) -> list[str]:
    """Why two outputs differ, line by line (for when a diff of the texts shows nothing)."""
    exp, act = normalise(expected), normalise(actual)
    if len(exp) != len(act):
        return [f"the page shows {len(exp)} lines, the block printed {len(act)}"]
    return [f"line {n}: the page's {e!r} does not match the printed {a!r}"
            + (" (~ before a number is a varying-number marker; write \\~ for a tilde)"
               if VARYING.search(e) else "")
            for n, (e, a) in enumerate(zip(exp, act), 1) if not line_matches(e, a)]


def normalise(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return lines


# A tilde the page must escape to show it literally: one before a number (else it is a
# marker), and one after a backslash (else the two read as an escaped tilde).
LITERAL_TILDE = re.compile(r"~(?=" + NUMBER + r")|(?<=\\)~")


def escape_literal(line: str) -> str:
    """A printed line as an Output block writes it, so that it matches exactly itself."""
    return LITERAL_TILDE.sub(r"\\~", line)


def new_output_text(expected: str | None, actual: str) -> str:
    """The Output text to write: the actual output (literal tildes escaped), keeping
    still-matching varying lines."""
    act = normalise(actual)
    written = [escape_literal(a) for a in act]
    if expected is not None:
        exp = normalise(expected)
        if len(exp) == len(act):
            written = [e if VARYING.search(e) and line_matches(e, a) else w
                       for e, a, w in zip(exp, act, written)]
    return "\n".join(written)
