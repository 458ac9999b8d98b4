"""MkDocs hook: every chapter's and practice page's notebook, shown as a page of the site.

The plugin mkdocs-jupyter (``mkdocs.yml``) renders a notebook file as a page. This hook
gives it the notebooks: for each chapter, the one the reader downloads
(``tools.notebooks.chapter``) and its practice notebook (``tools.notebooks.practice``),
each with the outputs of the page's tested run (``tools.notebooks.rendered``: no kernel
runs at build time), written to a folder of the build and added to the site's files as
``<page>/notebook.ipynb``: the page ``chapters/ch02-self-attention/notebook/``, outside
the navigation. The chapter's header and the practice page link to it beside the
download ("View the notebook"). Search finds it below the chapter that teaches the text.

The rendered HTML is made to fit the site: its scripts go (MathJax and Mermaid from a
CDN, a copy button's script: the site loads nothing from another host), and so does the
copy button with its second copy of each cell's code; its stylesheets (0.6 MB, the same
for every notebook) become one file, ``STYLESHEET``, that each notebook page links; links to the published site become relative, so the pages work wherever the site
is served; and math, left as ``$...$`` by nbconvert, is marked as the pages mark it, for
``typeset.py`` to typeset.
"""

import logging
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:  # mkdocs loads a hook by its path, not as part of the package
    sys.path.insert(0, ROOT)

import nbformat  # noqa: E402
from mkdocs.exceptions import PluginError  # noqa: E402
from mkdocs.plugins import event_priority  # noqa: E402
from mkdocs.structure.files import File  # noqa: E402

from tools.notebooks.chapter import chapter_notebook  # noqa: E402
from tools.notebooks.practice import practice_notebook  # noqa: E402
from tools.notebooks.rendered import with_outputs  # noqa: E402
from tools.source.chapters import chapters  # noqa: E402
from tools.source.markdown import read_page  # noqa: E402

NOTEBOOK = "notebook.ipynb"
SEARCH_BOOST = 0.01  # far below every written page: the chapter teaches the same text
# What the site does not take from nbconvert's HTML: scripts, and the copy button (its
# element and the hidden second copy of the code it copies from).
DROPPED = re.compile(r"<script\b.*?</script>|<!-- (?:Load mathjax|MathJax configuration|"
                     r"End of mathjax configuration|End of mermaid configuration) -->"
                     r'|<div class="zeroclipboard-container">.*?</clipboard-copy>\s*</div>'
                     r'|<div class="clipboard-copy-txt" id="[^"]*">.*?</div>', re.S)
# A cell's code and what it printed, shown as the site's code blocks are (Material's
# colours, in either theme, with its copy button), not in nbconvert's own colours.
CELL_CODE = re.compile(r'<div class="highlight-ipynb hl-python"><pre>(.*?)</pre></div>', re.S)
PRINTED = re.compile(r'(<div class="jp-RenderedText jp-OutputArea-output[^>]*>)\s*<pre>(.*?)</pre>',
                     re.S)
STYLE = re.compile(r"<style\b[^>]*>(.*?)</style>", re.S)
STYLESHEET = "assets/stylesheets/notebook.css"
# Text that is code, where a dollar is a dollar: preformatted blocks and inline code.
CODE = re.compile(r"<pre\b.*?</pre>|<code\b.*?</code>", re.S)
DISPLAY_MATH = re.compile(r"<p>\$\$(.+?)\$\$</p>", re.S)
INLINE_MATH = re.compile(r"(?<![\\$])\$(?![\s$])(.+?)(?<![\\\s])\$", re.S)

# mkdocs-jupyter logs two lines a notebook at INFO ("Converting notebook", "Cache hit"):
# 44 lines of every build's output that say nothing a reader of the log needs.
for name in ("mkdocs.plugins.mkdocs_jupyter", "mkdocs.mkdocs-jupyter"):
    logging.getLogger(name).setLevel(logging.WARNING)

_folder: Path | None = None  # the notebooks of the current build
_styles: dict[str, None] = {}  # the notebooks' stylesheets, in the order first seen
_written_in: dict[str, str] = {}  # a notebook's name -> the page its text is written in


def notebook_source(page_source: str) -> str:
    """The notebook's name among the site's files: ``chapters/ch02-x/notebook.ipynb``."""
    return f"{page_source.removesuffix('.md')}/{NOTEBOOK}"


# From a page to its notebook's page, one folder below its own (directory URLs).
LINK = f'<a href="{NOTEBOOK.removesuffix(".ipynb")}/">View the notebook</a>'


def site_notebooks(root: Path, site_url: str) -> dict[str, tuple[str, nbformat.NotebookNode]]:
    """Every notebook the site shows, by its name among the site's files, with the page
    where its text is written (under docs/)."""
    found = {}
    for chapter in chapters(root):
        source = chapter.page.relative_to(root / "docs").as_posix()
        blocks = read_page(chapter.page, root).blocks
        nb = chapter_notebook(chapter.page, root, site_url + source.removesuffix(".md") + "/")
        found[notebook_source(source)] = source, with_outputs(nb, blocks)
        if (practice := practice_notebook(chapter, site_url)) is not None:
            found[notebook_source(f"practice/{chapter.number}.md")] = (
                source, with_outputs(practice, blocks))
    return found


def is_notebook_page(page) -> bool:
    return page.file.src_uri.endswith("/" + NOTEBOOK)


def drop_folder() -> None:
    global _folder
    _styles.clear()
    _written_in.clear()
    if _folder is not None:
        shutil.rmtree(_folder, ignore_errors=True)
        _folder = None


@event_priority(100)  # before mkdocs-jupyter takes the notebooks among the files
def on_files(files, config):
    global _folder
    drop_folder()
    _folder = Path(tempfile.mkdtemp(prefix="notebook-pages-"))
    root = Path(config.config_file_path).resolve().parent
    try:
        notebooks = site_notebooks(root, config.site_url or "")
    except ValueError as error:  # a cell that is not its page's block: the page changed
        raise PluginError(f"a page's notebook: {error}") from None
    for source, (written_in, nb) in notebooks.items():
        (_folder / source).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, _folder / source)
        # mkdocs-jupyter wraps the file, and mkdocs.yml's not_in_nav then keeps it out of
        # the navigation (an inclusion set here would not survive the wrapping).
        files.append(File(source, str(_folder), config.site_dir, config.use_directory_urls))
        _written_in[source] = written_in
    return files


def fit_to_site(html: str, site_url: str, page_url: str) -> tuple[str, list[str]]:
    """nbconvert's HTML of a notebook, as the site's pages are (see the module's doc),
    and the stylesheets taken out of it."""
    html = DROPPED.sub("", html)
    html = CELL_CODE.sub(r'<div class="highlight"><pre><code>\1</code></pre></div>', html)
    html = PRINTED.sub(r'\1<div class="highlight"><pre><code>\2</code></pre></div>', html)
    root = "../" * page_url.count("/")  # directory URLs: a folder per page
    styles = [style.strip() for style in STYLE.findall(html)]
    html = f'<link rel="stylesheet" href="{root}{STYLESHEET}">' + STYLE.sub("", html)
    if site_url:
        html = re.sub(rf'(\b(?:href|src)="){re.escape(site_url)}', rf"\g<1>{root}", html)
    pieces, at = [], 0
    for code in CODE.finditer(html):
        pieces += [marked_math(html[at:code.start()]), code[0]]
        at = code.end()
    return "".join(pieces + [marked_math(html[at:])]), styles


def marked_math(html: str) -> str:
    """``$$...$$`` and ``$...$`` as pymdownx.arithmatex marks them (generic mode)."""
    html = DISPLAY_MATH.sub(lambda m: f'<div class="arithmatex">\\[{m[1].strip()}\\]</div>', html)
    return INLINE_MATH.sub(lambda m: f'<span class="arithmatex">\\({m[1]}\\)</span>', html)


@event_priority(50)  # before typeset.py typesets the math
def on_page_content(content, page, config, files):
    if not is_notebook_page(page):
        return content
    page.meta.setdefault("search", {})["boost"] = SEARCH_BOOST
    if page.edit_url:  # edit the chapter, where the text is written (as a wrapped file,
        #               the notebook's own edit_uri cannot be set before its page is made)
        source = page.file.src_uri
        page.edit_url = page.edit_url.removesuffix(source) + _written_in[source]
    page.title = f"Notebook: {page.title}"
    content, styles = fit_to_site(content, config.site_url or "", page.url)
    _styles.update(dict.fromkeys(styles))
    return content


def on_post_build(config):
    if _styles:
        (Path(config.site_dir) / STYLESHEET).write_text("\n".join(_styles), "utf8")
    drop_folder()
