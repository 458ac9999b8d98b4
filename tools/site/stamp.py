"""MkDocs hook: ``{{ tested_with }}`` on a page becomes the "Tested with" stamp.

The date and versions a page was built and checked with are read from the running
interpreter and installed packages, never typed by hand.
"""

import datetime
import importlib.metadata
import platform
import re
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:  # mkdocs loads a hook by its path, not as part of the package
    sys.path.insert(0, ROOT)

from tools.source.markdown import code_lines  # noqa: E402

STAMP_MARKER = "{{ tested_with }}"
# Anything written like a placeholder; only the stamp exists, so any other is a typo.
PLACEHOLDER = re.compile(r"\{\{.*?\}\}")
# Inline code: a run of backticks, then the same run (``{{ x }}`` too).
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)")


def tested_with() -> dict[str, str]:
    """Date, Python, NumPy and PyTorch versions, and the platform, as strings."""
    return {
        "date": datetime.date.today().isoformat(),
        "python": platform.python_version(),
        "numpy": importlib.metadata.version("numpy"),
        "torch": importlib.metadata.version("torch").split("+")[0],
        "platform": f"{platform.system()} {platform.machine()}",
    }


def tested_with_line() -> str:
    stamp = tested_with()
    return (
        f"{stamp['date']} · Python {stamp['python']} · NumPy {stamp['numpy']} · "
        f"PyTorch {stamp['torch']} · {stamp['platform']}"
    )


def stamp_admonition() -> str:
    return f'!!! info "Tested with"\n    {tested_with_line()}\n'


def prose_lines(markdown: str) -> list[tuple[int, str]]:
    """(0-based line, text) of every line outside code blocks, inline code removed."""
    code = code_lines(markdown)
    return [(n, CODE_SPAN.sub("", line)) for n, line in enumerate(markdown.split("\n"))
            if n not in code]


def unknown_placeholders(markdown: str) -> list[str]:
    """``{{ ... }}`` outside code blocks and inline code that is not the stamp."""
    return [m[0] for _, line in prose_lines(markdown) for m in PLACEHOLDER.finditer(line)
            if m[0] != STAMP_MARKER]


def on_page_markdown(markdown, page, config, files):
    if not page.file.src_uri.endswith(".md"):  # a notebook's JSON (notebook_pages.py)
        return markdown
    if unknown := unknown_placeholders(markdown):
        raise PluginError(f"{page.file.src_uri}: unknown placeholder {unknown[0]}: the only "
                          f"one is {STAMP_MARKER}")
    lines = markdown.split("\n")
    for number, prose in prose_lines(markdown):  # the stamp in code stays as written
        if STAMP_MARKER in prose:
            lines[number] = lines[number].replace(STAMP_MARKER, stamp_admonition())
    return "\n".join(lines)
