"""The navigation follows the course, and the home page's chapter list follows the chapters."""

import re

from mkdocs.utils.meta import get_data

from tests.support import ROOT
from tools.source.chapters import chapters

DOCS = ROOT / "docs"


def nav_titles(html: str) -> list[str]:
    return [t.strip() for t in re.findall(r'class="md-ellipsis">\s*([^<]+?)\s*<', html)]


def test_chapters_are_numbered_in_the_nav_from_their_front_matter(built_site):
    html = (built_site.site_dir / "index.html").read_text("utf8")
    titles = nav_titles(html)
    for chapter in chapters(ROOT):
        title = get_data(chapter.page.read_text("utf8"))[1]["title"]
        assert f"{int(chapter.number[2:])}. {title}" in titles, (chapter.number, titles)


def test_next_after_the_last_chapter_leads_to_practice_and_there_is_no_archive(built_site):
    last = sorted(chapters(ROOT), key=lambda c: c.number)[-1]
    page = last.page.relative_to(DOCS).with_suffix("")
    html = (built_site.site_dir / page / "index.html").read_text("utf8")
    following = re.search(r'href="([^"]+)" class="md-footer__link md-footer__link--next"', html)
    assert following and "practice/" in following[1], following
    assert not (built_site.site_dir / "blog" / "archive").exists()
    assert not (built_site.site_dir / "blog" / "category").exists()
    assert "2026" not in nav_titles(html)


def test_the_home_page_lists_every_chapter_with_its_level_and_description(built_site):
    html = (built_site.site_dir / "index.html").read_text("utf8")
    listed = re.search(r'<ul class="chapter-list">(.*?)</ul>', html, re.S)[1]
    for chapter in chapters(ROOT):
        meta = get_data(chapter.page.read_text("utf8"))[1]
        link = chapter.page.relative_to(DOCS).with_suffix("").as_posix() + "/"
        assert f'href="{link}"' in listed, chapter.number
        assert meta["level"] in listed and meta["description"].split("(")[0] in listed.replace("&#x27;", "'")
    assert "planned" not in listed


def test_the_404_page_links_home_once_and_lists_the_chapters(built_site):
    html = (built_site.site_dir / "404.html").read_text("utf8")
    home = re.search(r'<a href="([^"]*)">Start from the home page', html)[1]
    assert "//" not in home and home.endswith("/")
    assert "<kbd>" not in html  # touch readers have no keyboard shortcuts
    assert len(re.findall(r'<li><a href="[^"]*chapters/ch\d\d-', html)) == len(chapters(ROOT))


STR_METHOD = re.compile(r"\.(?:[lr]?strip|split|replace|startswith|endswith|lower|upper"
                        r"|title|format|join|find|count)\(")


def test_the_themes_templates_call_no_python_method():
    """Material 9.8's successor renders templates with another engine (MiniJinja): a Python
    string method in a template (``base_url.rstrip('/')``) works in Jinja only. The hooks
    compute such values (course_nav.home_path)."""
    for template in sorted((ROOT / "overrides").rglob("*.html")):
        for tag in re.findall(r"\{[{%].*?[}%]\}", template.read_text("utf8"), re.S):
            assert not STR_METHOD.search(tag), (template.name, tag)


def test_the_home_path_is_the_site_urls_path_with_one_slash():
    from tools.site.course_nav import home_path

    assert home_path("https://x.github.io/course/") == "/course/"
    assert home_path("https://x.github.io/course") == "/course/"
    assert home_path("https://x.github.io") == home_path(None) == "/"
