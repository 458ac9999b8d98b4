"""The site's hooks, on a fixture chapter: header, interview questions, notebook download."""

import re
import shutil
from pathlib import Path

import nbformat
import pytest

from tests.support import ROOT, build_site
from tools.source.markdown import read_page

FIXTURE = ROOT / "tests" / "site" / "fixtures" / "site_chapter"
CHAPTER = "chapters/ch01-fixture.md"
CONFIG = f"""\
site_name: Fixture course
site_url: https://example.org/course/
repo_url: https://example.org/fixture/course
theme:
  name: material
  font: false
hooks:
  - {ROOT / "tools" / "site" / "chapter_header.py"}
  - {ROOT / "tools" / "site" / "interview_questions.py"}
markdown_extensions:
  - admonition
  - attr_list
  - md_in_html
  - pymdownx.details
  - pymdownx.superfences
  - pymdownx.tabbed:
      alternate_style: true
  - pymdownx.snippets:
      check_paths: true
"""


def build_fixture(src: Path, out: Path):
    """Build a copy of the fixture site in ``src`` (strict) into ``out``."""
    (src / "mkdocs.yml").write_text(CONFIG, "utf8")
    return build_site(src / "mkdocs.yml", out)


@pytest.fixture(scope="module")
def fixture_site(tmp_path_factory):
    src = tmp_path_factory.mktemp("fixture_src")
    shutil.copytree(FIXTURE / "docs", src / "docs")
    out = tmp_path_factory.mktemp("fixture_site")
    site = build_fixture(src, out)
    return src, out, site


def page_html(site, src: Path, uri: str) -> str:
    return site.pages[(src / "docs" / uri).resolve()]


def test_chapter_header_is_rendered_from_front_matter(fixture_site):
    src, _, site = fixture_site
    html = page_html(site, src, CHAPTER)
    header = re.search(r'<div class="chapter-facts">(.*?)</div>', html, re.S).group(1)
    assert '<span class="chapter-facts__level">Beginner</span> · 1 min read' in header
    assert '<a href="ch01-fixture.ipynb" download>Download as notebook</a>' in header
    assert "<li>what the header shows</li>" in header
    assert "<li>that <code>code</code> works in a list item</li>" in header
    assert "What it assumes" in header and "<li>nothing at all</li>" in header
    assert "Practice page" not in header  # the fixture chapter has no Practice section
    assert html.index("<h1") < html.index('class="chapter-facts"')


def test_pages_without_level_get_no_header(fixture_site):
    src, _, site = fixture_site
    assert "chapter-facts" not in page_html(site, src, "index.md")


def test_every_question_gets_an_anchor_and_a_link_on_the_questions_page(fixture_site):
    src, out, site = fixture_site
    chapter = page_html(site, src, CHAPTER)
    questions = (out / "interview-questions" / "index.html").read_text("utf8")
    for text, slug in [("What is two plus two?", "q-what-is-two-plus-two"),
                       ("Why test hooks with a fixture?", "q-why-test-hooks-with-a-fixture")]:
        assert f'<a id="{slug}"></a>' in chapter
        assert f'<a href="../chapters/ch01-fixture/#{slug}">{text}</a>' in questions
    assert chapter.count('<details class="question">') == 2  # still collapsibles, closed
    assert "A fixture chapter</h2>" in questions  # the front matter title


def test_a_new_question_appears_on_the_questions_page_with_no_second_edit(tmp_path):
    shutil.copytree(FIXTURE / "docs", tmp_path / "docs")
    chapter = tmp_path / "docs" / CHAPTER
    chapter.write_text(
        chapter.read_text("utf8") + '\n??? question "Is this one new?"\n    Yes.\n', "utf8"
    )
    build_fixture(tmp_path, tmp_path / "site")
    questions = (tmp_path / "site" / "interview-questions" / "index.html").read_text("utf8")
    assert '<a href="../chapters/ch01-fixture/#q-is-this-one-new">Is this one new?</a>' in questions


def test_chapter_notebook_holds_the_page_blocks_as_code_cells(fixture_site):
    src, out, _ = fixture_site
    nb = nbformat.read(out / "chapters" / "ch01-fixture" / "ch01-fixture.ipynb", as_version=4)
    nbformat.validate(nb)
    code = [cell.source for cell in nb.cells if cell.cell_type == "code"]
    # The course's wheel from the site, then what the page imports (matplotlib, not torch).
    assert code[0].split("\n")[0].startswith("%pip install --quiet --force-reinstall --no-deps "
                                            "https://example.org/course/assets/pyodide/")
    assert re.fullmatch(r"%pip install --quiet matplotlib==\S+ numpy==\S+", code[0].split("\n")[1])
    assert "tools" not in "\n".join(code)  # a page imports nothing from the tooling
    page = read_page(src / "docs" / CHAPTER, src)
    assert code[1:] == [block.code.rstrip("\n") for block in page.blocks]
    prose = "\n".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")
    assert 'title="Output"' not in prose and "\n4\n" not in prose  # Output blocks are dropped
    assert "**What is two plus two?**" in prose and "???" not in prose and "===" not in prose
    assert "```{.python notest}" in prose  # a block that does not run stays prose
    assert "level: Beginner" not in prose  # no front matter
    assert "[home](https://example.org/course/)" in prose  # links work from a notebook


def test_chapter_notebook_takes_its_title_from_front_matter_when_the_page_has_none(tmp_path):
    from tools.notebooks.chapter import chapter_notebook

    page = tmp_path / "docs" / "page.md"
    page.parent.mkdir()
    page.write_text('---\ntitle: Only in front matter\n---\n\nProse.\n\n'
                    '```python\n# a comment, not a heading\nx = 1\n```\n', "utf8")
    nb = chapter_notebook(page, tmp_path, "https://example.org/page/")
    assert nb.cells[1].source == "# Only in front matter"


def test_chapter_header_goes_below_the_title_and_never_into_a_code_block(tmp_path):
    from types import SimpleNamespace

    from tools.site.chapter_header import on_page_markdown
    from tools.source.markdown import read_page

    page = SimpleNamespace(meta={"level": "Advanced"}, url="chapters/ch05-x/",
                           file=SimpleNamespace(src_uri="chapters/ch05-x.md"))
    config = SimpleNamespace(docs_dir=str(tmp_path))
    code = "```python\n# a comment, not a heading\nx = 1\n```\n"
    for body, before in ((f"Prose.\n\n{code}", ""), (f"# Title\n\nProse.\n\n{code}", "# Title\n")):
        out = on_page_markdown(body, page, config, None)
        assert out.startswith(before + "\n" + '<div class="chapter-facts"')
        written = tmp_path / "out.md"
        written.write_text(out, "utf8")
        [block] = read_page(written, tmp_path).blocks
        assert block.code == "# a comment, not a heading\nx = 1\n"


def test_a_shown_notebook_takes_each_cells_output_from_its_page_block_in_order():
    import nbformat
    import pytest

    from tools.notebooks.rendered import with_outputs
    from tools.source.markdown import Block

    def block(code, output=None):
        return Block(line=1, code=code + "\n", end=2, output=output)

    cells = [nbformat.v4.new_code_cell(code) for code in ("%pip install x", "check(f)", "y = 2")]
    nb = nbformat.v4.new_notebook(cells=cells)
    blocks = [block("check(f)", "✗ Not yet\n"), block("check(f)", "✓ Correct\n"),
              block("y = 2"), block("print(~1)", "t = ~3.5 s, \\~2\n")]
    shown = with_outputs(nb, blocks)
    assert shown.cells[0].outputs == [] and shown.cells[0].execution_count is None
    assert [c.outputs[0].text if c.outputs else None for c in shown.cells[1:]] == [
        "✗ Not yet\n", None]  # the first block with that code: the one after the starter
    assert nb.cells[1].outputs == []  # the download is left as it was
    shown = with_outputs(nbformat.v4.new_notebook(cells=[cells[0], nbformat.v4.new_code_cell(
        "print(~1)")]), blocks)
    assert shown.cells[1].outputs[0].text == "t = 3.5 s, ~2\n"  # as a run prints it
    with pytest.raises(ValueError, match="cell 3 is not a block of its page"):
        with_outputs(nbformat.v4.new_notebook(cells=[cells[0], cells[2], cells[1]]), blocks)


def test_a_rendered_notebook_is_fitted_to_the_site():
    from tools.site.notebook_pages import fit_to_site

    rendered = ('<script src="https://cdn.example/mathjax.js"></script><style>.a{}</style>'
                '<p>Scores $q \\cdot k$ and</p><p>$$\nx^2\n$$</p>'
                '<a href="https://site.example/chapters/ch01-x/">one</a>'
                '<div class="highlight-ipynb hl-python"><pre><span>cost = "$5"</span>\n</pre></div>'
                '<div class="jp-RenderedText jp-OutputArea-output" data-mime-type="text/plain">'
                '<pre>$3 and $4\n</pre></div>')
    html, styles = fit_to_site(rendered, "https://site.example/", "chapters/ch01-x/notebook/")
    assert "<script" not in html and "<style" not in html and styles == [".a{}"]
    assert html.startswith('<link rel="stylesheet" href="../../../assets/stylesheets/notebook.css">')
    assert '<span class="arithmatex">\\(q \\cdot k\\)</span>' in html
    assert '<div class="arithmatex">\\[x^2\\]</div>' in html
    assert '<a href="../../../chapters/ch01-x/">' in html
    assert '<div class="highlight"><pre><code><span>cost = "$5"</span>' in html  # code stays
    assert '<div class="highlight"><pre><code>$3 and $4\n</code></pre></div>' in html
