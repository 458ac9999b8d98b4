"""Checks on the built HTML that ``mkdocs build --strict`` does not make.

A fence with a stray word in its info string (```` ```python continuation ````) is not a
fence to pymdownx.superfences: it renders as a paragraph of inline code and swallows the
page up to the next fence, and the strict build still passes. So we compare, page by
page, the fences in the Markdown with the code blocks in the HTML, and look for checker
option words and literal fence markers that leaked into the HTML.
"""

import re
from html.parser import HTMLParser
from pathlib import Path

from tools.pagecheck.outputs import normalise
from tools.source.markdown import CHECKER_OPTIONS, CourseMarkdown, fence_language, read_page


class _HtmlScan(HTMLParser):
    """Collects every ``<pre>`` block (its language and text), class attributes, and the
    text outside code blocks."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.pre_blocks = 0
        self.blocks: list[tuple[str, list[str]]] = []  # (language, text pieces) per <pre>
        self.classes: list[str] = []
        self.text_outside_code: list[str] = []
        self._in_code = 0
        self._language = ""  # from the latest <div class="language-xxx highlight">
        self._in_pre = False

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name == "class" and value:
                self.classes.append(value)
                if tag == "div" and "highlight" in value.split():
                    langs = [c[len("language-"):] for c in value.split() if c.startswith("language-")]
                    self._language = langs[0] if langs else ""
        if tag == "pre":
            self.pre_blocks += 1
            self.blocks.append((self._language, []))
            self._language = ""
            self._in_pre = True
        if tag in ("pre", "script", "style"):
            self._in_code += 1

    def handle_endtag(self, tag):
        if tag == "pre":
            self._in_pre = False
        if tag in ("pre", "script", "style") and self._in_code:
            self._in_code -= 1

    def handle_data(self, data):
        if self._in_pre:
            self.blocks[-1][1].append(data)
        if not self._in_code:
            self.text_outside_code.append(data)


def block_mismatches(markdown_path: Path, html_blocks, root: Path) -> list[str]:
    """Compare, block by block and in order, the page's fences (language, content after
    snippets) with the HTML's code blocks: a fence that rendered as something else, or
    whose neighbour swallowed it, shows up here even when the counts agree."""
    tokens = [t for t in CourseMarkdown(root).parse(Path(markdown_path).read_text("utf8"))
              if t.type in ("fence", "code_block") and t.map]
    problems = []
    for token, (language, pieces) in zip(tokens, html_blocks):
        lang = fence_language(token.info)[0].lower() if token.type == "fence" else ""
        shown = normalise("".join(pieces))
        if lang and language and lang != language:
            problems.append(f"line {token.map[0] + 1}: a ```{lang} fence rendered as {language}")
        elif normalise(token.content) != shown:
            problems.append(f"line {token.map[0] + 1}: the ```{lang} fence rendered with other "
                            f"content (first line shown: {shown[0] if shown else ''!r})")
    return problems


def render_problems(markdown_path: Path, html: str, root: Path, lists_excerpts: bool = False) -> list[str]:
    """What is wrong with how ``markdown_path`` rendered to ``html`` (empty if nothing).

    ``lists_excerpts``: the page also shows other pages' excerpts (a blog index), so it
    may hold more code blocks than its own Markdown has fences.
    """
    page = read_page(markdown_path, root)
    scan = _HtmlScan()
    scan.feed(html)
    problems = []
    fewer = scan.pre_blocks < page.fences
    if fewer or (scan.pre_blocks > page.fences and not lists_excerpts):
        problems.append(
            f"{page.fences} fences in the Markdown but {scan.pre_blocks} code blocks in the HTML: "
            "a fence did not render as a code block (a stray word in its info string?)"
        )
    for value in scan.classes:
        leaked = set(value.split()) & set(CHECKER_OPTIONS)
        if leaked:
            problems.append(f"checker option {sorted(leaked)} leaked into the HTML as class={value!r}")
    text = "".join(scan.text_outside_code)
    for word in CHECKER_OPTIONS:
        if re.search(rf"\b(python|py)\s+{word}\b", text):
            problems.append(f"the fence option {word!r} appears as text on the page")
    if not lists_excerpts:
        problems += block_mismatches(markdown_path, scan.blocks, root)
    if "```" in text or "~~~" in text:
        problems.append("a literal fence marker (``` or ~~~) appears in the page's text")
    return problems
