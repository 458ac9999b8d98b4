"""MkDocs hook: live figures, which the reader moves and the package redraws in the browser.

A page asks for one with ``<div class="live-figure" data-figure="NAME"></div>`` under the
static figure NAME; the figure's controls and title come from the package
(``attention.interactive``), so the page names it and nothing else. Here that element
becomes the controls as native form inputs, each with its label, an empty drawing, a
status line and a text alternative; ``docs/javascripts/live-figures.js`` draws into it
with the Python that Run loads (nothing is downloaded before the reader starts it).
The element is ``hidden`` until that script shows it: without JavaScript a reader sees
the static figure only. A name the package does not know fails the build.
"""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # mkdocs loads hooks by path
    sys.path.insert(0, str(ROOT))

from attention.interactive import FIGURES  # noqa: E402
from attention.interactive.widgets import Choice, Slider, TextBox, Toggle  # noqa: E402

PLACEHOLDER = re.compile(r'<div class="live-figure" data-figure="([^"]*)"></div>')


def _number(x: float) -> str:
    return f"{x:g}"


def control_html(figure: str, control) -> str:
    """One control as a labelled native input (its id unique on the page)."""
    ident = f"live-{figure}-{control.name}"
    label = html.escape(control.label)
    name = html.escape(control.name)
    if isinstance(control, Slider):
        value = _number(control.value)
        return (f'<label for="{ident}">{label}</label>'
                f'<input type="range" id="{ident}" name="{name}" min="{_number(control.low)}"'
                f' max="{_number(control.high)}" step="{_number(control.step)}"'
                f' value="{value}"><output for="{ident}">{value}</output>')
    if isinstance(control, Choice):
        options = "".join(
            f'<option value="{html.escape(str(v))}"'
            f'{" selected" if str(v) == str(control.value) else ""}>{html.escape(text)}</option>'
            for v, text in control.options)
        return (f'<label for="{ident}">{label}</label>'
                f'<select id="{ident}" name="{name}">{options}</select>')
    if isinstance(control, Toggle):
        checked = " checked" if control.value else ""
        return (f'<input type="checkbox" id="{ident}" name="{name}"{checked}>'
                f'<label for="{ident}">{label}</label>')
    if isinstance(control, TextBox):
        return (f'<label for="{ident}">{label}</label>'
                f'<input type="text" id="{ident}" name="{name}" spellcheck="false"'
                f' maxlength="{control.max_length}" value="{html.escape(control.value)}">')
    raise TypeError(f"live figure {figure}: unknown control {control!r}")


def figure_html(name: str) -> str:
    """The live figure ``name``: controls, drawing, status and text alternative."""
    if name not in FIGURES:
        raise ValueError(f"the page asks for live figure {name!r}, which "
                         f"attention.interactive does not have: {sorted(FIGURES)}")
    spec = FIGURES[name]
    title = html.escape(spec.title)
    controls = "".join(f'<div class="live-figure__control">{control_html(name, c)}</div>'
                       for c in spec.controls)
    return (f'<div class="live-figure" data-figure="{html.escape(name)}" role="group"'
            f' aria-labelledby="live-{name}-title" hidden>'
            f'<p class="live-figure__title" id="live-{name}-title">Move it yourself: {title}</p>'
            f'<form class="live-figure__controls">{controls}</form>'
            '<p class="live-figure__start-line"><button type="button" class="md-button'
            ' live-figure__start">Draw it in your browser</button> '
            '<span class="live-figure__note">The package computes it with the Python'
            ' that Run loads; moving a control starts it too.</span></p>'
            '<p class="live-figure__status" role="status"></p>'
            '<div class="live-figure__drawing"></div>'
            '<p class="live-figure__summary" aria-live="polite"></p></div>')


def on_page_content(content, page, config, files):
    return PLACEHOLDER.sub(lambda match: figure_html(match.group(1)), content)
