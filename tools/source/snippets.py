"""Snippets: ``--8<-- "path/file.py:section"`` lines, expanded exactly as the site does.

pymdownx.snippets itself does the work, configured as in ``mkdocs.yml``, so a test runs
the text a reader sees.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml


@lru_cache(maxsize=None)
def snippet_config(root: Path) -> dict:
    """The pymdownx.snippets options of ``root/mkdocs.yml`` (defaults without one)."""
    config = {"base_path": ["."], "check_paths": True}
    mkdocs_yml = root / "mkdocs.yml"
    if mkdocs_yml.exists():
        loader = type("IgnoreTags", (yaml.SafeLoader,), {})
        loader.add_multi_constructor("", lambda _loader, _suffix, _node: None)
        settings = yaml.load(mkdocs_yml.read_text("utf8"), Loader=loader) or {}
        for ext in settings.get("markdown_extensions", []):
            if isinstance(ext, dict) and "pymdownx.snippets" in ext:
                config.update(ext["pymdownx.snippets"] or {})
    base = config["base_path"]
    config["base_path"] = [str(root / b) for b in ([base] if isinstance(base, str) else base)]
    return config


def expand_snippets(code: str, root: Path) -> str:
    """Expand ``--8<--`` lines in ``code`` exactly as the site build does."""
    if "--8<--" not in code:
        return code
    import markdown
    from pymdownx.snippets import SnippetExtension

    md = markdown.Markdown(extensions=[SnippetExtension(**snippet_config(root))])
    lines = md.preprocessors["snippet"].run(code.split("\n"))
    return "\n".join(lines)
