"""Every chapter ends in a Next section that says what comes next: it links the following
chapter (the last chapter has none to link)."""

import re

from tests.support import ROOT

CHAPTERS = sorted((ROOT / "docs" / "chapters").glob("ch[0-9][0-9]-*.md"))


def next_section(markdown: str) -> str:
    found = re.search(r"^## Next\n(.*?)(?=^## |\Z)", markdown, re.S | re.M)
    return found[1] if found else ""


def test_every_next_section_links_the_following_chapter():
    assert len(CHAPTERS) >= 11
    missing = [f"{page.name} does not link {following.name} in its Next section"
               for page, following in zip(CHAPTERS, CHAPTERS[1:])
               if f"]({following.name})" not in next_section(page.read_text("utf8"))]
    assert not missing, "\n".join(missing)
