"""MkDocs hook: the navigation follows the course, its chapters numbered as on the home page.

Each chapter line under ``Chapters:`` in mkdocs.yml (``- chapters/chNN-slug.md``) gets the
title ``N. <its front-matter title>`` here, so a chapter added later is numbered without
editing anything but its one nav line; and the chapter table of the home page (a
``<!-- chapter table -->`` line) is made from the same front matter, so it cannot go stale.
The 404 page links home by ``config.extra.home``, the home page's path, computed here
(so the template calls no Python string method a future theme's templates lack).
"""

import html
import re
import sys
from pathlib import Path
from urllib.parse import urlsplit

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:  # mkdocs loads a hook by its path, not as part of the package
    sys.path.insert(0, ROOT)

from mkdocs.utils.meta import get_data  # noqa: E402

SECTION = "Chapters"
CHAPTER = re.compile(r"(?:^|/)ch(?P<number>\d\d)-[a-z0-9-]+\.md$")
TABLE = "<!-- chapter table -->"


def chapter_entries(config) -> list[tuple[int, str, dict]]:
    """(number, source path, front matter) of every chapter line of the navigation."""
    docs = Path(config.docs_dir)
    found = []
    for item in config.nav or []:
        if isinstance(item, dict) and SECTION in item:
            for entry in item[SECTION]:
                path = entry if isinstance(entry, str) else next(iter(entry.values()))
                if match := CHAPTER.search(path):
                    meta = get_data((docs / path).read_text("utf8"))[1]
                    found.append((int(match["number"]), path, meta))
    return found


def home_path(site_url: str | None) -> str:
    """The home page's path from the server's root (``/attention-from-scratch/``): the
    404 page is served at any depth, so its link home cannot be relative."""
    path = urlsplit(site_url or "/").path or "/"
    return path if path.endswith("/") else path + "/"


def on_config(config):
    config.extra["home"] = home_path(config.site_url)
    numbered = {path: f"{number}. {meta.get('title', path)}"
                for number, path, meta in chapter_entries(config)}
    for item in config.nav or []:
        if isinstance(item, dict) and SECTION in item:
            item[SECTION] = [{numbered[e]: e} if isinstance(e, str) and e in numbered else e
                             for e in item[SECTION]]
    return config


def chapter_list(config) -> str:
    """The chapters as a list (it fits a phone's width, where a table would be cut):
    number and title linked, level, and what the chapter is about (its description)."""
    items = []
    for number, path, meta in chapter_entries(config):
        link = Path(path).with_suffix("").as_posix() + "/"
        items.append(f'<li><a href="{html.escape(link)}"><strong>{number}. '
                     f'{html.escape(str(meta.get("title", path)))}</strong></a> '
                     f'<span class="chapter-list__level">{html.escape(str(meta.get("level", "")))}'
                     f'</span><br>{html.escape(str(meta.get("description", "")))}</li>')
    return '<ul class="chapter-list">\n' + "\n".join(items) + "\n</ul>"


def on_page_content(content, page, config, files):
    if TABLE in content:
        if page.file.src_uri != "index.md":
            raise ValueError(f"{page.file.src_uri}: the chapter table belongs on the home page")
        content = content.replace(TABLE, chapter_list(config))
    return content
