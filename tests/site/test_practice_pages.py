"""The practice pages and the drills page, made from a chapter's Practice section without a
site build: what each exercise states about itself, the page's headings and links, and
which check block counts for the reader's progress."""

import pytest
from mkdocs.exceptions import PluginError

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

??? tip "Hint 1"
    Twice a number is the number
    added to itself.

??? tip "Hint 2"
    Multiply, do not append.

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
    assert ('| <span data-drill-hints="ch09/ex1" data-hint-count="2">none of 2</span> |\n'
            in page)


def block(index: int, code: str) -> str:
    return (f'<div class="language-python highlight" data-run-block="{index}"><pre><span></span>'
            f"<code>{code}</code></pre></div>")


def test_only_the_check_after_the_starter_counts_not_the_solutions(tmp_path):
    drills = fixture_chapter(tmp_path).drills()
    html = "".join([block(0, "import x"), block(1, "def double(x): ..."),
                    block(2, "check_double(double)\n"), HINTS, '<details class="success">',
                    block(3, "def double(x): ..."), block(4, "check_double(double)"), "</details>"])
    marked = mark_checks(html, drills)
    assert marked.count("data-exercise") == 1
    assert 'data-run-block="2" data-exercise="ch09/ex1">' in marked
    assert marked.replace(' data-exercise="ch09/ex1"', "").replace(
        ' data-hint="ch09/ex1" data-hint-number="1"', "").replace(
        ' data-hint="ch09/ex1" data-hint-number="2"', "") == html


# The fixture's two hints as pymdownx.details renders them.
HINTS = ('<details class="tip">\n<summary>Hint 1</summary>\n<p>Twice a number</p>\n</details>\n'
         '<details class="tip">\n<summary>Hint 2</summary>\n<p>Multiply</p>\n</details>\n')


def test_an_exercise_gives_its_hints_in_order_as_prose(tmp_path):
    [drill] = fixture_chapter(tmp_path).drills()
    assert drill.hints == ("Twice a number is the number\nadded to itself.",
                           "Multiply, do not append.")


TWO_HINTS = ('??? tip "Hint 1"\n    Twice a number is the number\n    added to itself.\n\n'
             '??? tip "Hint 2"\n    Multiply, do not append.\n')


@pytest.mark.parametrize("hints, error", [
    ("", r"ch09-fixture\.md:15: exercise ex1 has 0 hints: give it 1 to 3"),
    (TWO_HINTS + '\n??? tip "Hint 3"\n    c\n\n??? tip "Hint 4"\n    d\n',
     r"ch09-fixture\.md:15: exercise ex1 has 4 hints: give it 1 to 3"),
    (TWO_HINTS.replace("Hint 2", "Hint 3"), r"ch09-fixture\.md:\d+: exercise ex1: hint 3 "
                                            r"follows hint 1; number them 1, 2, 3"),
    ('??? tip "Hint 1"\n    ```python\n    x + x\n    ```\n',
     r"ch09-fixture\.md:\d+: exercise ex1: hint 1 must be prose indented under it, no code"),
])
def test_an_exercise_without_one_to_three_prose_hints_is_refused_naming_the_line(tmp_path, hints,
                                                                                  error):
    chapter = fixture_chapter(tmp_path, PAGE.replace(TWO_HINTS, hints))
    with pytest.raises(ValueError, match=error):
        chapter.drills()


def test_a_hint_missing_from_the_rendered_page_is_refused(tmp_path):
    drills = fixture_chapter(tmp_path).drills()
    html = "".join([block(1, "def double(x): ..."), block(2, "check_double(double)"),
                    HINTS.split("</details>")[0] + "</details>"])
    with pytest.raises(PluginError, match="hint 2 of ch09/ex1 is not on the page"):
        mark_checks(html, drills)


def test_every_exercise_of_the_course_has_one_to_three_hints_without_code():
    drills = [drill for chapter in chapters(ROOT) for drill in chapter.drills()]
    assert all(1 <= len(drill.hints) <= 3 for drill in drills)
    for drill in drills:
        for hint in drill.hints:  # a nudge or an idea in words, never a line of the solution
            assert "`" not in hint and "def " not in hint and "np." not in hint, (drill.key, hint)


def test_every_exercise_of_the_course_states_its_difficulty_and_what_it_trains():
    drills = [drill for chapter in chapters(ROOT) for drill in chapter.drills()]
    assert len(drills) == sum(len(chapter.exercises()) for chapter in chapters(ROOT)) >= 40
    assert {drill.difficulty for drill in drills} <= {"easy", "medium", "hard"}
