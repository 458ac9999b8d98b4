"""MkDocs hook: a chapter's header, and every chapter and practice page as a notebook.

A page whose front matter has ``level`` is a chapter. Below its title the hook shows the
level, the reading time (the page's words at 200 a minute, code included), what the
reader will learn (``learn``, a list), what the chapter assumes (``assumes``, a list), a
"Download as notebook" link (the notebook is written next to the page's HTML;
``tools.notebooks`` makes it), a link to the notebook shown with its outputs
(``notebook_pages.py``) and, when the page has a ``## Practice`` section, a link to
the chapter's practice page (``practice_pages.py``). Nothing of this is typed into the page.
"""

import html
import math
import sys
from pathlib import Path, PurePosixPath

import nbformat

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:  # mkdocs loads a hook by its path, not as part of the package
    sys.path.insert(0, ROOT)

from tools.notebooks.chapter import chapter_notebook  # noqa: E402
from tools.site.notebook_pages import LINK as NOTEBOOK_PAGE  # noqa: E402
from tools.source.chapters import chapter_of, practice_lines  # noqa: E402
from tools.source.markdown import first_h1  # noqa: E402

WORDS_PER_MINUTE = 200


def reading_minutes(markdown: str) -> int:
    return max(1, math.ceil(len(markdown.split()) / WORDS_PER_MINUTE))


def notebook_name(page) -> str:
    return PurePosixPath(page.file.src_uri).stem + ".ipynb"


def practice_link(page, markdown: str) -> str:
    """The relative link from a chapter page to its practice page, or ''."""
    chapter = chapter_of(Path(page.file.src_uri), Path("."))
    if chapter is None or practice_lines(markdown) is None:
        return ""
    depth = page.url.count("/")  # chapters/ch02-self-attention/ -> 2 levels below the root
    return "../" * depth + f"practice/{chapter.number}/"


def facts_list(title: str, items) -> str:
    if not items:
        return ""
    lines = "\n".join(f"- {item}" for item in items)
    return f'<p class="chapter-facts__title">{title}</p>\n\n{lines}\n'


def header(page, markdown: str, docs_dir: str) -> str:
    meta = page.meta
    links = [f'<a href="{notebook_name(page)}" download>Download as notebook</a>',
             NOTEBOOK_PAGE]
    if practice := practice_link(page, markdown):
        links.append(f'<a href="{practice}">Practice page</a>')
    line = " · ".join(
        [f'<span class="chapter-facts__level">{html.escape(str(meta["level"]))}</span>',
         f"{reading_minutes(markdown)} min read", *links]
    )
    return (
        '<div class="chapter-facts" markdown>\n\n'
        f'<p class="chapter-facts__line">{line}</p>\n\n'
        f'{facts_list("What you will learn", meta.get("learn"))}\n'
        f'{facts_list("What it assumes", meta.get("assumes"))}\n'
        "</div>\n"
    )


def on_page_markdown(markdown, page, config, files):
    if "level" not in page.meta:
        return markdown
    heading = first_h1(markdown)
    lines = markdown.split("\n")
    at = heading[1] if heading else 0  # below the title, or first when it is front matter only
    return "\n".join([*lines[:at], "", header(page, markdown, config.docs_dir), *lines[at:]])


def on_post_page(output, page, config):
    if "level" not in page.meta:
        return output
    root = Path(config.config_file_path).parent  # where the snippets' paths start
    page_url = (config.site_url or "") + page.url
    nb = chapter_notebook(Path(page.file.abs_src_path), root, page_url)
    target = Path(page.file.abs_dest_path).parent / notebook_name(page)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
    return output
