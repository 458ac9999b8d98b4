"""A chapter's practice notebook, generated from the page's ``## Practice`` section.

The exercise text is written once, in the chapter page; the code lives in
``exercises/chNN.py`` (sections ``imports``, ``exK-starter``, ``exK-solution``) and is
included by snippet. The notebook holds, in page order: a title, a cell that installs the
package from the site and what the exercises import (``install_cell``), the section's
prose as Markdown cells, its top-level Python blocks as code cells (a starter cell keeps
its source in ``metadata["snippet"]``), and each collapsible (``??? tip "Hint 1"``,
``??? success "Solution"``) as a folded ``<details>`` Markdown cell of its own, opened by
a click.
Output blocks are dropped: running the cells prints them. Nothing is committed: the site
build writes the notebooks (``tools/site/practice_pages.py``) and the tests generate them.
"""

from __future__ import annotations

import re
import textwrap

import nbformat

from tools.notebooks.chapter import install_cell, notebook, prose, published
from tools.source.chapters import Chapter, practice_lines
from tools.source.markdown import CONTAINER, read_page
from tools.source.snippets import expand_snippets

SNIPPET_ONLY = re.compile(r'--8<-- "(?P<target>[^"]+)"')
TITLE = re.compile(r'^(?:!!!|\?\?\?\+?)\s+\S+\s*(?:"(?P<title>[^"]*)")?')
def practice_notebook(chapter: Chapter, site_url: str = "") -> nbformat.NotebookNode | None:
    """The practice notebook of ``chapter`` (None when its page has no Practice section)."""
    text = chapter.page.read_text("utf8")
    span = practice_lines(text)
    if span is None:
        return None
    page = read_page(chapter.page, chapter.root)
    page_path = chapter.page.relative_to(chapter.root / "docs").as_posix()
    page_url = site_url + page_path.removesuffix(".md") + "/"
    lines = text.split("\n")
    blocks = {block.line - 1: block for block in page.blocks}
    title = page_title(text, chapter.number)
    cells = [
        nbformat.v4.new_markdown_cell(
            f"# Practice: {title}\n\n"
            f"The exercises of [{title}]({published(page_path.split('/')[-1], page_url)}). Each "
            "starter is a function with a gap or a bug: complete it, run its cell, then run "
            "the self-check under it. It prints **✓ Correct** with what your answer shows, or "
            "**✗ Not yet** and what is wrong. Under each check, one to three hints are folded "
            "(click one to open it), from a nudge to the key idea, and then a worked "
            "solution: try first."
        ),
    ]
    pending: list[str] = []

    def flush():
        if "".join(pending).strip():
            cells.append(nbformat.v4.new_markdown_cell(prose(pending, page_url)))
        pending.clear()

    i = span[0] + 1  # the "## Practice" heading itself is replaced by the title
    while i < span[1]:
        line = lines[i]
        if i in blocks and not line.startswith(" "):
            flush()
            block = blocks[i]
            cell = nbformat.v4.new_code_cell(block.code.rstrip("\n"))
            if (only := SNIPPET_ONLY.fullmatch(block.source.strip())) is not None:
                cell.metadata["snippet"] = only["target"]
            cells.append(cell)
            i = block.output_span[1] if block.output_span else block.end
        elif CONTAINER.match(line) and not line.startswith(" "):
            flush()
            j = i + 1
            while j < span[1] and (not lines[j].strip() or lines[j].startswith("    ")):
                j += 1
            body = textwrap.dedent("\n".join(lines[i + 1 : j])).strip("\n")
            body = expand_snippets(body, chapter.root)
            summary = (TITLE.match(line) or {"title": None})["title"] or "Solution"
            cells.append(nbformat.v4.new_markdown_cell(
                f"<details><summary>{summary}</summary>\n\n{body}\n\n</details>"))
            i = j
        else:
            pending.append(line)
            i += 1
    flush()
    code = "\n".join(cell.source for cell in cells if cell.cell_type == "code")
    cells.insert(1, nbformat.v4.new_code_cell(install_cell(site_url, code)))
    return notebook(cells)


def page_title(text: str, fallback: str) -> str:
    from mkdocs.utils.meta import get_data

    from tools.source.markdown import first_h1

    body, meta = get_data(text)
    heading = first_h1(body)
    return str(meta.get("title") or (heading[0].strip() if heading else fallback))
