"""MkDocs hook: a practice page per chapter, the drills page, and the practice notebooks.

Nothing is committed and nothing is listed by hand. At build time each chapter page
``docs/chapters/chNN-*.md`` with a ``## Practice`` section gives:

* ``practice/chNN.md``, generated from that section (``practice_markdown``): its
  exercises, starters, self-checks and folded solutions, which run in the page like a
  chapter's blocks (``run_in_page.py``); the page's edit link edits the chapter, where
  the text is written, and search leaves it out (it finds the text in the chapter);
* ``practice/chNN.ipynb``, the same section as a notebook (``tools.notebooks.practice``),
  written next to the page's HTML and offered for download from it;
* its rows on the drills page, ``practice/index.md`` (``drills_markdown``): every exercise
  of the course with the difficulty and what it trains, as its own text states them
  (``tools.source.chapters.Drill``), linked to where it runs.

The ``Practice`` section of ``nav`` (``- Practice: []`` in mkdocs.yml) is filled with the
drills page and the practice pages, in chapter order. On every page that shows an
exercise (its chapter, its practice page) the check block right after the starter is
marked ``data-exercise="chNN/exK"``: when it prints ✓ Correct, ``run-in-page.js`` says
so and ``docs/javascripts/drills.js`` records the exercise as solved in the browser's
local storage, which the drills page shows (and can clear).
"""

import html
import json
import posixpath
import re
import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:  # mkdocs loads a hook by its path, not as part of the package
    sys.path.insert(0, ROOT)

import nbformat  # noqa: E402
from mkdocs.exceptions import PluginError  # noqa: E402
from mkdocs.plugins import event_priority  # noqa: E402
from mkdocs.structure.files import File  # noqa: E402
from mkdocs.utils.meta import get_data  # noqa: E402

from tools.notebooks.practice import practice_notebook  # noqa: E402
from tools.site.notebook_pages import LINK as NOTEBOOK_PAGE  # noqa: E402
from tools.site.run_in_page import block_code  # noqa: E402
from tools.source.chapters import chapters  # noqa: E402
from tools.source.markdown import code_lines  # noqa: E402

NAV_SECTION = "Practice"
DRILLS = "practice/index.md"
SUBHEADING = re.compile(r"^#{3,6} ")
# A Markdown link or image target, or a reference definition, that is relative to its page.
LINK = re.compile(r"(?P<open>\]\(|^\[[^\]]+\]: +)(?P<target>(?![a-z][a-z0-9+.-]*:|/)[^)\s]+)",
                  re.M)
# Inline code: a run of backticks, then text, then a run of as many (CommonMark 6.1); a
# link written inside it is text, not a link.
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`).*?(?<!`)\1(?!`)", re.S)
# A hint as pymdownx.details renders ``??? tip "Hint 1"``: a folded <details>, opened by a
# click or by Enter or Space on its <summary>, which the keyboard reaches.
HINT_BLOCK = re.compile(r'<details class="tip">(?=\s*<summary>Hint (?P<number>\d+)</summary>)')
RUN_BLOCK = re.compile(r'(<div class="language-python highlight" data-run-block="\d+")'
                       r'([^>]*>)(.*?</code></pre></div>)', re.S)


def practice_chapters(root: Path):
    """The chapters of the repository at ``root`` that have a Practice section."""
    return [c for c in chapters(root) if c.practice_lines() is not None]


def practice_source(chapter) -> str:
    """The name of a chapter's practice page among the site's files: ``practice/ch02.md``."""
    return f"practice/{chapter.number}.md"


def notebook_name(chapter) -> str:
    """The practice notebook's file name, next to the page's HTML: ``ch02.ipynb``."""
    return f"{chapter.number}.ipynb"


def drills_anchor(number: str) -> str:
    """The anchor of a chapter's exercises on the drills page: ``ch02``."""
    return number


def repository_of(config) -> Path:
    """The repository being built: the folder of its mkdocs.yml."""
    return Path(config.config_file_path).resolve().parent


def chapter_source(chapter) -> str:
    """The chapter page's name among the site's files: ``chapters/ch02-self-attention.md``."""
    return chapter.page.relative_to(chapter.root / "docs").as_posix()


def numbered_title(chapter) -> str:
    """``2. Self-attention from scratch``: the chapter as the navigation names it."""
    title = get_data(chapter.page.read_text("utf8"))[1].get("title", chapter.number)
    return f"{int(chapter.number[2:])}. {title}"


def rebase(text: str, source: str, target: str) -> str:
    """``text`` (a line or a paragraph) with its relative links made relative to
    ``target`` instead of ``source`` (both names among the site's files): ``#a`` becomes
    a link to ``source``'s anchor. What inline code shows, as in "write `[a](b.md)`",
    is left as written."""
    code = [span.span() for span in CODE_SPAN.finditer(text)]

    def moved(match):
        if any(start <= match.start() < end for start, end in code):
            return match[0]
        path = match["target"]
        anchor = ""
        if "#" in path:
            path, anchor = path.split("#", 1)
            anchor = "#" + anchor
        full = posixpath.normpath(posixpath.join(posixpath.dirname(source), path)) if path else source
        return match["open"] + posixpath.relpath(full, posixpath.dirname(target)) + anchor

    return LINK.sub(moved, text)


def yaml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a YAML string


def practice_markdown(chapter) -> str:
    """The practice page of ``chapter``: its Practice section, one heading level up (the
    page's title is its top level), each exercise's heading given the anchor ``exK``,
    relative links pointing where they pointed from the chapter."""
    text = chapter.page.read_text("utf8")
    start, end = chapter.practice_lines()
    lines = text.split("\n")
    code = code_lines(text)
    anchors = {drill.heading: drill.exercise.section for drill in chapter.drills()}
    source, page = chapter_source(chapter), practice_source(chapter)
    body, paragraph = [], []  # paragraph: prose lines, rebased together (inline
    #                            code may go on over a line break)

    def end_paragraph():
        if paragraph:
            body.extend(rebase("\n".join(paragraph), source, page).split("\n"))
            paragraph.clear()

    for number in range(start + 1, end):
        line = lines[number]
        if number not in code and line.strip() and not SUBHEADING.match(line):
            paragraph.append(line)
            continue
        end_paragraph()  # a blank line, code or a heading ends a paragraph
        if number not in code and SUBHEADING.match(line):
            line = line[1:]
            if number in anchors:
                line += f" {{ #{anchors[number]} }}"
            line = rebase(line, source, page)
        body.append(line)
    end_paragraph()
    title = numbered_title(chapter)
    count = len(anchors)
    chapter_link = posixpath.relpath(source, "practice")
    return f"""---
title: {yaml_string(f"Practice: {title}")}
description: {yaml_string(f"The {count} exercises of chapter {title.replace('. ', ', ', 1)}, run and checked in "
                          "your browser: starters to complete, self-checks that say what is "
                          "wrong, and worked solutions.")}
search:
  exclude: true  # the chapter's own text, found there (and each title on the drills page)
---

The exercises of [{title}]({chapter_link}#practice), with their checks and solutions.
Every block runs in your browser: press **Edit** on a starter, complete it, then **Run**
on the check under it. Stuck? Open the hints under the check, one at a time, before the
solution. A **✓ Correct** marks the exercise solved on the [drills page](index.md), with
the hints you opened (in this browser only). To work in Jupyter instead:
<a href="{notebook_name(chapter)}" download>Download as notebook</a> ({NOTEBOOK_PAGE}
with the outputs of its tested run).

""" + "\n".join(body).strip("\n") + "\n"


def table_cell(text: str) -> str:
    return text.replace("|", "\\|")


def drills_markdown(found) -> str:
    """The drills page: every exercise of ``found`` (chapters with a Practice section), by
    chapter, linked to its practice page, with its difficulty and what it trains."""
    count = sum(len(chapter.drills()) for chapter in found)
    sections = []
    for chapter in found:
        page = posixpath.basename(practice_source(chapter))
        rows = "\n".join(
            f"| [{table_cell(drill.title)}]({page}#{drill.exercise.section}) "
            f"| {drill.difficulty} | {table_cell(drill.trains)} "
            f'| <span data-drill="{html.escape(drill.key)}">not yet</span> '
            f'| <span data-drill-hints="{html.escape(drill.key)}" '
            f'data-hint-count="{len(drill.hints)}">none of {len(drill.hints)}</span> |'
            for drill in chapter.drills())
        sections.append(
            f"## {numbered_title(chapter)} {{ #{drills_anchor(chapter.number)} }}\n\n"
            f"Run them on [the practice page]({page}); they are also at the end of "
            f"[the chapter]({posixpath.relpath(chapter_source(chapter), 'practice')}#practice).\n\n"
            "| Exercise | Difficulty | Trains | Solved | Hints opened |\n"
            "|---|---|---|---|---|\n" + rows + "\n")
    return f"""---
title: Drills
description: {yaml_string(f"All {count} exercises of the course, by chapter, with their "
                          "difficulty and what they train, each linked to where it runs "
                          "in your browser.")}
---

# Drills

All {count} exercises of the course, by chapter, with their difficulty and what each
trains. Each links to its chapter's practice page, where it runs in your browser. An
exercise counts as solved once its check prints **✓ Correct** there (or at the end of
its chapter). Each exercise has one to three hints, folded under its check, from a nudge
to the key idea; the last column shows how many you opened. Your progress is kept in
this browser only, in its local storage; nothing is sent anywhere.

<div class="drills-progress" data-drills-progress></div>

""" + "\n".join(sections)


def on_config(config):
    root = repository_of(config)
    entries = [{"Drills": DRILLS}] + [{numbered_title(c): practice_source(c)}
                                      for c in practice_chapters(root)]
    for item in config.nav or []:
        if isinstance(item, dict) and NAV_SECTION in item:
            item[NAV_SECTION] = entries
    return config


def on_files(files, config):
    found = practice_chapters(repository_of(config))
    try:
        drills = drills_markdown(found)
        pages = {practice_source(c): (c, practice_markdown(c)) for c in found}
    except ValueError as error:  # an exercise without its heading or difficulty
        raise PluginError(str(error)) from None
    files.append(File.generated(config, DRILLS, content=drills))
    for src_uri, (chapter, markdown) in pages.items():
        file = File.generated(config, src_uri, content=markdown)
        file.edit_uri = chapter_source(chapter)  # the text is written in the chapter
        files.append(file)
    return files


def page_chapter(page, config):
    """The chapter whose exercises ``page`` shows (the chapter itself or its practice
    page), if it has any."""
    src = page.file.src_uri
    for chapter in practice_chapters(repository_of(config)):
        if src in (practice_source(chapter), chapter_source(chapter)):
            return chapter
    return None


def mark_checks(content: str, drills) -> str:
    """Mark, in rendered HTML, the check block right after each exercise's starter (the
    first block after the previous one marked whose code is the call ``check(function)``)
    with ``data-exercise``, and its hints, the folded blocks that follow it, with
    ``data-hint``. Only that check counts: the solution's check, folded further down,
    would mark an exercise solved by the worked solution."""
    at = 0
    for drill in drills:
        call = f"{drill.exercise.check}({drill.exercise.function})"
        match = next((m for m in RUN_BLOCK.finditer(content, at)
                      if block_code(m[3]).strip() == call), None)
        if match is None:
            raise PluginError(f"the check block `{call}` of {drill.key} is not on the page")
        tagged = f'{match[1]} data-exercise="{html.escape(drill.key)}"{match[2]}'
        content = content[:match.start()] + tagged + content[match.end(2):]
        at = match.start() + len(tagged)
        for number in range(1, len(drill.hints) + 1):
            hint = HINT_BLOCK.search(content, at)
            if hint is None or int(hint["number"]) != number:
                raise PluginError(f"hint {number} of {drill.key} is not on the page after "
                                  "its check")
            tagged = (f'<details class="tip" data-hint="{html.escape(drill.key)}" '
                      f'data-hint-number="{number}">')
            content = content[:hint.start()] + tagged + content[hint.end():]
            at = hint.start() + len(tagged)
    return content


@event_priority(-100)  # after run_in_page.py has marked the Python blocks
def on_page_content(content, page, config, files):
    chapter = page_chapter(page, config)
    return mark_checks(content, chapter.drills()) if chapter else content


def on_post_page(output, page, config):
    for chapter in practice_chapters(repository_of(config)):
        if page.file.src_uri == practice_source(chapter):
            nb = practice_notebook(chapter, config.site_url or "")
            target = Path(page.file.abs_dest_path).parent / notebook_name(chapter)
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, target)
    return output
