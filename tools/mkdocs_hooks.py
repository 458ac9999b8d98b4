"""MkDocs hooks: what the site adds to the pages at build time.

* ``{{ tested_with }}`` on a page becomes the "Tested with" stamp (``tools/stamp.py``).
* Math written ``$...$`` / ``$$...$$`` (pymdownx.arithmatex, generic mode) is typeset to
  MathML at build time, so formulas need no script and no network: a reader offline
  sees typeset math.
"""

import html
import re
import sys
from pathlib import Path

from latex2mathml.converter import convert

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # mkdocs loads hooks by path

from tools.stamp import tested_with_line  # noqa: E402

STAMP_MARKER = "{{ tested_with }}"
INLINE_MATH = re.compile(r'<span class="arithmatex">\\\((.+?)\\\)</span>', re.S)
DISPLAY_MATH = re.compile(r'<div class="arithmatex">\\\[(.+?)\\\]</div>', re.S)


def stamp_admonition() -> str:
    return f'!!! info "Tested with"\n    {tested_with_line()}\n'


def on_page_markdown(markdown, page, config, files):
    if STAMP_MARKER in markdown:
        markdown = markdown.replace(STAMP_MARKER, stamp_admonition())
    return markdown


def typeset(match, display):
    tex = html.unescape(match.group(1)).strip()
    mathml = convert(tex, display="block" if display else "inline")
    mathml = mathml.replace("<math ", f'<math aria-label="{html.escape(tex)}" ', 1)
    if display:
        return f'<div class="arithmatex">{mathml}</div>'
    return f'<span class="arithmatex">{mathml}</span>'


def on_page_content(content, page, config, files):
    content = DISPLAY_MATH.sub(lambda m: typeset(m, display=True), content)
    return INLINE_MATH.sub(lambda m: typeset(m, display=False), content)
