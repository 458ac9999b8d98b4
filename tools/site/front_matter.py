"""MkDocs hook: every page's front matter is checked against one schema; a mistake fails
the build naming the file and the field.

MkDocs itself ignores front matter it cannot read (a YAML error, or a blank line before the
opening ``---``) and renders it as text; a chapter's header then silently loses its level
or its lists. Here those are errors, as are a missing or empty ``level`` and ``learn`` or
``assumes`` written as a string instead of a list, a field no page uses (``levle:``), a
field written twice (YAML keeps the last silently) and a value YAML cannot read (``date:
2024-13-45``). The front matter ends at ``---`` or ``...``, as MkDocs reads it, and a BOM
before it is ignored, as MkDocs ignores it.
"""

import datetime
import difflib
import re

import yaml
from mkdocs.exceptions import PluginError

LEVELS = ("Beginner", "Intermediate", "Advanced")
# field -> (what it must be, a check). Any page may have these; chapters must have all.
CHAPTER_FIELDS = ("title", "description", "level", "learn", "assumes")
OPENING = re.compile(r"\A(?P<blank>\s*)---[ \t]*\n(?P<yaml>.*?\n)(?:---|\.\.\.)[ \t]*(?:\n|\Z)",
                     re.S)
# Every field a page may have: the chapters' own, and those Material and its blog read.
KNOWN_FIELDS = {*CHAPTER_FIELDS, "date", "authors", "categories", "tags", "slug", "links",
                "draft", "pin", "readtime", "hide", "search", "template", "icon", "status",
                "subtitle", "comments"}


def text_list(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) and v.strip() for v in value)


SCHEMA = {
    "title": ("a non-empty string", lambda v: isinstance(v, str) and bool(v.strip())),
    "description": ("a non-empty string", lambda v: isinstance(v, str) and bool(v.strip())),
    "level": (f"one of {', '.join(LEVELS)}", lambda v: v in LEVELS),
    "learn": ("a list of lines (`- ...` under `learn:`)", text_list),
    "assumes": ("a list of lines (`- ...` under `assumes:`)", text_list),
}


def read_fields(source: str) -> tuple[dict | None, list[str]]:
    """The front matter's fields, each read on its own so that a bad value names its
    field, and the problems found (a field twice, a value YAML cannot read)."""
    try:
        root = yaml.compose(source, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        return None, [f"the front matter is not valid YAML: {error}"]
    if not isinstance(root, yaml.MappingNode):
        return None, ["the front matter must be `field: value` lines"]
    meta, problems = {}, []
    for key_node, value_node in root.value:
        name = key_node.value
        if name in meta:
            problems.append(f"field `{name}` is written twice (line "
                            f"{key_node.start_mark.line + 2}): keep one")
        try:
            meta[name] = yaml.SafeLoader(source).construct_object(value_node, deep=True)
        except (yaml.YAMLError, ValueError, TypeError) as error:
            problems.append(f"field `{name}` cannot be read: {error}")
            meta[name] = None
    return meta, problems


def valid_date(value) -> bool:
    """A blog post's ``date``: a date, or ``created``/``updated`` dates."""
    if isinstance(value, dict):
        return bool(value) and all(isinstance(v, datetime.date) for v in value.values())
    return isinstance(value, datetime.date)


def front_matter_problems(text: str, is_chapter: bool) -> list[str]:
    """What is wrong with the front matter of a page's Markdown ``text`` (empty if nothing)."""
    match = OPENING.match(text.removeprefix("\ufeff").replace("\r\n", "\n"))
    if match is None:
        return ["no front matter (a `---` line, YAML, a `---` line) at the top"] if is_chapter else []
    if match["blank"]:
        return ["the front matter must start on the first line: remove what comes before `---`"]
    meta, problems = read_fields(match["yaml"])
    if meta is None:
        return problems
    for name in meta:
        if name not in KNOWN_FIELDS:
            close = difflib.get_close_matches(str(name), sorted(KNOWN_FIELDS), n=1)
            problems.append(f"field `{name}` is not a front matter field"
                            + (f" (did you mean `{close[0]}`?)" if close else ""))
    if "date" in meta and meta["date"] is not None and not valid_date(meta["date"]):
        problems.append(f"field `date` must be a date (YYYY-MM-DD), not {meta['date']!r}")
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
        with open(page.file.abs_src_path, encoding="utf-8-sig") as file:
            text = file.read()
        is_chapter = page.file.src_uri.startswith("chapters/")
        problems = front_matter_problems(text, is_chapter)
        if problems:
            raise PluginError(f"{page.file.src_uri}: " + "; ".join(problems))
    return markdown
