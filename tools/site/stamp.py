"""MkDocs hook: ``{{ tested_with }}`` on a page becomes the "Tested with" stamp.

The date and versions a page was built and checked with are read from the running
interpreter and installed packages, never typed by hand.
"""

import datetime
import importlib.metadata
import platform
import re

from mkdocs.exceptions import PluginError

STAMP_MARKER = "{{ tested_with }}"
# Anything written like a placeholder; only the stamp exists, so any other is a typo.
PLACEHOLDER = re.compile(r"\{\{.*?\}\}")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


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


def unknown_placeholders(markdown: str) -> list[str]:
    """``{{ ... }}`` outside code fences and inline code that is not the stamp."""
    found, fence = [], ""
    for line in markdown.split("\n"):
        marker = FENCE.match(line)
        if marker and (not fence or marker[1].startswith(fence)):
            fence = "" if fence else marker[1]
            continue
        if fence:
            continue
        prose = re.sub(r"`[^`]*`", "", line)
        found += [m[0] for m in PLACEHOLDER.finditer(prose) if m[0] != STAMP_MARKER]
    return found


def on_page_markdown(markdown, page, config, files):
    if unknown := unknown_placeholders(markdown):
        raise PluginError(f"{page.file.src_uri}: unknown placeholder {unknown[0]}: the only "
                          f"one is {STAMP_MARKER}")
    if STAMP_MARKER in markdown:
        markdown = markdown.replace(STAMP_MARKER, stamp_admonition())
    return markdown
