"""How the course's Markdown is read: fences, their options, and the snippets inside them.

The page checker (``tools.pagecheck``), the site hooks (``tools.site``), the notebooks
(``tools.notebooks``) and the tests all read pages through this module, so they agree
with each other and with what MkDocs renders:

* Fences nested in admonitions (``??? question``), collapsibles and content tabs are
  indented by four spaces per level. CommonMark would read them as indented code, so we
  lift each container's body to the left margin first (line numbers do not change).
* ``--8<-- "path/file.py:section"`` lines inside a fence are expanded by
  pymdownx.snippets itself, configured exactly as in ``mkdocs.yml``, so a test runs the
  text a reader sees.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from markdown_it import MarkdownIt

from tools.source.snippets import expand_snippets

# `!!! note`, `??? question "..."`, `???+ tip`, `=== "NumPy"`: Material's block containers,
# exactly as Python-Markdown's admonition, pymdownx.details and pymdownx.tabbed read their
# first line (so a setext `===` underline, or `=== Title` without quotes, is no tab).
_CLASSES = r'[\w-]+(?: +[\w-]+)*'
CONTAINER = re.compile(
    r'^(?P<indent> *)(?:'
    rf'!!! ?{_CLASSES}(?: +"[^"\n]*")?'  # admonition: a type, an optional title
    rf'|\?{{3}}\+? ?(?:(?:{_CLASSES})? +"[^"\n]*"|{_CLASSES})'  # details: a type and/or title
    r'|={3}(?:\+|\+!|!\+|!)? +"[^"\n]*"'  # tabbed: a quoted title
    r') *$'
)
FENCE = re.compile(r"^ *(?P<marker>`{3,}|~{3,})")
# The Output block that holds a Python block's printed output: written exactly so. Any other
# fence titled Output (``{.text title="Output"}``, ``txt title='output'``, extra options) is
# refused (``check_fences``): it would look like checked output and never be compared.
OUTPUT_INFO = re.compile(r'^text[ \t]+title="Output"[ \t]*$')
# The languages pytest-markdown-docs collects (exactly these, lower case): they run.
PYTHON_LANGS = ("py", "python", "python3")
# Other spellings the site would highlight as Python: refused, since they would not run.
# A ``pycon`` transcript (``>>>`` prompts) is shown and never executed.
PYTHON_LOOKALIKES = {"python", "py", "py3", "python3", "python2", "py2", "ipython",
                     "ipython2", "ipython3", "sage", "pyi", "bazel", "starlark"}
# Option words that only the page checker understands; they must never reach the HTML.
CHECKER_OPTIONS = ("notest", "continuation")


class PageFormatError(ValueError):
    """A page whose fences the checker refuses: the message names the line and the fix."""


def lift_containers(text: str) -> str:
    """Move the bodies of admonitions and tabs to the left margin, keeping every line number."""
    out: list[str] = []
    stack: list[int] = []  # body indentation of each open container
    fence = ""  # the marker of the fence we are inside, if any
    for line in normalise_source(text).split("\n"):
        if line.strip() and not fence:
            width = len(line) - len(line.lstrip(" "))
            while stack and width < stack[-1]:
                stack.pop()
        shift = stack[-1] if stack else 0
        out.append(line[shift:] if line[:shift].strip() == "" else line.lstrip(" "))
        marker = FENCE.match(line)
        if marker and (not fence or marker["marker"].startswith(fence)):
            fence = "" if fence else marker["marker"]
        elif not fence and (match := CONTAINER.match(line)) and len(match["indent"]) < shift + 4:
            stack.append(len(match["indent"]) + 4)  # (indented 4 more: literal code)
    return "\n".join(out)


def normalise_source(text: str) -> str:
    """As Python-Markdown reads a page: LF line ends, tabs expanded to 4 columns (so a fence
    indented by a tab inside an admonition is in the admonition, as on the site)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").expandtabs(4)


def check_fences(tokens, lines: list[str]) -> None:
    """Refuse what would make a page pass while wrong: an unclosed fence, a fence the site
    highlights as Python that would not run, an Output block that does not directly follow
    the Python block whose output it shows."""
    previous = None
    for token in tokens:
        if token.type != "fence" or not token.map:
            if token.map or token.nesting != -1:  # closing tags carry no map; skip them
                previous = token
            continue
        line = token.map[0] + 1
        closing = lines[token.map[1] - 1].strip() if token.map[1] - 1 < len(lines) else ""
        marker = token.markup
        if token.map[1] - token.map[0] < 2 or not (
            closing.startswith(marker) and set(closing) == {marker[0]}
        ):
            raise PageFormatError(f"line {line}: the fence opened here ({marker}) is never "
                                  f"closed: add a closing {marker} line")
        lang, options = fence_language(token.info)
        if titled_output(token.info) and not OUTPUT_INFO.match(token.info.strip()):
            raise PageFormatError(
                f"line {line}: ```{token.info.strip()} is titled Output but is not an Output "
                'block, so it would never be compared: write exactly ```text title="Output"'
            )
        if lang not in PYTHON_LANGS and lang.lower() in PYTHON_LOOKALIKES:
            raise PageFormatError(f"line {line}: ```{lang} is highlighted as Python but is not "
                                  "run by the checker: write ```python")
        if OUTPUT_INFO.match(token.info.strip()):
            ok = (previous is not None and previous.type == "fence"
                  and fence_language(previous.info)[0] in PYTHON_LANGS
                  and "notest" not in fence_language(previous.info)[1])
            if not ok:
                raise PageFormatError(
                    f"line {line}: an Output block must directly follow the Python block "
                    "whose output it shows (no prose and no other block between)"
                )
        previous = token


class CourseMarkdown(MarkdownIt):
    """CommonMark that sees fences inside containers and expands snippets in them."""

    def __init__(self, root: Path):
        super().__init__("commonmark")
        self.root = Path(root)

    def parse(self, src: str, env=None):
        lifted = lift_containers(src)
        tokens = super().parse(lifted, env)
        check_fences(tokens, lifted.split("\n"))
        for token in tokens:
            if token.type == "fence":
                try:
                    token.meta = {**(token.meta or {}), "source": token.content}
                    token.content = expand_snippets(token.content, self.root)
                except Exception as error:  # name the fence, then re-raise
                    line = token.map[0] + 1 if token.map else "?"
                    raise type(error)(f"in the fence opened on line {line}: {error}") from error
        return tokens


def code_lines(markdown: str) -> set[int]:
    """0-based lines inside code (fences and indented code, in containers too), read by the
    Markdown parser as the site reads them."""
    tokens = MarkdownIt("commonmark").parse(lift_containers(markdown))
    return {n for t in tokens if t.type in ("fence", "code_block") and t.map
            for n in range(*t.map)}


def first_h1(markdown: str) -> tuple[str, int] | None:
    """The page's first level-1 heading, as (its text, the 0-based line just after it).

    Read by the Markdown parser, so a ``# comment`` line inside a code block is no heading.
    ``markdown`` is the page without its front matter (or with it blanked out).
    """
    tokens = MarkdownIt("commonmark").parse(lift_containers(markdown))
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.tag == "h1" and token.map:
            return tokens[i + 1].content, token.map[1]
    return None


ATTRIBUTE = re.compile(r'(?P<key>[\w-]+)="(?P<value>[^"]*)"')
# Any ``key=value`` a fence's info string may hold, as superfences or attr_list read it.
ANY_ATTRIBUTE = re.compile(
    r"""(?P<key>[A-Za-z_][\w-]*)[ \t]*=[ \t]*(?:"(?P<d>[^"]*)"|'(?P<s>[^']*)'|(?P<u>[^\s"'}]+))""")


def titled_output(info: str) -> bool:
    """Whether a fence's info string gives it the title Output (any quoting or case)."""
    return any(m["key"].lower() == "title"
               and next(v for v in (m["d"], m["s"], m["u"]) if v is not None).strip().lower()
               == "output" for m in ANY_ATTRIBUTE.finditer(info))


def fence_language(info: str) -> tuple[str, set[str]]:
    """``python``, ``{.python notest}`` -> (language, option words)."""
    info = ATTRIBUTE.sub("", info.strip())
    if info.startswith("{"):
        words = info.strip("{}").split()
        lang = next((w[1:] for w in words if w.startswith(".")), "")
        return lang, {w for w in words if not w.startswith(".")}
    words = info.split()
    lang = words[0] if words else ""
    return lang, set(words[1:])


def fence_attributes(info: str) -> dict[str, str]:
    """``{.python title="a" figure="ch05-x"}`` -> {"title": "a", "figure": "ch05-x"}."""
    return {m["key"]: m["value"] for m in ATTRIBUTE.finditer(info)}


@dataclass
class Block:
    """One executable Python fence and the Output fence that follows it, if any."""

    line: int  # 1-based line of the opening ``` of the Python fence
    code: str
    end: int  # 0-based index of the line after the Python fence's closing ```
    output: str | None = None
    output_span: tuple[int, int] | None = None  # 0-based [opener, after closer) of Output
    attributes: dict[str, str] = field(default_factory=dict)  # title="...", figure="..."
    source: str = ""  # the fence's text before snippets were expanded


@dataclass
class Page:
    path: Path
    blocks: list[Block]
    not_run: list[int]  # lines of Python fences marked notest
    fences: int  # every fence on the page, of any language


def read_page(path: Path, root: Path) -> Page:
    """All fences of a Markdown page, paired with their Output blocks."""
    tokens = [t for t in CourseMarkdown(root).parse(Path(path).read_text("utf8")) if t.map]
    fences = [t for t in tokens if t.type in ("fence", "code_block")]
    blocks: list[Block] = []
    not_run: list[int] = []
    for i, token in enumerate(tokens):
        if token.type != "fence":
            continue
        lang, options = fence_language(token.info)
        if lang not in PYTHON_LANGS:
            continue
        if "notest" in options:
            not_run.append(token.map[0] + 1)
            continue
        block = Block(line=token.map[0] + 1, code=token.content, end=token.map[1],
                      attributes=fence_attributes(token.info), source=token.meta.get("source", ""))
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if nxt is not None and nxt.type == "fence" and OUTPUT_INFO.match(nxt.info.strip()):
            block.output = nxt.content
            block.output_span = (nxt.map[0], nxt.map[1])
        blocks.append(block)
    return Page(Path(path), blocks, not_run, len(fences))
