"""MkDocs hook: every interview question of the course on one page, each linking back.

A chapter (``docs/chapters/*.md``) asks its questions as collapsibles whose answer is
hidden until clicked:

    ??? question "Why divide the scores by √d_k?"
        The answer, indented.

The hook gives each question an anchor (``<a id="q-why-divide-the-scores-by-d_k">``,
from its text) on the chapter page, and generates ``interview-questions.md``: every
question, by chapter in file order, linking to its anchor, and under each chapter that
has a ``## Practice`` section a link to its exercises on the drills page and to its
practice page (``practice_pages.py``), where they run. Adding a question to a chapter
adds it to that page; nothing else needs editing.
"""

import re
import sys
from pathlib import Path

from markdown.extensions.toc import slugify
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File
from mkdocs.utils.meta import get_data

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:  # mkdocs loads a hook by its path, not as part of the package
    sys.path.insert(0, ROOT)

from tools.site.practice_pages import DRILLS, drills_anchor, practice_source  # noqa: E402
from tools.source.chapters import chapter_of, practice_lines  # noqa: E402
from tools.source.markdown import code_lines, first_h1  # noqa: E402

PAGE = "interview-questions.md"
CHAPTERS = "chapters/"
# A question as pymdownx.details renders it, with a title that links safely: no `"` inside
# (pymdownx.details keeps `\"` literally); a backslash only in TeX (`$\sqrt{d_k}$`).
QUESTION = re.compile(r'^(?P<indent> *)\?\?\?\+? question "(?P<text>(?:[^"\\]|\\[^"\\])+)" *$')
# Math written in a title outside ``$...$`` (or code) is shown raw: "adding k^T v".
RAW_MATH = re.compile(r"[\^_]")
# Anything a contributor may have meant as a question (any case, quotes, spacing).
LIKE_A_QUESTION = re.compile(r"^ *\?\?\?\+? *question\b", re.I)
INTRO = """---
title: Interview questions
description: Every interview question of the course, by chapter, each linking to its answer on the chapter page.
---

# Interview questions

The questions an interviewer might ask about each chapter. Each links to its chapter,
where the answer waits, hidden until you click the question. Answer it aloud first, then
practise the same ideas on the chapter's drills, which run in your browser.
"""


def anchor(text: str) -> str:
    """The question's id: its words, without TeX's commands (``$\\sqrt{d_k}$`` gives d_k)."""
    return "q-" + slugify(re.sub(r"\\[A-Za-z]+", "", text), "-")


def question_lines(markdown: str) -> list[tuple[int, re.Match]]:
    """(0-based line, match) of every question outside code (a code block may show the
    question syntax as an example)."""
    code = code_lines(markdown)
    return [(number, match) for number, line in enumerate(markdown.split("\n"))
            if number not in code and (match := QUESTION.match(line))]


def malformed_questions(markdown: str) -> list[str]:
    """Lines outside code that look like a question but are none: they render as text
    (single quotes: the answer shows) or as another kind of box (``??? QUESTION``)."""
    code = code_lines(markdown)
    return [f"line {number + 1}: {line.strip()!r} is not a question: write "
            '`??? question "..."` (lower case, double quotes, no `"` inside)'
            for number, line in enumerate(markdown.split("\n"))
            if number not in code and LIKE_A_QUESTION.match(line) and not QUESTION.match(line)]


def questions(markdown: str) -> list[str]:
    return [match["text"] for _, match in question_lines(markdown)]


def question_problems(markdown: str) -> list[str]:
    """A line that looks like a question but is none, math outside ``$...$`` in a title, an
    empty answer, or a question asked twice on the page."""
    lines = markdown.split("\n")
    problems, seen = malformed_questions(markdown), set()
    for number, match in question_lines(markdown):
        text, indent = match["text"], len(match["indent"]) + 4
        if RAW_MATH.search(re.sub(r"\$[^$]*\$|`[^`]*`", "", text)):
            problems.append(f"line {number + 1}: the question {text!r} writes math outside "
                            "$...$, where it is shown raw: typeset it")
        if anchor(text) in seen:
            problems.append(f"line {number + 1}: the question {text!r} is asked twice")
        seen.add(anchor(text))
        answer = []
        for line in lines[number + 1 :]:
            if line.strip() and len(line) - len(line.lstrip()) < indent:
                break
            answer.append(line.strip())
        if not "".join(answer):
            problems.append(f"line {number + 1}: the question {text!r} has no answer "
                            f"(indent it by {indent} spaces under the question)")
    return problems


def add_anchors(markdown: str) -> str:
    """Put an anchor before every question (a blank line keeps the collapsible a block)."""
    lines = markdown.split("\n")
    for number, match in reversed(question_lines(markdown)):
        lines[number:number] = [f'{match["indent"]}<a id="{anchor(match["text"])}"></a>', ""]
    return "\n".join(lines)


def chapter_title(markdown: str, fallback: str) -> str:
    """The title as MkDocs takes it: front matter ``title``, else the first ``# `` heading."""
    body, meta = get_data(markdown)
    heading = first_h1(body)
    return str(meta.get("title") or (heading[0].strip() if heading else fallback))


def drills_line(src_uri: str, markdown: str) -> str:
    """Where a chapter's exercises are listed and run, or '' if it has none."""
    chapter = chapter_of(Path(src_uri), Path("."))
    if chapter is None or practice_lines(markdown) is None:
        return ""
    return (f"Practise: [the chapter's drills]({DRILLS}#{drills_anchor(chapter.number)}), "
            f"run on [its practice page]({practice_source(chapter)}).\n")


def questions_page(chapters: list[tuple[str, str]]) -> str:
    """The page's Markdown, from (src_uri, Markdown) of each chapter, in order."""
    sections = []
    for src_uri, markdown in chapters:
        asked = questions(markdown)
        if asked:
            links = "\n".join(f"1. [{text}]({src_uri}#{anchor(text)})" for text in asked)
            sections.append(f"## {chapter_title(markdown, src_uri)}\n\n{links}\n\n"
                            f"{drills_line(src_uri, markdown)}")
    if not sections:
        sections.append("No chapter asks a question yet.\n")
    return INTRO + "\n" + "\n".join(sections)


def check_questions(chapters: list[tuple[str, str]]) -> None:
    """Raise ValueError if a chapter's questions are malformed, or one is asked twice in
    the course. ``chapters``: (source path, Markdown) of each chapter."""
    asked: dict[str, str] = {}
    for src_uri, markdown in chapters:
        if problems := question_problems(markdown):
            raise ValueError(f"{src_uri}: " + "; ".join(problems))
        for text in questions(markdown):
            if anchor(text) in asked:
                raise ValueError(f"{src_uri}: the question {text!r} is also asked in "
                                 f"{asked[anchor(text)]}")
            asked[anchor(text)] = src_uri


def on_files(files, config):
    chapters = sorted(
        (f.src_uri, Path(f.abs_src_path).read_text("utf8"))
        for f in files.documentation_pages()
        if f.src_uri.startswith(CHAPTERS) and f.src_uri.endswith(".md")
    )
    try:
        check_questions(chapters)
    except ValueError as error:
        raise PluginError(str(error)) from None
    files.append(File.generated(config, PAGE, content=questions_page(chapters)))
    return files


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri.startswith(CHAPTERS):
        return add_anchors(markdown)
    return markdown
