"""A contributor's mistake fails the site build, naming the file and what is wrong.

Each hook's check is called directly on a small page (fast); one fixture build shows that a
failing check does abort `mkdocs build --strict`.
"""

import re
import shutil
from types import SimpleNamespace

import pytest
from mkdocs.exceptions import Abort, PluginError

from tests.support import ROOT, build_site
from tools.site import front_matter, interview_questions, stamp, typeset

CHAPTER = """---
title: A chapter
description: What it is about.
level: Beginner
learn:
  - one thing
assumes:
  - another
---

# A chapter
"""


def page(src_uri="chapters/ch09-x.md", path=None):
    return SimpleNamespace(file=SimpleNamespace(src_uri=src_uri, abs_src_path=str(path) if path else None))


@pytest.mark.parametrize("text, words", [
    (CHAPTER, None),
    ("\n" + CHAPTER, "must start on the first line"),
    (CHAPTER.replace("level: Beginner", "level: [Beginner"), "not valid YAML"),
    (CHAPTER.replace("level: Beginner\n", ""), "field `level` is missing or empty"),
    (CHAPTER.replace("level: Beginner", "level:"), "field `level` is missing or empty"),
    (CHAPTER.replace("level: Beginner", "level: Expert"), "field `level` must be one of"),
    (CHAPTER.replace("learn:\n  - one thing", "learn: one thing"), "field `learn` must be a list"),
    (CHAPTER.replace("assumes:\n  - another", "assumes: another"), "field `assumes` must be a list"),
    ("# No front matter\n", "no front matter"),
    (CHAPTER.replace("level: Beginner", "level: Beginner\nlevle: Advanced"),
     "field `levle` is not a front matter field (did you mean `level`?)"),
    (CHAPTER.replace("title: A chapter", "title: A chapter\nsubtitel: x"), "field `subtitel`"),
    (CHAPTER.replace("title: A chapter", "title: A chapter\ntitle: Again"),
     "field `title` is written twice"),
    (CHAPTER.replace("level: Beginner", "level: Beginner\ndate: 2024-13-45"),
     "field `date` cannot be read: month must be in 1..12"),
    (CHAPTER.replace("level: Beginner", "level: Beginner\ndate: soon"), "field `date` must be a date"),
    # `...` ends front matter for MkDocs too: what it holds is still checked.
    (CHAPTER.replace("---\n\n#", "...\n\n#").replace("level: Beginner", "level: Expert"),
     "field `level` must be one of"),
    ("\ufeff" + CHAPTER, None),  # a BOM, which MkDocs ignores
    (CHAPTER.replace("---\n\n#", "...\n\n#"), None),
])
def test_front_matter_is_checked_against_one_schema(tmp_path, text, words):
    path = tmp_path / "ch09-x.md"
    path.write_text(text, "utf8")
    if words is None:
        assert front_matter.on_page_markdown("", page(path=path), None, None) == ""
        return
    with pytest.raises(PluginError, match="chapters/ch09-x.md: ") as error:
        front_matter.on_page_markdown("", page(path=path), None, None)
    assert words in str(error.value)


def test_a_page_that_is_not_a_chapter_may_have_no_front_matter(tmp_path):
    path = tmp_path / "about.md"
    path.write_text("# About\n", "utf8")
    front_matter.on_page_markdown("", page("about.md", path), None, None)


QUESTIONS = '''# Chapter

??? question "Why?"
    Because.

```markdown
??? question "Shown as an example, inside a fence"
```
'''


@pytest.mark.parametrize("code", [
    "    ??? question \"Shown as indented code\"\n        Not an answer.\n",
    "!!! note\n    ```markdown\n    ??? question \"Inside a fence in a note\"\n    ```\n",
    "````markdown\n```\n??? question \"Inside a fence shown in a fence\"\n```\n````\n",
])
def test_question_syntax_inside_code_is_not_a_question(code):
    text = QUESTIONS + "\nProse.\n\n" + code
    assert interview_questions.questions(text) == ["Why?"]
    assert interview_questions.question_problems(text) == []


@pytest.mark.parametrize("opener", ["??? question 'Single quoted?'", '??? QUESTION "Loud?"',
                                    '??? Question "Capital?"', '??? question "Say \\"why\\"?"',
                                    '???question "No space?"'])
def test_a_line_that_looks_like_a_question_but_is_none_fails(opener):
    [problem] = interview_questions.question_problems(f"# C\n\n{opener}\n    The answer.\n")
    assert problem.startswith("line 3: ") and "is not a question" in problem


def test_question_syntax_inside_a_code_fence_is_not_a_question():
    assert interview_questions.questions(QUESTIONS) == ["Why?"]
    anchored = interview_questions.add_anchors(QUESTIONS)
    assert anchored.count("<a id=") == 1 and interview_questions.question_problems(QUESTIONS) == []


@pytest.mark.parametrize("text, words", [
    ('??? question "Empty?"\n\nNext paragraph.\n', "line 1: the question 'Empty?' has no answer"),
    ('??? question "Twice?"\n    Yes.\n\n??? question "Twice?"\n    Again.\n', "is asked twice"),
    ('??? question "Why not k^T v?"\n    Because.\n', "writes math outside $...$"),
    ('??? question "Why not q_i?"\n    Because.\n', "writes math outside $...$"),
])
def test_an_empty_answer_a_duplicate_or_raw_math_in_a_title_is_a_problem(text, words):
    assert any(words in problem for problem in interview_questions.question_problems(text))


def test_a_question_asked_in_two_chapters_fails_the_build(tmp_path):
    docs = tmp_path / "docs" / "chapters"
    docs.mkdir(parents=True)
    for name in ("ch01-a.md", "ch02-b.md"):
        (docs / name).write_text('# T\n\n??? question "Same?"\n    Yes.\n', "utf8")
    files = SimpleNamespace(documentation_pages=lambda: [
        SimpleNamespace(src_uri=f"chapters/{p.name}", abs_src_path=str(p)) for p in sorted(docs.iterdir())])
    with pytest.raises(PluginError, match="chapters/ch02-b.md: the question 'Same\\?' is also asked in chapters/ch01-a.md"):
        interview_questions.on_files(files, None)


@pytest.mark.parametrize("markdown", ["{{ tested_width }}", "{{tested_with}}", "{{ tested with }}"])
def test_a_misspelled_stamp_fails(markdown):
    with pytest.raises(PluginError, match=r"chapters/ch09-x.md: unknown placeholder \{\{"):
        stamp.on_page_markdown(f"Text\n\n{markdown}\n", page(), None, None)


def test_placeholders_in_code_are_left_alone():
    text = ("Write `{{ x }}` or ``{{ z }}``.\n\n```python\nprint('{{ y }}')\n```\n\n"
            "    {{ indented code }}\n\n{{ tested_with }}\n")
    assert "Tested with" in stamp.on_page_markdown(text, page(), None, None)


def test_the_stamp_inside_code_stays_as_written():
    text = "```markdown\n{{ tested_with }}\n```\n\n{{ tested_with }}\n"
    out = stamp.on_page_markdown(text, page(), None, None)
    assert out.startswith("```markdown\n{{ tested_with }}\n```") and out.count("Tested with") == 1


@pytest.mark.parametrize("tex, words", [
    (r"\frac{a", "unbalanced braces"),
    (r"x^", "MissingSuperScriptOrSubscriptError"),
    (r"\sqrtt{x}", r"unknown command \sqrtt"),
    (r"\frac{1}", "<mfrac> needs 2 arguments, got 1"),
    (r"x^{2} + \end{matrix}", r"unknown command \end"),
    (r"a & b", "not well-formed"),
    (r"\text{a\{b}", r"the escape \{ would be shown as it is"),
])
def test_an_invalid_formula_fails_naming_the_page_and_the_formula(tex, words):
    html = f'<p><span class="arithmatex">\\({tex}\\)</span></p>'
    with pytest.raises(PluginError) as error:
        typeset.on_page_content(html, page(), None, None)
    message = str(error.value)
    assert message.startswith("chapters/ch09-x.md: the formula ") and repr(tex) in message
    assert words in message


def test_a_failing_check_aborts_the_strict_build(tmp_path):
    shutil.copytree(ROOT / "tests" / "site" / "fixtures" / "site_chapter" / "docs", tmp_path / "docs")
    chapter = tmp_path / "docs" / "chapters" / "ch01-fixture.md"
    chapter.write_text(chapter.read_text("utf8").replace("level: Beginner", "level:"), "utf8")
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: Fixture\nhooks:\n"
        f"  - {ROOT / 'tools' / 'site' / 'front_matter.py'}\n"
        "markdown_extensions:\n  - admonition\n  - pymdownx.superfences\n  - pymdownx.details\n"
        "  - pymdownx.tabbed\n  - attr_list\n  - md_in_html\n", "utf8")
    with pytest.raises((Abort, PluginError), match="field `level` is missing or empty"):
        build_site(tmp_path / "mkdocs.yml", tmp_path / "site")


@pytest.mark.parametrize("tex, shown", [
    (r"n_\text{kv\_heads}", "kv_heads"),
    (r"1/\sqrt{\texttt{query\_pre\_attn\_scalar}}", "query_pre_attn_scalar"),
    (r"\text{5\%\#}", "5%#"),
])
def test_a_text_escape_is_typeset_as_the_character_it_stands_for(tex, shown):
    """TeX prints ``\\_`` in text mode as ``_``; the typeset formula shows no backslash."""
    mathml = typeset.to_mathml(tex, display=False)
    assert f">{shown}</mtext>" in mathml and "\\" not in mathml, mathml


def test_no_formula_of_the_course_shows_a_backslash():
    """Every formula on every page, typeset as the build does: a backslash left in the
    MathML is a TeX command or escape the reader would see as written."""
    formulas = [(path.relative_to(ROOT), tex, display)
                for path in sorted((ROOT / "docs").rglob("*.md"))
                for tex, display in page_formulas(path.read_text("utf8"))]
    assert len(formulas) > 1000, len(formulas)
    shown = [f"{path}: {tex}" for path, tex, display in formulas
             if "\\" in typeset.to_mathml(tex, display)]
    assert not shown, "formulas that show a backslash:\n" + "\n".join(shown)


def page_formulas(markdown: str) -> list[tuple[str, bool]]:
    """The formulas of a page's Markdown outside code, ``$$...$$`` (display) and ``$...$``."""
    prose = re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", markdown, flags=re.S))
    return [((display or inline).strip(), bool(display)) for display, inline
            in re.findall(r"\$\$(.+?)\$\$|\$([^$\n]+?)\$", prose, re.S)]


def test_math_and_code_in_a_question_title_are_not_raw():
    text = '??? question "Why $k^⊤ v$ and not `top_k`?"\n    Because.\n'
    assert interview_questions.question_problems(text) == []


def test_no_question_of_the_course_shows_raw_math():
    raw = [f"{path.name}: {problem}" for path in sorted((ROOT / "docs").rglob("*.md"))
           for problem in interview_questions.question_problems(path.read_text("utf8"))
           if "outside $...$" in problem]
    assert not raw, "\n".join(raw)
