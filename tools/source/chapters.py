"""Discovery: the chapters, their exercises and self-checks, found by scanning the files.

Nothing lists chapters or exercises by hand. A chapter is a page
``docs/chapters/chNN-slug.md``. Its practice is the page's ``## Practice`` section: each
exercise there is a starter block that includes ``exercises/chNN.py:exK-starter``,
followed by a block that calls its self-check on the reader's function,
``check_something(function_name)``; the check lives in ``attention/practice/chNN.py``.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt

from tools.source.markdown import code_lines, lift_containers, read_page

PAGE_NAME = re.compile(r"^(?P<number>ch\d\d)-[a-z0-9-]+\.md$")
STARTER = re.compile(r'--8<-- "exercises/(?P<file>ch\d\d)\.py:(?P<section>ex\d+)-starter"')
CHECK_CALL = re.compile(r"^(?P<check>check_\w+)\((?P<function>\w+)\)$")
# Under each exercise's heading, before its starter: what the drills page lists.
FACTS = re.compile(r"^\*Difficulty: (?P<difficulty>easy|medium|hard)\. "
                   r"Trains: (?P<trains>[^*]+?)\.?\*$")
FACTS_FORM = "*Difficulty: easy|medium|hard. Trains: what it trains.*"
HEADING = re.compile(r"^#{3,6} +(?P<title>.+?)(?: +#+)? *$")
# After an exercise's check, before its solution: its hints, each a folded admonition
# (``??? tip "Hint 1"``, its text indented under it), a nudge first, the key idea last.
HINT = re.compile(r'^\?\?\? tip "Hint (?P<number>\d+)"$')
HINTS_FORM = '??? tip "Hint 1"'
MAX_HINTS = 3


@dataclass(frozen=True)
class Exercise:
    chapter: str  # "ch02"
    section: str  # "ex1": the exercise file's sections ex1-starter and ex1-solution
    check: str  # the self-check's name in attention/practice/chNN.py
    function: str  # the name of the function the reader writes
    line: int  # the starter block's line on the page


@dataclass(frozen=True)
class Chapter:
    number: str  # "ch02"
    page: Path  # docs/chapters/ch02-self-attention.md
    root: Path  # the repository

    @property
    def exercises_file(self) -> Path:
        return self.root / "exercises" / f"{self.number}.py"

    @property
    def checks_module(self) -> str:
        return f"attention.practice.{self.number}"

    def practice_lines(self) -> tuple[int, int] | None:
        """0-based [start, end) of the page's ``## Practice`` section, heading included."""
        return practice_lines(self.page.read_text("utf8"))

    def exercises(self) -> tuple[Exercise, ...]:
        return exercises_of(self.page, self.root, self.page.read_text("utf8"))

    def drills(self) -> tuple["Drill", ...]:
        """Each exercise with its heading, difficulty and what it trains, as written on
        the page; a ValueError names the line where one is missing."""
        return drills_of(self.page, self.root, self.page.read_text("utf8"))


@dataclass(frozen=True)
class Drill:
    """An exercise as the drills page lists it: the facts its own text states."""

    exercise: Exercise
    title: str  # its heading: "Exercise 1: Attention weights with a boolean mask"
    heading: int  # the heading's 0-based line on the page
    difficulty: str  # easy, medium or hard
    trains: str  # "masking, fully masked rows, batch axes"
    hints: tuple[str, ...] = ()  # their text, in order: "Hint 1" first

    @property
    def key(self) -> str:
        """``ch02/ex1``: the exercise's name in the reader's progress and on the pages."""
        return f"{self.exercise.chapter}/{self.exercise.section}"


@functools.cache
def drills_of(path: Path, root: Path, text: str) -> tuple[Drill, ...]:
    """The drills of the page at ``path`` whose Markdown is ``text`` (see Chapter.drills)."""
    span = practice_lines(text)
    lines = text.split("\n")
    code = code_lines(text)
    found, headings = [], set()
    for exercise in exercises_of(path, root, text):
        starter = exercise.line - 1
        heading = next((n for n in range(starter - 1, span[0], -1)
                        if n not in code and HEADING.match(lines[n])), None)
        if heading is None:
            raise ValueError(f"{path}:{exercise.line}: exercise {exercise.section} has no "
                             "`### Exercise K: title` heading above its starter")
        if heading in headings:
            raise ValueError(f"{path}:{heading + 1}: two exercises under one heading; give "
                             f"{exercise.section} a heading of its own")
        headings.add(heading)
        facts = next((m for n in range(heading + 1, starter)
                      if n not in code and (m := FACTS.match(lines[n].strip()))), None)
        if facts is None:
            raise ValueError(f"{path}:{heading + 1}: exercise {exercise.section} does not "
                             f"say its difficulty: write `{FACTS_FORM}` under its heading")
        found.append(Drill(exercise, HEADING.match(lines[heading])["title"], heading,
                           facts["difficulty"], facts["trains"]))
    ends = [drill.heading for drill in found[1:]] + [span[1]] if found else []
    return tuple(Drill(d.exercise, d.title, d.heading, d.difficulty, d.trains,
                       hints_of(path, lines, d, end, code)) for d, end in zip(found, ends))


def hints_of(path: Path, lines: list[str], drill: Drill, end: int,
             code: set[int]) -> tuple[str, ...]:
    """The hints of ``drill``, whose text runs up to line ``end``: one to three, numbered
    from 1, each a paragraph or two of prose (a hint nudges; it never shows code)."""
    where = f"{path}:{drill.heading + 1}: exercise {drill.exercise.section}"
    found = []
    for n in range(drill.heading + 1, end):
        if n in code or not (match := HINT.match(lines[n])):
            continue
        if int(match["number"]) != len(found) + 1:
            raise ValueError(f"{path}:{n + 1}: exercise {drill.exercise.section}: hint "
                             f"{match['number']} follows hint {len(found)}; number them 1, 2, 3")
        body = []
        for line in lines[n + 1:end]:
            if line.strip() and not line.startswith("    "):
                break
            body.append(line[4:])
        text = "\n".join(body).strip()
        if not text or "```" in text:
            raise ValueError(f"{path}:{n + 1}: exercise {drill.exercise.section}: hint "
                             f"{match['number']} must be prose indented under it, no code block")
        found.append(text)
    if not 1 <= len(found) <= MAX_HINTS:
        raise ValueError(f"{where} has {len(found)} hints: give it 1 to {MAX_HINTS}, each "
                         f"`{HINTS_FORM}` with its text indented under it, after its check")
    return tuple(found)


@functools.cache
def exercises_of(path: Path, root: Path, text: str) -> tuple[Exercise, ...]:
    """The exercises of the page at ``path`` whose Markdown is ``text``: kept for the
    text, since several test modules ask for every chapter's exercises as they load."""
    span = practice_lines(text)
    if span is None:
        return ()
    page = read_page(path, root)
    found = []
    for block, after in zip(page.blocks, page.blocks[1:]):
        starter = STARTER.search(block.source)
        if starter and span[0] < block.line <= span[1]:
            call = CHECK_CALL.match(after.code.strip())
            if call is None:
                raise ValueError(
                    f"{path}:{after.line}: the block after an exercise's starter "
                    "must call its self-check on the reader's function, e.g. "
                    "`check_attention_weights(attention_weights)`"
                )
            found.append(Exercise(starter["file"], starter["section"], call["check"],
                                  call["function"], block.line))
    return tuple(found)


@functools.cache
def practice_lines(text: str) -> tuple[int, int] | None:
    """0-based [start, end) of the ``## Practice`` section of a page's Markdown."""
    tokens = MarkdownIt("commonmark").parse(lift_containers(text))
    start = None
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.tag in ("h1", "h2") and token.map:
            if start is not None:
                return start, token.map[0]
            if token.tag == "h2" and tokens[i + 1].content.strip() == "Practice":
                start = token.map[0]
    return (start, len(text.split("\n"))) if start is not None else None


def chapters(root: Path) -> list[Chapter]:
    """Every chapter page under ``docs/chapters/``, in number order."""
    found = []
    for path in sorted((Path(root) / "docs" / "chapters").glob("*.md")):
        match = PAGE_NAME.match(path.name)
        if match:
            found.append(Chapter(match["number"], path, Path(root)))
    return found


def chapter_of(page: Path, root: Path) -> Chapter | None:
    match = PAGE_NAME.match(Path(page).name)
    return Chapter(match["number"], Path(page), Path(root)) if match else None
