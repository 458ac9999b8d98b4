"""The article is published as a blog post: dated, categorised, timed, with its figure and related links.

The page's own blocks check its numbers; these tests check what the built site makes of it.
"""

import re
from pathlib import Path
from urllib.parse import unquote

from tests.support import ROOT

POST = ROOT / "docs" / "blog" / "posts" / "self-attention-numpy.md"
URL_DIR = Path("blog", "2026", "11", "29", "self-attention-numpy")  # blog_dir/YYYY/MM/DD/slug


def post_html(built_site) -> str:
    return built_site.pages[POST.resolve()]


def test_post_shows_its_date_category_and_reading_time(built_site):
    html = post_html(built_site)
    assert 'datetime="2026-11-29' in html and "November 29, 2026" in html
    # the category is in the front matter; the site has no category pages (nav)
    assert re.search(r"\d+ min read", html)
    assert "{{ tested_with }}" not in html and "Tested with" in html


def test_post_is_served_at_its_dated_url_and_listed_on_the_blog_index(built_site):
    assert (built_site.site_dir / URL_DIR / "index.html").exists()
    index = built_site.pages[(ROOT / "docs" / "blog" / "index.md").resolve()]
    assert "2026/11/29/self-attention-numpy/" in index
    assert "<!-- more -->" not in index  # the excerpt stops at the marker
    assert "Why long sequences are slow" not in index


def test_post_figure_resolves_from_the_post_url(built_site):
    html = post_html(built_site)
    sources = re.findall(r'<img[^>]*\ssrc="([^"]+)"', html)
    # The light and the dark variant (tools/site/accessibility.py), each with its fragment.
    figure = [s.split("#")[0] for s in sources if "article-weights" in s]
    assert [f.rsplit("/", 1)[1] for f in figure] == ["article-weights.svg",
                                                    "article-weights-dark.svg"], sources
    assert (built_site.site_dir / URL_DIR / unquote(figure[1])).resolve().exists()
    served = (built_site.site_dir / URL_DIR / unquote(figure[0])).resolve()
    assert served == (built_site.site_dir / "assets" / "figures" / "article-weights.svg").resolve()
    assert served.exists()


def test_post_links_to_chapters_2_and_5(built_site):
    html = post_html(built_site)
    assert "Related links" in html
    for chapter in ("chapters/ch02-self-attention/", "chapters/ch05-attention-at-scale/"):
        assert chapter in html, chapter
