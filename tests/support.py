"""What the tests share: the repository's root, building a site, loading exercises, reading verdicts.

Imported as ``tests.support`` (every test folder is a package, so two test files may share
a basename; nothing edits ``sys.path``).
"""

import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from attention.practice.verdict import FAIL, PASS

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class BuiltSite:
    """The site built from this checkout with ``--strict``, and what each page became."""

    site_dir: Path
    seconds: float
    pages: dict[Path, str] = field(default_factory=dict)  # Markdown source -> HTML
    blog_dir: str = "blog"
    site_url: str = ""
    # Every rendered page, generated ones included: its name under docs/ -> its path in the site.
    addresses: dict[str, str] = field(default_factory=dict)

    def save(self, path: Path) -> None:
        """Write what the build recorded as JSON, for the other workers of the run (load)."""
        record = asdict(self) | {"site_dir": str(self.site_dir),
                                 "pages": {str(k): v for k, v in self.pages.items()}}
        path.write_text(json.dumps(record), "utf8")

    @classmethod
    def load(cls, path: Path) -> "BuiltSite":
        """The site another worker built and saved."""
        record = json.loads(path.read_text("utf8"))
        record["site_dir"] = Path(record["site_dir"])
        record["pages"] = {Path(k): v for k, v in record["pages"].items()}
        return cls(**record)


class _Recorder:
    """A stand-in MkDocs plugin that keeps each page's final HTML and its address."""

    def __init__(self, site: BuiltSite):
        self.site = site

    def on_post_page(self, output, page, config):
        if page.file.abs_src_path:
            self.site.pages[Path(page.file.abs_src_path)] = output
        self.site.addresses[page.file.src_uri] = page.url
        return output


def build_site(config_file: Path, site_dir: Path) -> BuiltSite:
    """Build like ``mkdocs build --strict``: any warning aborts the build, and is shown."""
    import logging

    from mkdocs.commands.build import build
    from mkdocs.config import load_config
    from mkdocs.exceptions import Abort

    warnings: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: warnings.append(record.getMessage())
    logging.getLogger("mkdocs").addHandler(handler)
    logging.getLogger("mkdocs").setLevel(logging.INFO)
    start = time.perf_counter()
    config = load_config(str(config_file), site_dir=str(site_dir), strict=True)
    site = BuiltSite(site_dir, 0.0)
    config.plugins["render-recorder"] = _Recorder(site)
    config.plugins.on_startup(command="build", dirty=False)
    try:
        build(config)
    except Abort as abort:
        raise Abort(f"{abort}\n" + "\n".join(warnings)) from None
    finally:
        config.plugins.on_shutdown()
        logging.getLogger("mkdocs").removeHandler(handler)
    blog = config.plugins.get("material/blog")
    site.blog_dir = blog.config.blog_dir if blog is not None else "blog"
    site.site_url = config.site_url or ""
    site.seconds = time.perf_counter() - start
    return site


def build_site_once_per_run(config, tmp_path_factory) -> BuiltSite:
    """The course's site, built once per test run however many xdist workers ask for it.

    The workers of a run share the parent of their temporary folders: the first one to
    take the lock builds the site there and records what it built; the others wait for
    the lock, then load that record. A failed build leaves no record, so each worker
    that asks tries the build itself and reports its failure.
    """
    from filelock import FileLock

    folder = tmp_path_factory.getbasetemp()
    if hasattr(config, "workerinput"):  # not the environment: a test's subprocess inherits it
        folder = folder.parent  # the run's folder, not this worker's
    record = folder / "built-site.json"
    with FileLock(folder / "built-site.lock"):
        if record.exists():
            return BuiltSite.load(record)
        site = build_site(ROOT / "mkdocs.yml", folder / "built-site")
        site.save(record)
        return site


EXERCISES_DIR = ROOT / "exercises"


class Exercises:
    """The snippet sections of one ``exercises/chNN.py`` file."""

    def __init__(self, filename: str):
        self.filename = filename
        self.source = (EXERCISES_DIR / filename).read_text(encoding="utf-8")

    def section(self, name: str) -> str:
        match = re.search(rf"# --8<-- \[start:{name}\]\n(.*?)# --8<-- \[end:{name}\]", self.source, re.S)
        assert match, f"section {name} missing from exercises/{self.filename}"
        return match.group(1)

    def load(self, name: str, function: str):
        """Run the imports section and one exercise section, as a page does; return `function`."""
        namespace: dict = {}
        exec(self.section("imports"), namespace)
        exec(self.section(name), namespace)
        return namespace[function]


def run_check(check, answer, capsys) -> tuple[bool, str]:
    """Call a self-check on an answer: it returns a bool, and its verdict is what it
    printed last, from its "✓"/"✗" line on, its wrapped lines joined into one (a reader's
    answer may print lines of its own before it)."""
    result = check(answer)
    printed = capsys.readouterr().out.strip().splitlines()
    assert result in (True, False)
    starts = [i for i, line in enumerate(printed) if line.startswith((PASS, FAIL))]
    assert starts, printed
    return result, " ".join(line.strip() for line in printed[starts[-1]:])
