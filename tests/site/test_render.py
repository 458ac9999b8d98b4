"""The site builds with --strict, and every fence on every page renders as a code block."""

import shutil
from pathlib import Path

import pytest

from tests.support import ROOT, build_site
from tools.pagecheck.render import render_problems

DOCS = ROOT / "docs"


def markdown_pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def test_site_builds_strict_and_renders_every_page(built_site):
    built = {p.resolve() for p in built_site.pages}
    missing = [str(p.relative_to(ROOT)) for p in markdown_pages() if p.resolve() not in built]
    assert not missing, f"pages not rendered: {missing}"
    print(f"site build: {built_site.seconds:.1f} s, {len(built_site.pages)} pages")


@pytest.mark.parametrize("page", markdown_pages(), ids=lambda p: str(p.relative_to(DOCS)))
def test_page_renders_every_fence_as_code(page, built_site):
    html = built_site.pages[page.resolve()]
    is_blog_index = page.resolve() == (DOCS / built_site.blog_dir / "index.md").resolve()
    assert render_problems(page, html, ROOT, lists_excerpts=is_blog_index) == []


def test_broken_fence_is_caught_although_strict_build_passes(tmp_path):
    fixture = ROOT / "tests" / "site" / "fixtures" / "site_broken"
    shutil.copytree(fixture, tmp_path / "src")
    site = build_site(tmp_path / "src" / "mkdocs.yml", tmp_path / "site")  # strict: no warning
    [(page, html)] = site.pages.items()
    problems = render_problems(page, html, tmp_path / "src")
    assert any("3 fences in the Markdown but 2 code blocks" in p for p in problems), problems
    assert any("'continuation' appears as text" in p for p in problems), problems
    assert any("literal fence marker" in p for p in problems), problems


def test_tested_with_stamp_is_rendered_from_the_environment(built_site):
    import numpy as np

    from tools.site.stamp import tested_with

    html = built_site.pages[(DOCS / "index.md").resolve()]
    stamp = tested_with()
    assert "{{ tested_with }}" not in html
    for value in (stamp["python"], np.__version__, stamp["torch"], stamp["platform"]):
        assert value in html


def test_math_is_typeset_at_build_time(built_site):
    from tools.site.typeset import on_page_content

    html = on_page_content('<p><span class="arithmatex">\\(\\sqrt{d_k}\\)</span></p>', None, None, None)
    assert "<msqrt>" in html and "\\(" not in html
    for page, html in built_site.pages.items():
        assert '<span class="arithmatex">\\(' not in html, page
        assert '<div class="arithmatex">\\[' not in html, page


def test_render_check_compares_block_by_block_not_only_counts(tmp_path):
    from tools.pagecheck.render import render_problems

    page = tmp_path / "page.md"
    page.write_text('# Page\n\n```python\nx = 1\n```\n\n```text\nhello\n```\n', "utf8")
    good = ('<div class="language-python highlight"><pre><code>x = 1\n</code></pre></div>'
            '<div class="language-text highlight"><pre><code>hello\n</code></pre></div>')
    assert render_problems(page, good, tmp_path) == []
    # Two code blocks, as many as fences (the old check passed), but not the same ones.
    swapped = ('<div class="language-text highlight"><pre><code>hello\n</code></pre></div>'
               '<div class="language-python highlight"><pre><code>x = 1\n</code></pre></div>')
    problems = render_problems(page, swapped, tmp_path)
    assert any("line 3: a ```python fence rendered as text" in p for p in problems), problems
    other = good.replace("hello", "goodbye")
    problems = render_problems(page, other, tmp_path)
    assert any("line 7: the ```text fence rendered with other content" in p for p in problems), problems
