"""MkDocs hook: ``{{ tested_with }}`` on a page becomes the "Tested with" stamp.

The date and versions a page was built and checked with are read from the running
interpreter and installed packages, never typed by hand.
"""

import datetime
import importlib.metadata
import platform

STAMP_MARKER = "{{ tested_with }}"


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


def on_page_markdown(markdown, page, config, files):
    if STAMP_MARKER in markdown:
        markdown = markdown.replace(STAMP_MARKER, stamp_admonition())
    return markdown
