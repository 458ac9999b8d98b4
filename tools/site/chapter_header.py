"""MkDocs hook: a chapter's header, and every chapter and practice page as a notebook.

A page whose front matter has ``level`` is a chapter. Below its title the hook shows the
level, the reading time (the page's words at 200 a minute, code included), what the
reader will learn (``learn``, a list), what the chapter assumes (``assumes``, a list), a
"Download as notebook" link and, when ``docs/practice/chapterNN.py`` exists, a link to
the chapter's practice notebook. Nothing of this is typed into the page.

A practice notebook page (``docs/practice/*.py``, rendered by mkdocs-jupyter) gets a
download link and a meta description. The notebooks are written next to each page's HTML
(``tools/notebooks.py`` makes them).
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
from tools.source.chapters import chapter_of, practice_lines  # noqa: E402
from tools.source.markdown import first_h1  # noqa: E402

WORDS_PER_MINUTE = 200


def reading_minutes(markdown: str) -> int:
    return max(1, math.ceil(len(markdown.split()) / WORDS_PER_MINUTE))


def notebook_name(page) -> str:
    return PurePosixPath(page.file.src_uri).stem + ".ipynb"


def practice_link(page, markdown: str) -> str:
    """The relative link from a chapter page to its practice notebook's page, or ''."""
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
    links = [f'<a href="{notebook_name(page)}" download>Download as notebook</a>']
    if practice := practice_link(page, markdown):
        links.append(f'<a href="{practice}">Practice notebook</a>')
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


def is_practice(page) -> bool:
    return page.file.src_uri.startswith("practice/") and page.file.src_uri.endswith(".ipynb")


def on_page_content(content, page, config, files):
    if is_practice(page):
        page.meta.setdefault("description", f"{page.title}: starters to complete, self-checks "
                             "that say what is wrong, and worked solutions, as a notebook.")
        link = f'<a href="{notebook_name(page)}" download>Download as notebook</a>'
        return f'<p class="chapter-facts__line">{link}</p>\n{content}'
    return content


def on_post_page(output, page, config):
    if "level" in page.meta:
        root = Path(config.config_file_path).parent  # where the snippets' paths start
        page_url = (config.site_url or "") + page.url
        nb = chapter_notebook(Path(page.file.abs_src_path), root, config.repo_url or "", page_url)
    elif is_practice(page):
        nb = nbformat.read(page.file.abs_src_path, as_version=4)
    else:
        return output
    target = Path(page.file.abs_dest_path).parent / notebook_name(page)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
    return output
