"""MkDocs hook: live figures, which the reader moves and the package redraws in the browser.

A page asks for one with ``<div class="live-figure" data-figure="NAME"></div>`` under the
static figure NAME (in any spelling HTML allows: either quotes or none, any attribute
order, spacing or case); the figure's controls and title come from the package
(``attention.interactive``), so the page names it and nothing else. Here that element
becomes the controls as native form inputs, each with its label, an empty drawing, a
status line and a text alternative; ``docs/javascripts/live-figures.js`` draws into it
with the Python that Run loads (nothing is downloaded before the reader starts it).
The element is ``hidden`` until that script shows it: without JavaScript a reader sees
the static figure only. A name the package does not know, and a ``live-figure`` div
that is not an empty element with a ``data-figure``, fail the build (rather than leave
an empty div on the page).
"""

from __future__ import annotations

import html
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # mkdocs loads hooks by path
    sys.path.insert(0, str(ROOT))

from mkdocs.exceptions import PluginError  # noqa: E402

from attention.interactive import FIGURES  # noqa: E402
from attention.interactive.widgets import Choice, Slider, TextBox, Toggle  # noqa: E402

# A <div> start tag, its attribute values quoted either way or not at all; then what
# must follow a placeholder's: its end tag, nothing but spaces between.
DIV_START = re.compile(r"""<div(?=[\s/>])(?:[^>"']|"[^"]*"|'[^']*')*>""", re.I)
EMPTY_END = re.compile(r"\s*</div\s*>", re.I)


class _StartTag(HTMLParser):
    """The attributes of one start tag as a browser reads them: names lower-cased,
    values unescaped, the first of a repeated name kept."""

    def handle_starttag(self, tag, attrs):
        self.attrs = {}
        for name, value in attrs:
            self.attrs.setdefault(name, value or "")


def attributes(start_tag: str) -> dict:
    parser = _StartTag()
    parser.feed(start_tag)
    parser.close()
    return parser.attrs


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


def expand_placeholders(content: str, where: str) -> str:
    """``content`` (a page's HTML) with every ``live-figure`` div replaced by its
    figure; ``where`` names the page in the error a malformed placeholder raises."""
    parts, at = [], 0
    for start in DIV_START.finditer(content):
        if start.start() < at:
            continue
        attrs = attributes(start[0])
        if "live-figure" not in attrs.get("class", "").split():
            continue
        end = EMPTY_END.match(content, start.end())
        if end is None or not attrs.get("data-figure"):
            raise ValueError(
                f"{where}: a live figure's placeholder must be an empty div with the "
                f"figure's name, <div class=\"live-figure\" data-figure=\"NAME\"></div>;"
                f" got {content[start.start():start.end() + 40]!r}")
        parts += [content[at:start.start()], figure_html(attrs["data-figure"])]
        at = end.end()
    return "".join(parts) + content[at:]


def on_page_content(content, page, config, files):
    try:
        return expand_placeholders(content, page.file.src_uri)
    except ValueError as error:  # a malformed placeholder, or an unknown figure
        raise PluginError(str(error)) from None
