"""MkDocs hook: one practice notebook page per chapter with a ``## Practice`` section.

Nothing is committed and nothing is listed by hand: at build time each chapter page
``docs/chapters/chNN-*.md`` with a Practice section becomes ``practice/chNN.ipynb``
(``tools.notebooks.practice``), written to a scratch folder and added to the site's
files before mkdocs-jupyter renders notebooks, and the ``Practice`` section of ``nav``
(``- Practice: []`` in mkdocs.yml) is filled with them in chapter order.
"""

import sys
import tempfile
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:  # mkdocs loads a hook by its path, not as part of the package
    sys.path.insert(0, ROOT)

import nbformat  # noqa: E402
from mkdocs.plugins import event_priority  # noqa: E402
from mkdocs.structure.files import File  # noqa: E402

from tools.notebooks.practice import practice_notebook  # noqa: E402
from tools.source.chapters import chapters  # noqa: E402

NAV_SECTION = "Practice"


def practice_chapters(root: Path):
    """The chapters of the repository at ``root`` that have a Practice section."""
    return [c for c in chapters(root) if c.practice_lines() is not None]


def practice_source(chapter) -> str:
    """The name of a chapter's practice notebook among the site's files: ``practice/ch02.ipynb``."""
    return f"practice/{chapter.number}.ipynb"


def repository_of(config) -> Path:
    """The repository being built: the folder of its mkdocs.yml."""
    return Path(config.config_file_path).resolve().parent


def on_config(config):
    entries = [practice_source(c) for c in practice_chapters(repository_of(config))]
    for item in config.nav or []:
        if isinstance(item, dict) and NAV_SECTION in item:
            item[NAV_SECTION] = entries
    return config


@event_priority(100)  # before mkdocs-jupyter's on_files, which picks up *.ipynb
def on_files(files, config):
    scratch = Path(tempfile.mkdtemp(prefix="practice-notebooks-"))
    for chapter in practice_chapters(repository_of(config)):
        nb = practice_notebook(chapter, config.site_url or "")
        target = scratch / practice_source(chapter)
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, target)
        files.append(File(practice_source(chapter), str(scratch), config.site_dir,
                          config.use_directory_urls))
    return files
