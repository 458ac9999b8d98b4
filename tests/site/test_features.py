"""What the built site offers a reader, checked in its HTML (the browser tests check the rest)."""

import html
import re
from pathlib import Path

import nbformat
import pytest
from mkdocs.utils.meta import get_data

from tests.support import ROOT
from tools.source.chapters import chapters as discovered_chapters
from tools.source.markdown import read_page

DOCS = ROOT / "docs"


def front_matter(page: Path) -> dict:
    return get_data(page.read_text("utf8"))[1]


def source_pages(built_site) -> dict[Path, str]:
    """The pages written in docs/ (the blog plugin also generates archive pages elsewhere)."""
    return {page: out for page, out in built_site.pages.items() if page.is_relative_to(DOCS)}


def chapters() -> list[Path]:
    return [p for p in sorted(DOCS.rglob("*.md")) if "level" in front_matter(p)]


def test_every_page_with_a_description_has_it_as_meta_description(built_site):
    for page, output in source_pages(built_site).items():
        if page.suffix == ".md" and (description := front_matter(page).get("description")):
            meta = re.search(r'<meta name="description" content="([^"]*)"', output)
            assert meta and html.unescape(meta[1]) == description, page


def test_no_page_loads_anything_from_another_host(built_site):
    # What a browser fetches at load: scripts, images, frames, stylesheets and icons (a
    # canonical link is only an address).
    external = re.compile(
        r'<(?:script|img|iframe)\b[^>]*\bsrc="(?:https?:)?//'
        r'|<link\b(?=[^>]*\brel="(?:stylesheet|icon|preload|modulepreload)")[^>]*\bhref="(?:https?:)?//',
        re.I,
    )
    for page, output in built_site.pages.items():
        assert not external.search(output), f"{page} loads {external.search(output)[0]}"
        # Material fetches the repository's stars from api.github.com for this component.
        assert 'data-md-component="source"' not in output, page


def test_chapter_pages_exist():
    assert chapters(), "no page has `level` in its front matter"


@pytest.mark.parametrize("page", chapters(), ids=lambda p: p.stem)
def test_chapter_notebook_holds_exactly_the_page_blocks(page, built_site):
    rel = page.relative_to(DOCS).with_suffix("")
    nb = nbformat.read(built_site.site_dir / rel / f"{rel.name}.ipynb", as_version=4)
    nbformat.validate(nb)
    code = [cell.source for cell in nb.cells if cell.cell_type == "code"]
    assert code[0].startswith("%pip install")
    assert nb.cells[1].cell_type == "markdown" and nb.cells[1].source.startswith("# ")  # a title
    assert code[1:] == [block.code.rstrip("\n") for block in read_page(page, ROOT).blocks]


def site_page(built_site, name: str) -> str:
    """The HTML of a page by its name among the site's files (generated pages included)."""
    return (built_site.site_dir / built_site.addresses[name] / "index.html").read_text("utf8")


NOTEBOOK_CELL = re.compile(r'<div class="jp-Cell jp-(?:Code|Markdown)Cell[^"]*" id="cell-id=')
TAG = re.compile(r"<[^>]+>")


def shown_code_cells(page: str) -> list[tuple[str, list[str]]]:
    """The code cells a rendered notebook page shows: (code, [printed output, ...])."""
    cells = []
    for cell in NOTEBOOK_CELL.split(page)[1:]:
        code = re.search(r'jp-InputArea-editor.*?<pre><code>(.*?)</code></pre>', cell, re.S)
        if code is None:
            continue  # a Markdown cell
        outputs = re.findall(r'<div class="jp-RenderedText jp-OutputArea-output[^>]*>\s*'
                             r'<div class="highlight"[^>]*><pre><code>(.*?)</code></pre>', cell, re.S)
        cells.append((html.unescape(TAG.sub("", code[1])).strip("\n"),
                      [html.unescape(TAG.sub("", out)) for out in outputs]))
    return cells


def outputs_of(blocks) -> list[list[str]]:
    from tools.notebooks.rendered import as_printed

    return [[as_printed(block.output)] if block.output else [] for block in blocks]


@pytest.mark.parametrize("page", chapters(), ids=lambda p: p.stem)
def test_chapter_notebook_page_shows_exactly_the_page_blocks_with_their_tested_outputs(
        page, built_site):
    from tools.site.notebook_pages import LINK, notebook_source

    source = page.relative_to(DOCS).as_posix()
    shown = site_page(built_site, notebook_source(source))
    assert f'/edit/main/docs/{source}"' in shown  # the text is written in the chapter
    cells = shown_code_cells(shown)
    blocks = read_page(page, ROOT).blocks
    assert cells[0][0].startswith("%pip install") and cells[0][1] == []  # not run
    # (the page's leading blank lines in a block are not shown)
    assert [code for code, _ in cells[1:]] == [block.code.strip("\n") for block in blocks]
    assert [outputs for _, outputs in cells[1:]] == outputs_of(blocks)
    chapter = built_site.pages[page.resolve()]
    assert LINK in chapter  # beside the download
    # Its math is typeset as the chapter's is, and it loads nothing of nbconvert's.
    assert ("<math" in shown) == ("<math" in chapter) \
        and '<span class="arithmatex">\\(' not in shown
    assert "<script" not in shown.split('<div class="jupyter-wrapper">')[1].split("</article>")[0]


def test_practice_notebook_pages_show_the_practice_notebook_with_the_tested_outputs(built_site):
    from tools.site.notebook_pages import LINK, notebook_source
    from tools.site.practice_pages import practice_chapters, practice_source

    for chapter in practice_chapters(ROOT):
        cells = shown_code_cells(site_page(built_site,
                                           notebook_source(practice_source(chapter))))
        download = built_site.site_dir / "practice" / chapter.number / f"{chapter.number}.ipynb"
        nb = nbformat.read(download, as_version=4)
        assert [code for code, _ in cells] == [c.source.strip("\n") for c in nb.cells
                                               if c.cell_type == "code"], chapter.number
        # Each cell shows what its block printed where the page runs it: a check right
        # after its starter says "Not yet", the same check after the solution "Correct".
        blocks = iter(read_page(chapter.page, ROOT).blocks)
        ran = [next(b for b in blocks if b.code.strip("\n") == code) for code, _ in cells[1:]]
        assert [outputs for _, outputs in cells[1:]] == outputs_of(ran), chapter.number
        assert LINK in site_page(built_site, practice_source(chapter)), chapter.number


def test_notebook_pages_are_searched_below_the_chapters_and_kept_out_of_the_navigation(built_site):
    import json

    from tools.site.notebook_pages import SEARCH_BOOST

    index = json.loads((built_site.site_dir / "search" / "search_index.json").read_text("utf8"))
    found = {doc["location"]: doc.get("boost") for doc in index["docs"]}
    for chapter in discovered_chapters(ROOT):
        location = f"chapters/{chapter.page.stem}/notebook/"
        assert found[location] == SEARCH_BOOST, location
    home = (built_site.site_dir / "index.html").read_text("utf8")
    assert "/notebook/" not in home  # not in the navigation


PYTHON_BLOCK = re.compile(r'<div class="language-python highlight"([^>]*)>')


def test_practice_pages_are_generated_run_in_the_page_and_offer_the_notebook(built_site):
    from tools.site.practice_pages import practice_chapters, practice_source

    expected = practice_chapters(ROOT)
    assert expected and expected == [c for c in discovered_chapters(ROOT)
                                     if c.practice_lines() is not None]
    for chapter in expected:
        output = site_page(built_site, practice_source(chapter))
        target = built_site.site_dir / "practice" / chapter.number / f"{chapter.number}.ipynb"
        nbformat.validate(nbformat.read(target, as_version=4))
        assert f'<a href="{chapter.number}.ipynb" download>Download as notebook</a>' in output
        assert '<meta name="description" content="The ' in output
        assert "%pip" not in output and "jupyter" not in output  # a page, not a notebook render
        # Every Python block runs in the page, and each exercise's check is the one marked.
        blocks = PYTHON_BLOCK.findall(output)
        assert blocks and all("data-run-block=" in b and "data-run-needs" not in b
                              for b in blocks), chapter.number
        marked = re.findall(r'data-exercise="([^"]+)"', output)
        assert marked == [drill.key for drill in chapter.drills()], chapter.number
        for drill in chapter.drills():
            assert f'id="{drill.exercise.section}"' in output, drill.key
        html = built_site.pages[chapter.page.resolve()]
        assert f'href="../../practice/{chapter.number}/">Practice page</a>' in html
        assert re.findall(r'data-exercise="([^"]+)"', html) == marked  # solved there too
    for chapter in discovered_chapters(ROOT):
        if chapter not in expected:
            assert "Practice page</a>" not in built_site.pages[chapter.page.resolve()]


def test_drills_page_lists_every_exercise_and_the_questions_link_to_it(built_site):
    from tools.site.practice_pages import DRILLS, practice_chapters

    drills = site_page(built_site, DRILLS)
    questions = site_page(built_site, "interview-questions.md")
    rows = re.findall(r"<tr>(.*?)</tr>", drills, re.S)
    listed = [drill for c in practice_chapters(ROOT) for drill in c.drills()]
    assert len(listed) >= 40 and len(rows) == len(listed) + len(practice_chapters(ROOT))
    for drill in listed:
        row = next(r for r in rows if f'data-drill="{drill.key}"' in r)
        cells = [c.strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        link = f'href="{drill.exercise.chapter}/#{drill.exercise.section}"'
        assert link in cells[0] and cells[1] == drill.difficulty, row
        assert html.unescape(cells[2]) == drill.trains, row
    for chapter in practice_chapters(ROOT):
        assert f'id="{chapter.number}"' in drills
        if f'<a href="../chapters/{chapter.page.stem}/#q-' in questions:  # it asks questions
            assert f'<a href="../practice/#{chapter.number}">' in questions, chapter.number


def test_every_page_has_an_edit_link_and_a_previous_or_next_link(built_site):
    for page, output in source_pages(built_site).items():
        src = page.relative_to(DOCS).as_posix()
        if src.startswith(built_site.blog_dir + "/"):
            continue  # Material's blog index lists posts; it has no edit action
        assert re.search(rf'<a href="[^"]*/edit/main/docs/{re.escape(src)}"', output), src
        assert 'class="md-footer__link' in output, src


# One chapter is enough to prove that a downloaded notebook runs outside the repository:
# the page test already runs every chapter's code, and chapter 5's timings would only be
# measured twice (and on a busy machine, flake twice).
@pytest.mark.parametrize("page", [DOCS / "chapters" / "ch02-self-attention.md"], ids=lambda p: p.stem)
def test_chapter_notebook_runs_top_to_bottom_outside_the_repository(page, built_site, tmp_path, monkeypatch):
    """As a reader's download would run, minus the install (no network here): the kernel
    sees the package and nothing else of the repository, and starts in an empty directory."""
    from nbclient import NotebookClient

    (tmp_path / "site-packages").mkdir()
    (tmp_path / "site-packages" / "attention").symlink_to(ROOT / "attention")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site-packages"))
    (tmp_path / "work").mkdir()
    rel = page.relative_to(DOCS).with_suffix("")
    nb = nbformat.read(built_site.site_dir / rel / f"{rel.name}.ipynb", as_version=4)
    nb.cells[0].source = nb.cells[0].source.replace("%pip install", "# %pip install", 1)
    NotebookClient(nb, kernel_name="python3", timeout=300,
                   resources={"metadata": {"path": str(tmp_path / "work")}}).execute()
    assert not list((tmp_path / "work").iterdir()), "the notebook wrote files"


def test_logo_and_favicon_are_the_course_svg(built_site):
    assert (built_site.site_dir / "assets" / "logo.svg").read_text("utf8").startswith("<svg")
    for page, output in source_pages(built_site).items():
        assert re.search(r'<link rel="icon" href="[^"]*assets/logo\.svg"', output), page
        assert re.search(r'<img src="[^"]*assets/logo\.svg" alt="logo">', output), page


def test_names_and_ordinary_symbols_are_not_typeset_as_operators():
    from tools.site.typeset import on_page_content

    html = on_page_content(
        '<span class="arithmatex">\\(\\operatorname{softmax}(x) = -\\infty\\)</span>', None, None, None
    )
    assert "<mi>softmax</mi>" in html and "<mi>&#x0221E;</mi>" in html and "<mo>softmax" not in html


@pytest.mark.parametrize("page", chapters(), ids=lambda p: p.stem)
def test_every_chapter_shows_its_header_as_html_not_as_code(page, built_site):
    html = built_site.pages[page.resolve()]
    assert html.count('<div class="chapter-facts"') == 1
    assert "chapter-facts</span>" not in html and '"chapter-facts"</span>' not in html
