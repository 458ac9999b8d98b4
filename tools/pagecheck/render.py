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

from tools.source.markdown import CHECKER_OPTIONS, read_page


class _HtmlScan(HTMLParser):
    """Counts ``<pre>`` blocks, collects class attributes and the text outside code blocks."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.pre_blocks = 0
        self.classes: list[str] = []
        self.text_outside_code: list[str] = []
        self._in_code = 0

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name == "class" and value:
                self.classes.append(value)
        if tag == "pre":
            self.pre_blocks += 1
        if tag in ("pre", "script", "style"):
            self._in_code += 1

    def handle_endtag(self, tag):
        if tag in ("pre", "script", "style") and self._in_code:
            self._in_code -= 1

    def handle_data(self, data):
        if not self._in_code:
            self.text_outside_code.append(data)


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
    if "```" in text or "~~~" in text:
        problems.append("a literal fence marker (``` or ~~~) appears in the page's text")
    return problems
