"""MkDocs hook: the site's search finds the lesson first, for hyphenated terms too.

Material's search (lunr, in the reader's browser) ranks sections by how well they match;
a page's ``search: boost`` front matter multiplies that. The course's chapters (the pages
with a ``level``) are where a term is taught, so they are boosted above the article, the
questions and the blog (tests/site/test_browser.py searches what readers type; the
practice pages are left out of the index by tools/site/practice_pages.py).

Hyphenated terms ("top-p", "min-p", "multi-head") are indexed whole (mkdocs.yml's search
``separator`` leaves hyphens in words), but Material's search worker still splits a query
at hyphens: its copy of lunr reads query words with lunr's own separator, fixed when the
worker loads. So the pages load the worker through a two-line wrapper, written at build
time, that gives lunr's query reader the site's separator.
"""

import json
import re
from pathlib import Path

CHAPTER_BOOST = 4.0
WORKER = re.compile(r"(assets/javascripts/workers/)search\.[0-9a-f]+\.min\.js")
WRAPPER = "search-whole-terms.js"


def on_page_markdown(markdown, page, config, files):
    if page.meta.get("level"):
        page.meta.setdefault("search", {}).setdefault("boost", CHAPTER_BOOST)
    return markdown


def _use_wrapper(html):
    return WORKER.sub(rf"\g<1>{WRAPPER}", html, count=1)


def on_post_page(output, page, config):
    return _use_wrapper(output)


def on_post_template(output_content, template_name, config):  # the 404 page
    return _use_wrapper(output_content)


def on_post_build(config):
    workers = Path(config["site_dir"]) / "assets" / "javascripts" / "workers"
    (material,) = (p.name for p in workers.glob("search.*.min.js"))
    separator = config["plugins"]["material/search"].config.separator
    (workers / WRAPPER).write_text(
        "// Material's search worker, with a query's words split where the index splits\n"
        "// them (tools/site/search_rank.py).\n"
        f"importScripts({json.dumps(material)});\n"
        f"self.lunr.QueryLexer.termSeparator = new RegExp({json.dumps(separator)});\n",
        "utf8")
