"""MkDocs hook: the site's search finds the lesson first.

Material's search (lunr, in the reader's browser) ranks sections by how well they match;
a page's ``search: boost`` front matter multiplies that. The course's chapters (the pages
with a ``level``) are where a term is taught, so they are boosted; the practice pages,
which repeat a chapter's terms in exercise text, are ranked below them
(tests/site/test_browser.py searches what readers type).
"""

CHAPTER_BOOST = 4.0
PRACTICE_BOOST = 0.5


def on_page_markdown(markdown, page, config, files):
    search = page.meta.setdefault("search", {})
    if page.meta.get("level"):
        search.setdefault("boost", CHAPTER_BOOST)
    elif page.file.src_uri.startswith("practice/"):
        search.setdefault("boost", PRACTICE_BOOST)
    return markdown
