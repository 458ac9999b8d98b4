"""Comparing what a block printed with the Output block the page shows.

Trailing whitespace and blank lines at either end are ignored; everything else must be
equal, except varying numbers. ``~3.1`` in an Output block stands for one number that
truly varies between runs (a timing, the memory of other processes): it matches one
number within a band around it, which may take more or less room to its left (the spaces
before a marker are a column's padding: at least one stays one), and nothing else. The
text around it must match exactly, as on a line without a marker, and the number is
whole: ``~1 ~2`` never matches ``12``. ``\\~`` is a literal tilde (output that really
shows ``~3``).

The band. Each number stands for the range its digits round from (``3.1``: 3.05 to 3.15;
``2e-16``: 1.5e-16 to 2.5e-16). The printed number matches ``~shown`` when its range
meets the shown range widened by a factor: its lower end divided by it and its upper end
multiplied by it, away from zero, so a band never crosses zero unless the shown number
rounds to zero. The factor is 2 unless the Python fence says otherwise, for all its
Output's markers: ```` ```{.python band="10"} ```` (a number above 1), or ``band="any"``
for numbers drawn at random on every run, of any size and sign (an exercise's verdict on
fresh random inputs). So ``~3.1`` takes 1.5 to 6.3 (not 1.4 or 6.4), ``~-2.0`` takes
-1.0 to -4.1 and never a positive number, ``~0.0`` takes -0.1 to 0.1. A timing that
drifts passes; a stale or wrong value fails, and ``make outputs`` writes the new one
(keeping the marker) when it falls outside.
"""

from __future__ import annotations

import math
import re

# ASCII digits only: ``\d`` would also take other scripts' digits (``~1`` matching "١٢").
NUMBER = r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
VARYING = re.compile(r"(?<!\\)~(" + NUMBER + ")")
# A marker or an escaped tilde, in the order they appear.
TOKEN = re.compile(r"\\~|~(" + NUMBER + ")")
DEFAULT_BAND = 2.0


def band_factor(raw: str | None) -> float:
    """A fence's ``band="..."`` as a factor (None: the default; "any": infinity).
    ValueError says why not."""
    if raw is None:
        return DEFAULT_BAND
    if raw == "any":
        return math.inf
    try:
        factor = float(raw)
    except ValueError:
        factor = math.nan
    if not (math.isfinite(factor) and factor > 1):
        raise ValueError(f'band="{raw}" must be a number greater than 1, the factor by which '
                         'a ~ number may be larger or smaller than the page shows, or "any"')
    return factor


def rounding_range(text: str) -> tuple[float, float]:
    """The values a printed number rounds from: half a unit of its last digit either way."""
    mantissa, _, exponent = text.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    half = float(f"5e{int(exponent or 0) - decimals - 1}")  # "5e999": inf, no OverflowError
    value = float(text)
    return value - half, value + half


def within_band(shown: str, printed: str, band: float = DEFAULT_BAND) -> bool:
    """Whether ``printed`` may be the ``~shown`` of an Output block (the module's band)."""
    if band == math.inf:
        return True
    low, high = rounding_range(shown)
    low = low / band if low > 0 else low * band
    high = high * band if high > 0 else high / band
    p_low, p_high = rounding_range(printed)
    return p_low <= high and p_high >= low


def output_matches(expected: str, actual: str, band: float = DEFAULT_BAND) -> bool:
    """Compare normalised texts; ``~NUMBER`` in ``expected`` matches a number in its band."""
    exp, act = normalise(expected), normalise(actual)
    return len(exp) == len(act) and all(line_matches(e, a, band) for e, a in zip(exp, act))


def line_pattern(expected: str) -> str:
    """The regular expression of one expected line: literal text, ``~N`` markers (each a
    group holding the printed number), ``\\~``."""
    pattern, at = "", 0
    for match in TOKEN.finditer(expected):
        literal = expected[at : match.start()]
        if match.group(0) == "\\~":
            pattern += re.escape(literal) + "~"
        else:  # one whole number; the spaces before it are padding (a right-aligned column)
            padded = literal.rstrip(" ")
            pattern += re.escape(padded) + (" +" if padded != literal else "")
            pattern += r"(?<![0-9.])(" + NUMBER + r")(?![0-9.])"
        at = match.end()
    return pattern + re.escape(expected[at:])


def printed_numbers(expected: str, actual: str) -> list[tuple[str, str]] | None:
    """The (shown, printed) pairs of a line's markers, if the text around them matches."""
    found = re.fullmatch(line_pattern(expected), actual)
    if found is None:
        return None
    shown = [m.group(1) for m in TOKEN.finditer(expected) if m.group(1) is not None]
    return list(zip(shown, found.groups()))


def line_matches(expected: str, actual: str, band: float = DEFAULT_BAND) -> bool:
    if "~" not in expected:
        return expected == actual
    pairs = printed_numbers(expected, actual)
    return pairs is not None and all(within_band(s, p, band) for s, p in pairs)


def unmatched_lines(expected: str, actual: str, band: float = DEFAULT_BAND) -> list[str]:
    """Why two outputs differ, line by line (for when a diff of the texts shows nothing)."""
    exp, act = normalise(expected), normalise(actual)
    if len(exp) != len(act):
        return [f"the page shows {len(exp)} lines, the block printed {len(act)}"]
    return [f"line {n}: the page's {e!r} does not match the printed {a!r}" + why(e, a, band)
            for n, (e, a) in enumerate(zip(exp, act), 1) if not line_matches(e, a, band)]


def band_misses(expected: str, actual: str, band: float = DEFAULT_BAND) -> list[str]:
    """The lines whose text matches but a marked number is outside its band, and why."""
    exp, act = normalise(expected), normalise(actual)
    if len(exp) != len(act):
        return []
    return [f"line {n}: {outside_band(e, a, band)}" for n, (e, a) in enumerate(zip(exp, act), 1)
            if printed_numbers(e, a) is not None and not line_matches(e, a, band)]


def outside_band(expected: str, actual: str, band: float) -> str:
    numbers = ", ".join(f"{p} for ~{s}" for s, p in printed_numbers(expected, actual)
                        if not within_band(s, p, band))
    return (f"{numbers}: outside the band, a factor of {band:g} either way; if the new value "
            "is right, run `make outputs`")


def why(expected: str, actual: str, band: float) -> str:
    if printed_numbers(expected, actual) is not None:
        return f" ({outside_band(expected, actual, band)})"
    if VARYING.search(expected):
        return " (~ before a number is a varying-number marker; write \\~ for a tilde)"
    return ""

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


def remarked(expected: str, actual: str) -> str | None:
    """The printed line with a marker before each number the page's line marks (one space
    of a column's padding gives way to it), or None if the text around them changed."""
    found = re.fullmatch(line_pattern(expected), actual)
    if found is None:
        return None
    line, at = "", 0
    for group in range(1, len(found.groups()) + 1):
        start = found.start(group)
        before = escape_literal(actual[at:start])
        line += (before[:-1] if before.endswith("  ") else before) + "~" + found[group]
        at = found.end(group)
    line += escape_literal(actual[at:])
    return line if printed_numbers(line, actual) is not None else None


def new_output_text(expected: str | None, actual: str, band: float = DEFAULT_BAND) -> str:
    """The Output text to write: the actual output (literal tildes escaped). A line with
    markers whose numbers are all in their band is kept as it is (a second run changes
    nothing); one whose text still matches gets the printed numbers, still marked."""
    act = normalise(actual)
    written = [escape_literal(a) for a in act]
    if expected is not None:
        exp = normalise(expected)
        if len(exp) == len(act):
            written = [kept(e, a, w, band) for e, a, w in zip(exp, act, written)]
    return "\n".join(written)


def kept(expected: str, actual: str, written: str, band: float) -> str:
    if not VARYING.search(expected):
        return written
    if line_matches(expected, actual, band):
        return expected
    return remarked(expected, actual) or written
