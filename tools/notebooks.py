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
from urllib.parse import urljoin

import jupytext
import nbformat
from mkdocs.utils.meta import get_data

from tools.markdown_source import CONTAINER, expand_snippets, first_h1, lift_containers, read_page

ROOT = Path(__file__).resolve().parent.parent
PRACTICE = ROOT / "docs" / "practice"
FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)
CONTAINER_TITLE = re.compile(r'^(?:!!!|\?\?\?\+?|===)\s+\S*\s*(?:"(?P<title>[^"]*)")?')


# Packages a page may import besides the course's own (which needs only NumPy).
EXTRAS = {"torch": re.compile(r"^\s*(?:import|from) torch\b", re.M),
          "matplotlib": re.compile(r"^\s*(?:import|from) matplotlib\b", re.M)}
# Pages save figures with tools.figures.save_svg (tools/ is not in the package); a
# notebook shows them instead.
FIGURES_SHIM = """\
# The pages save their figures with tools.figures.save_svg; a notebook just shows them.
import sys, types
sys.modules["tools"] = types.ModuleType("tools")
sys.modules["tools.figures"] = types.SimpleNamespace(save_svg=lambda fig, name: None)"""
LINK = re.compile(r"\]\((?![a-z]+:|#)(?P<path>[^)#\s]+)(?P<anchor>#[^)\s]*)?\)")


def install_cell(repo_url: str, code: str) -> str:
    """Install the package (and torch or matplotlib if the code imports them)."""
    extras = "".join(f" {name}" for name, pattern in EXTRAS.items() if pattern.search(code))
    cell = f'%pip install --quiet "attention-from-scratch @ git+{repo_url}"{extras}'
    return cell + "\n\n" + FIGURES_SHIM if "tools.figures" in code else cell


def chapter_notebook(path: Path, root: Path, repo_url: str, page_url: str) -> nbformat.NotebookNode:
    """The chapter at ``path`` as a notebook: install cell, then prose and code in page order.

    ``page_url`` is the page's published address: relative links in the prose (to other
    pages, to figures) are made absolute against it, so they work from a notebook too.
    """
    text = Path(path).read_text("utf8")
    page = read_page(path, root)
    lines = lift_containers(blank_front_matter(text)).split("\n")
    cells = []
    start = 0
    for block in page.blocks:
        cells.append(nbformat.v4.new_markdown_cell(prose(lines[start : block.line - 1], page_url)))
        cells.append(nbformat.v4.new_code_cell(block.code.rstrip("\n")))
        start = block.output_span[1] if block.output_span else block.end
    cells.append(nbformat.v4.new_markdown_cell(prose(lines[start:], page_url)))
    title = get_data(text)[1].get("title")
    if title and not first_h1(blank_front_matter(text)):  # the title is in front matter only
        cells.insert(0, nbformat.v4.new_markdown_cell(f"# {title}"))
    code = "\n".join(block.code for block in page.blocks)
    cells.insert(0, nbformat.v4.new_code_cell(install_cell(repo_url, code)))
    return notebook([cell for cell in cells if cell.source.strip()])


def blank_front_matter(text: str) -> str:
    """Blank out the YAML front matter, keeping the line count (block lines stay valid)."""
    match = FRONT_MATTER.match(text)
    return "\n" * match.group(0).count("\n") + text[match.end() :] if match else text


def prose(lines: list[str], page_url: str) -> str:
    """Markdown for Jupyter: Material's container lines (``??? question "..."``) become bold
    titles, and relative links point at the published site."""
    out = []
    for line in lines:
        if CONTAINER.match(line):
            title = CONTAINER_TITLE.match(line.strip())
            line = f"**{title['title']}**" if title and title["title"] else ""
        line = LINK.sub(lambda m: f"]({published(m['path'], page_url)}{m['anchor'] or ''})", line)
        out.append(line.replace("{{ tested_with }}", ""))
    return "\n".join(out).strip("\n")


def published(path: str, page_url: str) -> str:
    """The address of ``path`` (relative to the Markdown file) on the published site."""
    if path.endswith(".md"):  # directory URLs: chapters/05-x.md -> chapters/05-x/
        path = path.removesuffix(".md")
        path = path.removesuffix("index") if path.rsplit("/", 1)[-1] == "index" else path + "/"
    return urljoin(page_url, "../" + path)  # the page's URL is one directory below its file's


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
