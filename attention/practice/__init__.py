"""Self-checks for the practice exercises: call one on your answer; it prints a verdict and returns True/False.

Each chapter's checks live in ``attention.practice.chNN`` (exercises import them from
there). ``from attention.practice import check_x`` also works: the name is looked up in
the chapter modules, found by scanning, so no list here needs editing for a new chapter.
"""

import importlib
import pkgutil


def _chapter_modules():
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("ch") and info.name[2:].isdigit():
            yield importlib.import_module(f"{__name__}.{info.name}")


def __getattr__(name):
    if name.startswith("check_"):
        for module in _chapter_modules():
            if hasattr(module, name):
                return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
