"""MkDocs hook: the site's search finds the lesson first.

Material's search (lunr, in the reader's browser) ranks sections by how well they match;
a page's ``search: boost`` front matter multiplies that. The course's chapters (the pages
with a ``level``) are where a term is taught, so they are boosted above the article, the
questions and the blog (tests/site/test_browser.py searches what readers type; the
practice pages are left out of the index by tools/site/practice_pages.py).
"""

CHAPTER_BOOST = 4.0


def on_page_markdown(markdown, page, config, files):
    if page.meta.get("level"):
        page.meta.setdefault("search", {}).setdefault("boost", CHAPTER_BOOST)
    return markdown
