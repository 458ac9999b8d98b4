"""The tuning story of chapter 5's kernel is a blog post: served at its dated URL, linked
from chapter 5, and chapter 5 itself keeps no tuning diary (no commit hash, mallopt or
SVML on the page)."""

import re
from pathlib import Path

from tests.support import ROOT

POST = ROOT / "docs" / "blog" / "posts" / "attention-numpy-speed.md"
CHAPTER = ROOT / "docs" / "chapters" / "ch05-attention-at-scale.md"
URL_DIR = Path("blog", "2026", "12", "01", "attention-numpy-speed")


def test_post_is_served_and_chapter_5_links_to_it(built_site):
    assert (built_site.site_dir / URL_DIR / "index.html").exists()
    chapter = built_site.pages[CHAPTER.resolve()]
    assert "blog/2026/12/01/attention-numpy-speed/" in chapter
    assert "chapters/ch05-attention-at-scale/" in built_site.pages[POST.resolve()]


def test_chapter_5_has_no_commit_hash_mallopt_or_svml():
    text = CHAPTER.read_text("utf8")
    assert not re.search(r"`[0-9a-f]{7,40}`", text)
    assert "mallopt" not in text and "SVML" not in text
    assert "--8<-- \"attention/tiled.py:tiled_attention\"" in text
