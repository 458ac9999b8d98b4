"""The practice pages and the drills page, made from a chapter's Practice section without a
site build: what each exercise states about itself, the page's headings and links, and
which check block counts for the reader's progress."""

import pytest

from tests.support import ROOT
from tools.site.practice_pages import (drills_markdown, mark_checks, practice_markdown,
                                       rebase)
from tools.source.chapters import Chapter, chapters

PAGE = '''---
title: A fixture
---

Text with a [link](#setup).

## Practice

See [chapter 1](ch01-x.md#a), [the figure](../assets/f.svg) and [here](#setup).

```python title="exercises/ch09.py"
--8<-- "exercises/ch09.py:imports"
```

### Exercise 1: Double it

*Difficulty: easy. Trains: arrays, not lists.*

```python title="exercises/ch09.py"
--8<-- "exercises/ch09.py:ex1-starter"
```

```python
check_double(double)
```

??? success "Solution"
    ```python title="exercises/ch09.py"
    --8<-- "exercises/ch09.py:ex1-solution"
    ```

    ```python
    check_double(double)
    ```

#### A note under it

```text
### not a heading: inside a code block
```

## Interview questions
'''
SNIPPETS = '''# --8<-- [start:imports]
# --8<-- [end:imports]
# --8<-- [start:ex1-starter]
def double(x):
    return x
# --8<-- [end:ex1-starter]
# --8<-- [start:ex1-solution]
def double(x):
    return 2 * x
# --8<-- [end:ex1-solution]
'''


def fixture_chapter(tmp_path, page: str = PAGE) -> Chapter:
    (tmp_path / "docs" / "chapters").mkdir(parents=True)
    (tmp_path / "exercises").mkdir()
    (tmp_path / "exercises" / "ch09.py").write_text(SNIPPETS, "utf8")
    path = tmp_path / "docs" / "chapters" / "ch09-fixture.md"
    path.write_text(page, "utf8")
    return Chapter("ch09", path, tmp_path)


def test_an_exercise_states_its_heading_difficulty_and_what_it_trains(tmp_path):
    [drill] = fixture_chapter(tmp_path).drills()
    assert (drill.key, drill.title, drill.difficulty, drill.trains) == (
        "ch09/ex1", "Exercise 1: Double it", "easy", "arrays, not lists")


@pytest.mark.parametrize("facts", ["", "*Difficulty: tricky. Trains: arrays.*",
                                   "Difficulty: easy. Trains: arrays."])
def test_an_exercise_that_does_not_say_its_difficulty_is_refused_naming_the_line(tmp_path, facts):
    chapter = fixture_chapter(tmp_path, PAGE.replace("*Difficulty: easy. Trains: arrays, not lists.*",
                                                     facts))
    with pytest.raises(ValueError, match=r"ch09-fixture\.md:15: exercise ex1 does not say its "
                                         r"difficulty: write `\*Difficulty: easy\|medium\|hard"):
        chapter.drills()


def test_the_practice_page_is_the_section_one_level_up_with_anchors_and_links_that_work(tmp_path):
    page = practice_markdown(fixture_chapter(tmp_path))
    body = page.split("\n---\n", 1)[1]
    assert "## Exercise 1: Double it { #ex1 }\n" in body
    assert "### A note under it\n" in body
    assert "### not a heading: inside a code block\n" in body  # code stays as written
    assert "Interview questions" not in body and "## Practice" not in body
    assert ("[chapter 1](../chapters/ch01-x.md#a), [the figure](../assets/f.svg) and "
            "[here](../chapters/ch09-fixture.md#setup)") in body
    assert '<a href="ch09.ipynb" download>Download as notebook</a>' in body
    assert "[drills page](index.md)" in body
    assert page.startswith('---\ntitle: "Practice: 9. A fixture"\n')


def test_links_are_rebased_from_the_chapter_to_the_practice_page():
    source, target = "chapters/ch02-x.md", "practice/ch02.md"
    assert rebase("[a](#b) [c](https://x.org/#d) [e](ch01-y.md)", source, target) == (
        "[a](../chapters/ch02-x.md#b) [c](https://x.org/#d) [e](../chapters/ch01-y.md)")
    assert rebase("[ref]: ../assets/z.svg", source, target) == "[ref]: ../assets/z.svg"


def test_links_inside_inline_code_are_left_as_written(tmp_path):
    source, target = "chapters/ch02-x.md", "practice/ch02.md"
    assert rebase("write `[a](b.md)` or ``[c](`#d`)``, then [e](ch01-y.md)", source,
                  target) == ("write `[a](b.md)` or ``[c](`#d`)``, then "
                              "[e](../chapters/ch01-y.md)")
    # inline code that goes on over a line break, in a chapter's Practice section
    page = PAGE.replace("## Practice\n", "## Practice\n\nA link is written `see\n"
                        "[a](b.md)`, as [here](#setup).\n")
    body = practice_markdown(fixture_chapter(tmp_path, page))
    assert ("A link is written `see\n[a](b.md)`, as "
            "[here](../chapters/ch09-fixture.md#setup).\n") in body


def test_the_drills_page_lists_each_exercise_with_its_facts_and_a_link(tmp_path):
    page = drills_markdown([fixture_chapter(tmp_path)])
    assert "## 9. A fixture { #ch09 }" in page
    assert ('| [Exercise 1: Double it](ch09.md#ex1) | easy | arrays, not lists '
            '| <span data-drill="ch09/ex1">not yet</span> |') in page


def block(index: int, code: str) -> str:
    return (f'<div class="language-python highlight" data-run-block="{index}"><pre><span></span>'
            f"<code>{code}</code></pre></div>")


def test_only_the_check_after_the_starter_counts_not_the_solutions(tmp_path):
    drills = fixture_chapter(tmp_path).drills()
    html = "".join([block(0, "import x"), block(1, "def double(x): ..."),
                    block(2, "check_double(double)\n"), "<details>",
                    block(3, "def double(x): ..."), block(4, "check_double(double)"), "</details>"])
    marked = mark_checks(html, drills)
    assert marked.count("data-exercise") == 1
    assert 'data-run-block="2" data-exercise="ch09/ex1">' in marked
    assert marked.replace(' data-exercise="ch09/ex1"', "") == html


def test_every_exercise_of_the_course_states_its_difficulty_and_what_it_trains():
    drills = [drill for chapter in chapters(ROOT) for drill in chapter.drills()]
    assert len(drills) == sum(len(chapter.exercises()) for chapter in chapters(ROOT)) >= 40
    assert {drill.difficulty for drill in drills} <= {"easy", "medium", "hard"}
