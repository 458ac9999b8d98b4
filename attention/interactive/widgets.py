"""Figures the reader moves: controls, a registry, and what a figure returns.

A live figure is a function of its controls' values that returns arrays to draw. It is
registered with ``live_figure(name, title, controls)``; the site (``tools/site/
live_figures.py``) writes the controls as native, labelled form inputs beside the
static figure of the same name, and the reader's browser calls ``compute_json`` in
the Python that runs the page's code (``docs/javascripts/live-figures.js``) each time a
control moves. The tests call the same ``compute`` in CPython and compare.

What a figure function returns is ``figure(summary, *panels)``: a text alternative,
written for a screen reader, and panels the page draws as SVG, each a plain dict:

- ``bars(title, labels, values, ...)``: one bar per label, optionally with ghost bars
  (``before``) and a word per bar (``marks``, such as "kept" or "dropped");
- ``heatmap(title, rows, cols, values, blocked)``: a matrix of weights, with the
  blocked cells marked;
- ``facts(title, rows)``: named numbers, drawn as text.
"""

import json
import math
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Slider:
    """A number from ``low`` to ``high`` in steps of ``step`` (an ``<input type=range>``)."""

    name: str
    label: str
    low: float
    high: float
    step: float
    value: float
    integer: bool = False  # the value is an int (a head, a count)

    def parse(self, raw):
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise ValueError(f"{self.name} must be a number, got {raw!r}") from None
        if not self.low <= value <= self.high:
            raise ValueError(f"{self.name} must be in [{self.low}, {self.high}], "
                             f"got {value}")
        if self.integer:
            if value != int(value):
                raise ValueError(f"{self.name} must be a whole number, got {value}")
            return int(value)
        return value


@dataclass(frozen=True)
class Choice:
    """One of a few options (a ``<select>``): (value, what the reader reads) pairs."""

    name: str
    label: str
    options: tuple
    value: str

    def parse(self, raw):
        values = [str(value) for value, _ in self.options]
        if str(raw) not in values:
            raise ValueError(f"{self.name} must be one of {values}, got {raw!r}")
        return str(raw)


@dataclass(frozen=True)
class Toggle:
    """On or off (an ``<input type=checkbox>``)."""

    name: str
    label: str
    value: bool

    def parse(self, raw):
        if raw in (True, "true", "on"):
            return True
        if raw in (False, "false", "off"):
            return False
        raise ValueError(f"{self.name} must be true or false, got {raw!r}")


@dataclass(frozen=True)
class TextBox:
    """A short text the reader types (an ``<input type=text>``)."""

    name: str
    label: str
    value: str
    max_length: int

    def parse(self, raw):
        if not isinstance(raw, str):
            raise ValueError(f"{self.name} must be text, got {raw!r}")
        if not raw.strip() or len(raw) > self.max_length:
            raise ValueError(f"{self.name} must hold 1 to {self.max_length} "
                             f"characters, got {len(raw)}")
        half = re.search("[\ud800-\udfff]", raw)  # JavaScript strings allow it
        if half:
            raise ValueError(f"{self.name} holds half of a character at "
                             f"position {half.start()} (a lone surrogate, as "
                             f"from half of a pasted emoji): delete it or paste "
                             f"the whole character")
        return raw


@dataclass(frozen=True)
class LiveFigure:
    """A registered figure: its name (the static figure's), title, controls, function."""

    name: str
    title: str
    controls: tuple
    function: object

    def defaults(self):
        """The controls' first values, as the page shows them before the reader acts."""
        return {c.name: c.value for c in self.controls}


FIGURES: dict = {}  # name -> LiveFigure, filled by @live_figure


def live_figure(name, title, controls):
    """Register the decorated function as the live figure ``name``."""
    def register(function):
        if name in FIGURES:
            raise ValueError(f"live figure {name!r} is registered twice")
        FIGURES[name] = LiveFigure(name, title, tuple(controls), function)
        return function
    return register


def _numbers(values):
    """Plain floats for JSON (NaN and infinities are refused there)."""
    return [float(v) for v in values]


def bars(title, labels, values, *, before=None, marks=None, percent=True):
    """A bar chart: ``values[i]`` above ``labels[i]``; ``before``: ghost bars behind
    them (the values before a change); ``marks``: a word under each bar."""
    panel = {"kind": "bars", "title": title, "labels": [str(x) for x in labels],
             "values": _numbers(values), "percent": percent}
    if before is not None:
        panel["before"] = _numbers(before)
    if marks is not None:
        panel["marks"] = [str(m) for m in marks]
    for key in ("before", "marks"):
        if key in panel and len(panel[key]) != len(panel["values"]):
            raise ValueError(f"bars: {key} has {len(panel[key])} entries for "
                             f"{len(panel['values'])} values")
    return panel


def heatmap(title, rows, cols, values, blocked=None):
    """A matrix of weights in [0, 1]: ``values[i][j]`` at row ``rows[i]``, column
    ``cols[j]``; ``blocked[i][j]`` marks a cell the mask removed."""
    matrix = [_numbers(row) for row in values]
    if len(matrix) != len(rows) or any(len(r) != len(cols) for r in matrix):
        raise ValueError(f"heatmap: values must be ({len(rows)}, {len(cols)})")
    panel = {"kind": "heatmap", "title": title, "rows": [str(r) for r in rows],
             "cols": [str(c) for c in cols], "values": matrix}
    if blocked is not None:
        panel["blocked"] = [[bool(b) for b in row] for row in blocked]
    return panel


def facts(title, rows):
    """Named numbers: (name, value, how to write it) per row, e.g. ("max", 5.0, "5")."""
    return {"kind": "facts", "title": title,
            "rows": [{"name": str(n), "value": float(v), "text": str(t)}
                     for n, v, t in rows]}


def figure(summary, *panels):
    """What a live figure returns: its text alternative and its panels."""
    return {"summary": str(summary), "panels": list(panels)}


def compute(name, values=None):
    """The figure ``name`` for the controls' ``values`` (a dict by control name; a
    missing one takes its default). Every value is checked against its control."""
    if name not in FIGURES:
        raise ValueError(f"no live figure named {name!r}; known: {sorted(FIGURES)}")
    spec = FIGURES[name]
    if values is not None and not isinstance(values, dict):
        raise ValueError(f"{name}: values must be a dict of control name -> "
                         f"value, got {values!r}")
    values = dict(values or {})
    unknown = set(values) - {c.name for c in spec.controls}
    if unknown:
        raise ValueError(f"{name}: no control named {sorted(unknown)}")
    args = {c.name: c.parse(values.get(c.name, c.value)) for c in spec.controls}
    return spec.function(**args)


def compute_json(name, values_json):
    """``compute`` with JSON in and out: what the browser calls. Floats keep every
    digit (``repr``), so the page can be compared with CPython exactly."""
    try:
        values = json.loads(values_json)
    except (TypeError, ValueError) as error:  # not text, or not JSON
        raise ValueError(f"{name}: values_json must be a JSON object of "
                         f"control values, got {values_json!r} ({error})"
                         ) from None
    result = compute(name, values)
    return json.dumps(result, allow_nan=False)


def percent(p):
    """0.4913 -> '49%' (the text alternative's way of writing a weight)."""
    return f"{round(100 * p)}%" if math.isfinite(p) else str(p)
