"""MkDocs hook: every interview question of the course on one page, each linking back.

A chapter (``docs/chapters/*.md``) asks its questions as collapsibles whose answer is
hidden until clicked:

    ??? question "Why divide the scores by √d_k?"
        The answer, indented.

The hook gives each question an anchor (``<a id="q-why-divide-the-scores-by-d_k">``,
from its text) on the chapter page, and generates ``interview-questions.md``: every
question, by chapter in file order, linking to its anchor. Adding a question to a chapter
adds it to that page; nothing else needs editing.
"""

import re
import sys
from pathlib import Path

from markdown.extensions.toc import slugify
from mkdocs.structure.files import File
from mkdocs.utils.meta import get_data

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:  # mkdocs loads a hook by its path, not as part of the package
    sys.path.insert(0, ROOT)

from tools.source.markdown import first_h1  # noqa: E402

PAGE = "interview-questions.md"
CHAPTERS = "chapters/"
QUESTION = re.compile(r'^(?P<indent> *)\?\?\?\+? question "(?P<text>[^"]+)"', re.M)
INTRO = """---
title: Interview questions
description: Every interview question of the course, by chapter, each linking to its answer on the chapter page.
---

# Interview questions

The questions an interviewer might ask about each chapter. Each links to its chapter,
where the answer waits, hidden until you click the question. Answer it aloud first.
"""


def anchor(text: str) -> str:
    return "q-" + slugify(text, "-")


def questions(markdown: str) -> list[str]:
    return [match["text"] for match in QUESTION.finditer(markdown)]


def add_anchors(markdown: str) -> str:
    """Put an anchor before every question (a blank line keeps the collapsible a block)."""
    return QUESTION.sub(
        lambda m: f'{m["indent"]}<a id="{anchor(m["text"])}"></a>\n\n{m[0]}', markdown
    )


def chapter_title(markdown: str, fallback: str) -> str:
    """The title as MkDocs takes it: front matter ``title``, else the first ``# `` heading."""
    body, meta = get_data(markdown)
    heading = first_h1(body)
    return str(meta.get("title") or (heading[0].strip() if heading else fallback))


def questions_page(chapters: list[tuple[str, str]]) -> str:
    """The page's Markdown, from (src_uri, Markdown) of each chapter, in order."""
    sections = []
    for src_uri, markdown in chapters:
        asked = questions(markdown)
        if asked:
            links = "\n".join(f"1. [{text}]({src_uri}#{anchor(text)})" for text in asked)
            sections.append(f"## {chapter_title(markdown, src_uri)}\n\n{links}\n")
    if not sections:
        sections.append("No chapter asks a question yet.\n")
    return INTRO + "\n" + "\n".join(sections)


def on_files(files, config):
    chapters = sorted(
        (f.src_uri, Path(f.abs_src_path).read_text("utf8"))
        for f in files.documentation_pages()
        if f.src_uri.startswith(CHAPTERS) and f.src_uri.endswith(".md")
    )
    files.append(File.generated(config, PAGE, content=questions_page(chapters)))
    return files


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri.startswith(CHAPTERS):
        return add_anchors(markdown)
    return markdown
