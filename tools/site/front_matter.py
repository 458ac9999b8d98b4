"""MkDocs hook: every page's front matter is checked against one schema; a mistake fails
the build naming the file and the field.

MkDocs itself ignores front matter it cannot read (a YAML error, or a blank line before the
opening ``---``) and renders it as text; a chapter's header then silently loses its level
or its lists. Here those are errors, as are a missing or empty ``level`` and ``learn`` or
``assumes`` written as a string instead of a list.
"""

import re

import yaml
from mkdocs.exceptions import PluginError

LEVELS = ("Beginner", "Intermediate", "Advanced")
# field -> (what it must be, a check). Any page may have these; chapters must have all.
CHAPTER_FIELDS = ("title", "description", "level", "learn", "assumes")
OPENING = re.compile(r"\A(?P<blank>\s*)---[ \t]*\n(?P<yaml>.*?\n)---[ \t]*(?:\n|\Z)", re.S)


def text_list(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) and v.strip() for v in value)


SCHEMA = {
    "title": ("a non-empty string", lambda v: isinstance(v, str) and bool(v.strip())),
    "description": ("a non-empty string", lambda v: isinstance(v, str) and bool(v.strip())),
    "level": (f"one of {', '.join(LEVELS)}", lambda v: v in LEVELS),
    "learn": ("a list of lines (`- ...` under `learn:`)", text_list),
    "assumes": ("a list of lines (`- ...` under `assumes:`)", text_list),
}


def front_matter_problems(text: str, is_chapter: bool) -> list[str]:
    """What is wrong with the front matter of a page's Markdown ``text`` (empty if nothing)."""
    match = OPENING.match(text.replace("\r\n", "\n"))
    if match is None:
        return ["no front matter (a `---` line, YAML, a `---` line) at the top"] if is_chapter else []
    if match["blank"]:
        return ["the front matter must start on the first line: remove what comes before `---`"]
    try:
        meta = yaml.safe_load(match["yaml"])
    except yaml.YAMLError as error:
        return [f"the front matter is not valid YAML: {error}"]
    if not isinstance(meta, dict):
        return ["the front matter must be `field: value` lines"]
    problems = []
    required = CHAPTER_FIELDS if is_chapter or "level" in meta else ()
    for name in required:
        if meta.get(name) in (None, "", []):
            problems.append(f"field `{name}` is missing or empty: it must be {SCHEMA[name][0]}")
    for name, (what, ok) in SCHEMA.items():
        if meta.get(name) not in (None, "", []) and not ok(meta[name]):
            problems.append(f"field `{name}` must be {what}, not {meta[name]!r}")
    return problems


def on_page_markdown(markdown, page, config, files):
    if page.file.abs_src_path and page.file.src_uri.endswith(".md"):
        with open(page.file.abs_src_path, encoding="utf8") as file:
            text = file.read()
        is_chapter = page.file.src_uri.startswith("chapters/")
        problems = front_matter_problems(text, is_chapter)
        if problems:
            raise PluginError(f"{page.file.src_uri}: " + "; ".join(problems))
    return markdown
