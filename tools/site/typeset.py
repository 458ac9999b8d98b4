"""MkDocs hook: math written ``$...$`` / ``$$...$$`` (pymdownx.arithmatex, generic mode)
is typeset to MathML at build time, so formulas need no script and no network: a reader
offline sees typeset math.
"""

import html
import re
import xml.etree.ElementTree as ET

from latex2mathml.converter import convert
from mkdocs.exceptions import PluginError

INLINE_MATH = re.compile(r'<span class="arithmatex">\\\((.+?)\\\)</span>', re.S)
DISPLAY_MATH = re.compile(r'<div class="arithmatex">\\\[(.+?)\\\]</div>', re.S)
# latex2mathml writes \operatorname{softmax} as an operator, <mo>softmax</mo>, which gets
# an operator's space on both sides: "softmax (x)". A multi-letter <mi> is upright text.
# The same for symbols that are ordinary in TeX (∞, ∂, ∇, ∅): as operators, "-∞" reads "- ∞".
NOT_AN_OPERATOR = re.compile(r"<mo>([A-Za-z]{2,}|&#x0221E;|&#x02202;|&#x02207;|&#x02205;)</mo>")
# latex2mathml copies text mode as written: \text{kv\_heads} becomes <mtext>kv\_heads</mtext>,
# which a reader sees with its backslash. TeX prints these escapes as the bare character.
TEXT_ESCAPE = re.compile(r"\\([_%#])")
MTEXT = re.compile(r"(<mtext\b[^>]*>)(.*?)(</mtext>)", re.S)


# How many arguments each MathML element takes: latex2mathml writes `\frac{1}` as an
# <mfrac> with one child, which no browser can lay out, without raising.
ARITY = {"mfrac": 2, "msub": 2, "msup": 2, "msubsup": 3, "mroot": 2, "munder": 2,
         "mover": 2, "munderover": 3}


def mathml_problem(mathml: str) -> str | None:
    """Why latex2mathml's output is not valid MathML (None: it is)."""
    try:
        tree = ET.fromstring(mathml)
    except ET.ParseError as error:
        return f"it typesets into MathML that is not well-formed ({error}): a stray & or <?"
    for element in tree.iter():
        tag = element.tag.rsplit("}", 1)[-1]
        if tag in ARITY and len(element) != ARITY[tag]:
            return (f"<{tag}> needs {ARITY[tag]} arguments, got {len(element)}"
                    " (a missing {...} argument?)")
        if element.text and (command := re.search(r"\\[A-Za-z]+", element.text)):
            return f"unknown command {command[0]} (in {element.text.strip()!r})"
        if element.text and (escape := re.search(r"\\\W", element.text)):
            return f"the escape {escape[0]} would be shown as it is (in {element.text.strip()!r})"
    return None


def to_mathml(tex: str, display: bool) -> str:
    """MathML for ``tex``; a ValueError saying why when it is not valid TeX."""
    depth = 0
    for char in tex.replace("\\{", "").replace("\\}", ""):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth < 0:
            break
    if depth != 0:
        raise ValueError("unbalanced braces")
    try:
        mathml = convert(tex, display="block" if display else "inline")
    except Exception as error:
        raise ValueError(f"{type(error).__name__} {error}".strip()) from None
    mathml = MTEXT.sub(lambda m: m[1] + TEXT_ESCAPE.sub(r"\1", m[2]) + m[3], mathml)
    if problem := mathml_problem(mathml):
        raise ValueError(problem)
    return mathml


def typeset(match, display, where="a page"):
    tex = html.unescape(match.group(1)).strip()
    try:
        mathml = to_mathml(tex, display)
    except ValueError as error:
        raise PluginError(f"{where}: the formula {tex!r} cannot be typeset: {error}") from None
    mathml = NOT_AN_OPERATOR.sub(r"<mi>\1</mi>", mathml)
    mathml = mathml.replace("<math ", f'<math aria-label="{html.escape(tex)}" ', 1)
    if display:
        return f'<div class="arithmatex">{mathml}</div>'
    return f'<span class="arithmatex">{mathml}</span>'


def on_page_content(content, page, config, files):
    where = page.file.src_uri if page is not None else "a page"
    content = DISPLAY_MATH.sub(lambda m: typeset(m, display=True, where=where), content)
    return INLINE_MATH.sub(lambda m: typeset(m, display=False, where=where), content)
