"""MkDocs hook: math written ``$...$`` / ``$$...$$`` (pymdownx.arithmatex, generic mode)
is typeset to MathML at build time, so formulas need no script and no network: a reader
offline sees typeset math.
"""

import html
import re

from latex2mathml.converter import convert

INLINE_MATH = re.compile(r'<span class="arithmatex">\\\((.+?)\\\)</span>', re.S)
DISPLAY_MATH = re.compile(r'<div class="arithmatex">\\\[(.+?)\\\]</div>', re.S)
# latex2mathml writes \operatorname{softmax} as an operator, <mo>softmax</mo>, which gets
# an operator's space on both sides: "softmax (x)". A multi-letter <mi> is upright text.
# The same for symbols that are ordinary in TeX (∞, ∂, ∇, ∅): as operators, "-∞" reads "- ∞".
NOT_AN_OPERATOR = re.compile(r"<mo>([A-Za-z]{2,}|&#x0221E;|&#x02202;|&#x02207;|&#x02205;)</mo>")


def typeset(match, display):
    tex = html.unescape(match.group(1)).strip()
    mathml = convert(tex, display="block" if display else "inline")
    mathml = NOT_AN_OPERATOR.sub(r"<mi>\1</mi>", mathml)
    mathml = mathml.replace("<math ", f'<math aria-label="{html.escape(tex)}" ', 1)
    if display:
        return f'<div class="arithmatex">{mathml}</div>'
    return f'<span class="arithmatex">{mathml}</span>'


def on_page_content(content, page, config, files):
    content = DISPLAY_MATH.sub(lambda m: typeset(m, display=True), content)
    return INLINE_MATH.sub(lambda m: typeset(m, display=False), content)
