"""A chapter page as a notebook to download.

Its Python blocks (snippets expanded, exactly as the tests run them) become code cells,
the prose between them Markdown cells; Output blocks are dropped, since running the
notebook prints them again, and figures simply show (the page draws with plain
Matplotlib). The first cell installs the package (the wheel the site serves) and every library the
code imports, pinned to the versions the page was tested with, so it runs anywhere.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import sys
from pathlib import Path
from urllib.parse import urljoin

import nbformat
from mkdocs.utils.meta import get_data

from tools.site.run_in_page import (ASSETS, CHECKPOINT_MODULES, checkpoint_wheel_bytes,
                                    imports_module, package_wheel_bytes)
from tools.source.markdown import CONTAINER, first_h1, lift_containers, read_page

FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)
CONTAINER_TITLE = re.compile(r'^(?:!!!|\?\?\?\+?|===)\s+\S*\s*(?:"(?P<title>[^"]*)")?')


LINK = re.compile(r"\]\((?![a-z]+:|#)(?P<path>[^)#\s]+)(?P<anchor>#[^)\s]*)?\)")
PACKAGE = "attention"


def third_party_imports(code: str) -> list[str]:
    """The top-level modules ``code`` imports that are neither the standard library nor
    the course's package, wherever the import is (in a function, in ``try``), sorted."""
    found = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return sorted(found - set(sys.stdlib_module_names) - {PACKAGE})


@functools.cache  # reading every installed distribution's file list takes about a second
def pinned(module: str) -> str:
    """``dist==version`` of the installed distribution that provides ``module``: the
    version the pages were tested with (a local tag such as ``+cpu`` dropped)."""
    dists = importlib.metadata.packages_distributions().get(module)
    if not dists:
        raise ValueError(f"the notebook imports {module!r}, which no installed "
                         "distribution provides: install it, or fix the import")
    version = importlib.metadata.version(dists[0]).split("+")[0]
    return f"{dists[0]}=={version}"


def package_wheel_url(site_url: str, code: str = "") -> str:
    """Where the site serves the course's wheel (the one the browser runs, too), and
    chapter 7's checkpoint's beside it when ``code`` reads it."""
    wheels = [package_wheel_bytes()[0]]
    if any(imports_module(code, m) for m in CHECKPOINT_MODULES):
        wheels.append(checkpoint_wheel_bytes()[0])
    return " ".join(f"{site_url}{ASSETS}/{name}" for name in wheels)


def install_cell(site_url: str, code: str) -> str:
    """``%pip install`` of the course's wheel from the site the notebook came from (with
    the checkpoint's where the code reads it), and of every other library the code
    imports, pinned to the tested versions (NumPy always: the package needs it)."""
    libraries = sorted({pinned(m) for m in third_party_imports(code)} | {pinned("numpy")})
    return (f"%pip install --quiet --force-reinstall --no-deps {package_wheel_url(site_url, code)}\n"
            f"%pip install --quiet {' '.join(libraries)}")


def site_of(path: Path, root: Path, page_url: str) -> str:
    """The site's address, from a page's published address (directory URLs)."""
    rel = Path(path).resolve().relative_to((Path(root) / "docs").resolve()).with_suffix("")
    suffix = "" if rel.as_posix() == "index" else rel.as_posix().removesuffix("/index") + "/"
    return page_url.removesuffix(suffix)


def chapter_notebook(path: Path, root: Path, page_url: str) -> nbformat.NotebookNode:
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
    cells.insert(0, nbformat.v4.new_code_cell(install_cell(site_of(path, root, page_url), code)))
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
    if path.endswith(".md"):  # directory URLs: chapters/ch05-x.md -> chapters/ch05-x/
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
