"""Notebooks: a chapter page as a notebook to download, and the practice notebooks.

* ``chapter_notebook`` turns a chapter's Markdown into a notebook: its Python blocks
  (snippets expanded, exactly as the tests run them) become code cells, the prose
  between them Markdown cells; Output blocks are dropped, since running the notebook
  prints them again. The first cell installs the package, so it runs anywhere.
* A practice notebook is a jupytext "percent" file, ``docs/practice/chapterNN.py``: plain
  text, reviewable diffs, no outputs. The prose is written in it; the code comes from
  ``exercises/chapterNN.py``, the same sections the chapter page includes. A cell marked
  ``# %% snippet="exercises/chapter02.py:ex1-starter"`` holds that section's code; a
  Markdown cell marked ``solution="..."`` holds the section as a worked solution, hidden
  until opened. ``python -m tools.notebooks`` (part of ``make outputs``) refills those
  cells from the source, and a test fails while the committed file is out of date.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import jupytext
import nbformat

from tools.markdown_source import CONTAINER, expand_snippets, lift_containers, read_page

ROOT = Path(__file__).resolve().parent.parent
PRACTICE = ROOT / "docs" / "practice"
FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)
CONTAINER_TITLE = re.compile(r'^(?:!!!|\?\?\?\+?|===)\s+\S*\s*(?:"(?P<title>[^"]*)")?')


def install_cell(repo_url: str) -> str:
    return f'%pip install --quiet "attention-from-scratch @ git+{repo_url}"'


def chapter_notebook(path: Path, root: Path, repo_url: str) -> nbformat.NotebookNode:
    """The chapter at ``path`` as a notebook: install cell, then prose and code in page order."""
    text = Path(path).read_text("utf8")
    page = read_page(path, root)
    lines = lift_containers(blank_front_matter(text)).split("\n")
    cells = [nbformat.v4.new_code_cell(install_cell(repo_url))]
    start = 0
    for block in page.blocks:
        cells.append(nbformat.v4.new_markdown_cell(prose(lines[start : block.line - 1])))
        cells.append(nbformat.v4.new_code_cell(block.code.rstrip("\n")))
        start = block.output_span[1] if block.output_span else block.end
    cells.append(nbformat.v4.new_markdown_cell(prose(lines[start:])))
    return notebook([cell for cell in cells if cell.source.strip()])


def blank_front_matter(text: str) -> str:
    """Blank out the YAML front matter, keeping the line count (block lines stay valid)."""
    match = FRONT_MATTER.match(text)
    return "\n" * match.group(0).count("\n") + text[match.end() :] if match else text


def prose(lines: list[str]) -> str:
    """Markdown for Jupyter: Material's container lines (``??? question "..."``) become bold titles."""
    out = []
    for line in lines:
        if CONTAINER.match(line):
            title = CONTAINER_TITLE.match(line.strip())
            line = f"**{title['title']}**" if title and title["title"] else ""
        out.append(line.replace("{{ tested_with }}", ""))
    return "\n".join(out).strip("\n")


def notebook(cells: list) -> nbformat.NotebookNode:
    """A notebook with stable cell ids, so the same page always gives the same file."""
    for number, cell in enumerate(cells):
        cell.id = f"cell-{number}"
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def solution_markdown(code: str) -> str:
    return f"<details><summary>Worked solution</summary>\n\n```python\n{code}\n```\n\n</details>"


def fill_practice(text: str, root: Path = ROOT) -> str:
    """The practice notebook ``text`` with its snippet and solution cells refilled from the source."""
    nb = jupytext.reads(text, fmt="py:percent")
    for cell in nb.cells:
        for key in ("snippet", "solution"):
            if key in cell.metadata:
                code = expand_snippets(f'--8<-- "{cell.metadata[key]}"', root).strip("\n")
                cell.source = solution_markdown(code) if key == "solution" else code
    return jupytext.writes(nb, fmt="py:percent")


def practice_notebooks() -> list[Path]:
    return sorted(PRACTICE.glob("chapter*.py"))


def main(argv: list[str]) -> int:
    """Refill every practice notebook from ``exercises/`` (``--check``: only say which are stale)."""
    stale = []
    for path in practice_notebooks():
        text = path.read_text("utf8")
        new = fill_practice(text)
        if new != text:
            stale.append(path)
            if "--check" not in argv:
                path.write_text(new, "utf8")
                print(f"updated {path.relative_to(ROOT)}")
    return 1 if stale and "--check" in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
