"""MkDocs hook: the reader can run and edit a page's Python blocks in the browser.

Each Python block gets Run, Edit, Restore and Restart controls (``docs/javascripts/
run-in-page.js``), which send its code to Pyodide in a Web Worker (``run-worker.js``). The
site serves the runtime itself: ``on_post_build`` writes the verified Pyodide runtime and
NumPy wheel (``tools/site/pyodide_runtime.py``), its largest files gzipped (the worker
decompresses them and reports the download's progress; NumPy's wheel and the standard
library repacked first without what no code can use in the browser,
``tools/site/runtime_repack.py``), and a pure-Python wheel of the
``attention`` package built from this checkout into ``assets/pyodide/``, with a
``manifest.json`` of names and sizes. Nothing is downloaded until the reader first presses
Run. The shipped runs (chapter 7's checkpoint, ``attention/gpt/shipped/``, and chapter
14's, ``attention/circuits/shipped/``) are a wheel of their own, fetched only on a page that
reads them: one whose code imports ``attention.gpt.run`` or ``attention.circuits.run``, or
whose live figure does (``needs_checkpoint``); such a page is marked
``data-run-checkpoint`` and the worker adds that wheel before running. A page with ``<!-- run-in-page facts -->`` (the home page) gets a sentence with the
browser's versions and the download's size, computed here.

Which blocks can run there is decided here, at build time, from the code itself: the
browser has NumPy, the ``attention`` package and the standard library, nothing else. An
import of anything else (PyTorch, Transformers, Matplotlib) still succeeds in the browser
(the worker installs stand-in modules), so a block that only imports runs; a block that
*uses* such a name, or a name bound by a block that could not run, says what it needs
instead of offering Run, and keeps the output the tests checked.

A block right after a paragraph that begins "Your turn" is the reader's to change: it is
marked ``data-run-yours``, and what it prints in the browser is shown as it is, never as
a difference from the page's Output.
"""

from __future__ import annotations

import ast
import builtins
import functools
import gzip
import hashlib
import importlib.metadata
import html
import inspect
import io
import json
import platform
import re
import symtable
import sys
import types
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # mkdocs loads hooks by path
    sys.path.insert(0, str(ROOT))

from tools.site.pyodide_runtime import NUMPY_WHEEL, RUNTIME_FILES, ensure_runtime  # noqa: E402
from tools.site.runtime_repack import NUMPY_UNUSED, STDLIB_UNUSED, repack  # noqa: E402
from tools.source.markdown import (  # noqa: E402
    CourseMarkdown, fence_attributes, fence_language)

ASSETS = "assets/pyodide"
PACKAGE = "attention"
# The benchmarks' results that pages read beside the package, as in the repository
# (chapters 5, 12 and 13): installed from the package's wheel, they are there too.
RESULTS = ("benchmarks/results.json", "benchmarks/sparse-decode.json",
           "benchmarks/kda-chunked.json", "benchmarks/encoders.json")
IN_BROWSER = {"numpy", PACKAGE} | set(sys.stdlib_module_names)
WHAT = {"torch": "PyTorch", "transformers": "Hugging Face Transformers",
        "matplotlib": "Matplotlib"}
# Blocks that could run in the browser but should not: too slow or too large for
# WebAssembly (one thread, no BLAS, 4 GiB of memory). Keyed by page (its path under
# docs/) and a piece of text that identifies the block; the browser test checks that
# exactly these blocks are the ones that do not run there.
NOT_IN_BROWSER: dict[str, dict[str, str]] = {
    "chapters/ch04-generation.md": {
        "cached ms": "times a model's decode steps at contexts up to 512 tokens: "
                     "the timings and their growth belong to the machine that built "
                     "the page, not to single-threaded WebAssembly",
    },
    "blog/posts/attention-numpy-speed.md": {
        "best_time(run) for name, run in steps": "compares NumPy's passes over a tile "
            "with BLAS matrix products, which WebAssembly does not have: the shares "
            "belong to the machine that built the page",
    },
    "chapters/ch11-serving.md": {
        "serving.json": "reads the benchmark's results from the repository",
    },
    "chapters/ch10-linear-attention.md": {
        "linear-crossover.json": "reads the benchmark's results from the repository",
        "time_forms(n": "times four forms of attention at up to 2048 tokens: the "
                        "times belong to the machine that built the page, not to "
                        "single-threaded WebAssembly without BLAS",
    },
    "chapters/ch05-attention-at-scale.md": {
        "results.json": "reads the benchmark's results from the repository",
        "time of q @ k.T": "times products of up to (8192, 64) @ (64, 8192): minutes "
                           "in WebAssembly, which has no BLAS",
    },
}

PYTHON_BLOCK = re.compile(r'<div class="language-python highlight">(.*?)</code></pre></div>', re.S)
TAG = re.compile(r"<[^>]+>")
YOUR_TURN = re.compile(r"<p>Your turn\b(?:(?!<p>).)*</p>\s*$", re.S)  # just before a block


def block_code(block_html: str) -> str:
    """The code of a rendered block, as the reader sees it (and as the browser runs it)."""
    code = block_html.split("<code>", 1)[1]
    return html.unescape(TAG.sub("", code))


def global_names(statement: ast.stmt) -> tuple[set[str], set[str]]:
    """The module-level names a statement reads and the ones it binds or changes.

    Names local to a function or comprehension in it do not count (``symtable`` knows the
    scopes); ``x[...] = ...`` and ``x.a = ...`` count as changing ``x``.
    """
    table = symtable.symtable(ast.unparse(statement), "<block>", "exec")
    reads, binds = set(), set()

    def visit(scope, top):
        for symbol in scope.get_symbols():
            name = symbol.get_name()
            if symbol.is_referenced() and (top or symbol.is_global()):
                reads.add(name)
            if top and (symbol.is_assigned() or symbol.is_imported()):
                binds.add(name)
        for child in scope.get_children():
            visit(child, False)

    visit(table, True)
    for node in ast.walk(statement):
        if isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, ast.Store):
            while isinstance(node, (ast.Subscript, ast.Attribute)):
                node = node.value
            if isinstance(node, ast.Name):
                binds.add(node.id)
    return reads, binds


def effects(statement: ast.stmt):
    """(reads, binds) of a statement, in the order they happen.

    A loop or ``with`` binds its target before its body reads it, and the statements of a
    body run in order, so ``for T in temps: print(T)`` reads only ``temps`` from before.
    """
    def expression(node):
        return global_names(ast.Expr(node))[0] if node is not None else set()

    def targets(node):
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} if node else set()

    def body(statements):
        for inner in statements:
            yield from effects(inner)

    if isinstance(statement, (ast.For, ast.AsyncFor)):
        yield expression(statement.iter), targets(statement.target)
        yield from body(statement.body + statement.orelse)
    elif isinstance(statement, (ast.With, ast.AsyncWith)):
        for item in statement.items:
            yield expression(item.context_expr), targets(item.optional_vars)
        yield from body(statement.body)
    elif isinstance(statement, (ast.If, ast.While)):
        yield expression(statement.test), set()
        yield from body(statement.body + statement.orelse)
    else:
        yield global_names(statement)


def foreign_module(node: ast.AST) -> str | None:
    """The first library the browser lacks that ``node`` imports anywhere inside it: an
    ``import`` statement, or ``importlib.import_module("x")`` / ``__import__("x")``."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Import):
            modules = [alias.name for alias in inner.names]
        elif isinstance(inner, ast.ImportFrom):
            modules = [inner.module or ""] if not inner.level else []
        elif (isinstance(inner, ast.Call) and inner.args
              and isinstance(inner.args[0], ast.Constant) and isinstance(inner.args[0].value, str)
              and ((isinstance(inner.func, ast.Name) and inner.func.id == "__import__")
                   or (isinstance(inner.func, ast.Attribute) and inner.func.attr == "import_module"))):
            modules = [inner.args[0].value]
        else:
            continue
        for module in modules:
            if (top := module.split(".")[0]) and top not in IN_BROWSER:
                return top
    return None


def needs(top: str) -> str:
    return f"needs {WHAT.get(top, top)}"


def browser_plan(codes: list[str], skips: dict[str, str] | None = None) -> list[str | None]:
    """For each block in page order: None if it runs in the browser, else why not.

    An import of a library the browser lacks works there (a stand-in), so what counts is
    use: a name bound by such an import, wherever it is (in ``try``, in a function, through
    ``importlib``), a function that imports it, and every name a block that cannot run
    would have bound. After ``from torch import *``, a name no block of the page binds is
    taken to come from it.
    """
    missing: dict[str, str] = {}  # name -> why a block that reads it cannot run
    defined: set[str] = set(dir(builtins))  # the names the page's blocks bind
    star: str | None = None  # why unknown names are missing, after a star import
    imported: dict[str, str] = {}  # name -> the "module:name" a block imported it as
    plan: list[str | None] = []
    for code in codes:
        reason = next((why for text, why in (skips or {}).items() if text in code), None)
        try:
            statements = ast.parse(code).body
        except SyntaxError:
            plan.append(reason)  # the browser shows the SyntaxError, as Python would
            continue
        bound: set[str] = set()
        imports: dict[str, str] = {}  # what this block imports from the browser's modules
        for statement in statements:
            if isinstance(statement, (ast.Import, ast.ImportFrom)):
                modules = ([a.name for a in statement.names] if isinstance(statement, ast.Import)
                           else [statement.module or ""])
                top = modules[0].split(".")[0]
                for alias in statement.names:
                    name = (alias.asname or alias.name).split(".")[0]
                    if name == "*":
                        star = star if top in IN_BROWSER else needs(top)
                    elif top in IN_BROWSER:
                        missing.pop(name, None)
                        imports[name] = (alias.name if isinstance(statement, ast.Import)
                                         else f"{statement.module}:{alias.name}")
                    else:  # importing works in the browser (a stand-in); using it does not
                        missing[name] = needs(top)
                    defined.add(name)
                continue
            foreign = foreign_module(statement)
            calls_import = foreign and not isinstance(
                statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Try))
            if reason is None and calls_import and not any(
                    isinstance(n, (ast.Import, ast.ImportFrom)) for n in ast.walk(statement)):
                reason = needs(foreign)  # importlib.import_module("torch").ones(2)
            for reads, binds in effects(statement):
                if reason is None:
                    reason = next((missing[name] for name in sorted(reads) if name in missing),
                                  None)
                if reason is None and star:
                    reason = next((star for name in sorted(reads) if name not in defined), None)
                bound |= binds
                defined |= binds
                for name in binds:
                    if foreign:  # a function that imports it, or a name bound from it
                        missing[name] = needs(foreign)
                    else:
                        missing.pop(name, None)
        if reason is not None:
            # What this block would have bound does not exist there, nor what it would have
            # imported, unless an earlier block imported the same (adam_step imported after
            # a block that defined a function of that name leaves that function in place).
            fresh = {name for name, what in imports.items() if imported.get(name) != what}
            for name in bound | fresh:
                missing.setdefault(name, f"uses `{name}` from a block that does not run here")
        else:
            for name in bound:  # a def or an assignment replaces an imported name
                imported.pop(name, None)
            imported.update(imports)
        plan.append(reason)
    return plan


def fence_bands(markdown: str, count: int) -> list[str | None]:
    """Each Python block's ``band="..."`` (``tools/pagecheck/outputs.py``), in page order,
    for the browser's comparison with the page's Output; None where the fence has none."""
    fences = [token for token in CourseMarkdown(ROOT).parse(markdown)
              if token.type == "fence" and fence_language(token.info)[0] == "python"]
    bands = [fence_attributes(token.info).get("band") for token in fences]
    if len(bands) != count:  # the page's HTML and its Markdown disagree: say so
        raise ValueError(f"{count} Python blocks in the page's HTML, {len(bands)} in its "
                         "Markdown: a fence's band cannot be matched to its block")
    return bands


FACTS = "<!-- run-in-page facts -->"  # a page's placeholder for what Run downloads and runs


# the modules that read the shipped runs: attention/gpt/shipped/ (chapter 7) and
# attention/circuits/shipped/ (chapter 14), both in the checkpoint's wheel
CHECKPOINT_MODULES = ("attention.gpt.run", "attention.circuits.run")
CHECKPOINT_MARK = "<div hidden data-run-checkpoint></div>"
LIVE_FIGURE = re.compile(r'class="live-figure" data-figure="([^"]+)"')


def imports_module(code: str, module: str) -> bool:
    """Whether ``code`` imports ``module``, or a name from it, anywhere."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == module for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and not node.level and (
                node.module == module
                or any(f"{node.module}.{a.name}" == module for a in node.names)):
            return True
    return False


def reads_checkpoint(function) -> bool:
    """Whether ``function`` imports the checkpoint's module, itself or through a function
    of its own module that it calls (a cached one too), at any depth."""
    names = function.__globals__
    codes, seen = [inspect.unwrap(function).__code__], set()
    while codes:
        code = codes.pop()
        if code in seen:
            continue
        seen.add(code)
        if set(CHECKPOINT_MODULES) & set(code.co_names):  # an import names its module
            return True
        codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
        for name in code.co_names:
            target = inspect.unwrap(names[name]) if callable(names.get(name)) else None
            if isinstance(target, types.FunctionType) and target.__globals__ is names:
                codes.append(target.__code__)
    return False


def needs_checkpoint(codes: list[str], figures: list[str]) -> bool:
    """Whether a page with these blocks and live figures reads chapter 7's checkpoint."""
    from attention.interactive import FIGURES

    return (any(imports_module(code, m) for code in codes for m in CHECKPOINT_MODULES)
            or any(reads_checkpoint(FIGURES[name].function) for name in figures
                   if name in FIGURES))


def mark_blocks(content: str, skips: dict, markdown: str = "") -> str:
    """A page's HTML with each Python block marked for run-in-page.js: its index
    (``data-run-block``), why the browser cannot run it (``data-run-needs``), its fence's
    band (``data-run-band``), and whether the page gives it to the reader to change
    (``data-run-yours``); the facts sentence written where the page asks for it.
    ``skips``: NOT_IN_BROWSER's entry for the page; ``markdown``: the page's source."""
    if FACTS in content:
        content = content.replace(FACTS, f"<p>{facts()}</p>")
    blocks = list(PYTHON_BLOCK.finditer(content))
    codes = [block_code(b.group(1)) for b in blocks]
    if needs_checkpoint(codes, LIVE_FIGURE.findall(content)):
        content += CHECKPOINT_MARK
    if not blocks:
        return content
    plan = browser_plan(codes, skips)
    pieces, last = [], 0
    bands = fence_bands(markdown, len(blocks))
    for index, (match, reason) in enumerate(zip(blocks, plan)):
        attrs = f'data-run-block="{index}"'
        if reason is not None:
            attrs += f' data-run-needs="{html.escape(reason)}"'
        if bands[index] is not None:
            attrs += f' data-run-band="{html.escape(bands[index])}"'
        if YOUR_TURN.search(content, last, match.start()):
            attrs += " data-run-yours"
        pieces += [content[last:match.start()],
                   f'<div class="language-python highlight" {attrs}>', match.group(1),
                   "</code></pre></div>"]
        last = match.end()
    return "".join(pieces) + content[last:]


def on_page_content(content, page, config, files):
    return mark_blocks(content, NOT_IN_BROWSER.get(page.file.src_uri, {}),
                       page.markdown or "")


@functools.cache
def served() -> dict[str, bytes]:
    """The runtime files as the site serves them, by name: the large ones gzipped
    (``name.gz``: the worker decompresses them), the lock file cut to its ``info``
    (the wheels are loaded by address, not looked up in it)."""
    runtime = ensure_runtime()
    out = {}
    for name in (*RUNTIME_FILES, NUMPY_WHEEL):
        data = (runtime / name).read_bytes()
        if name == "pyodide-lock.json":
            data = json.dumps({"info": json.loads(data)["info"], "packages": {}}).encode()
        if name in REPACKED:
            out[name + ".gz"] = repack(data, REPACKED[name])[0]
        elif name in GZIPPED:
            out[name + ".gz"] = gzip.compress(data, 9, mtime=0)
        else:
            out[name] = data
    return out


GZIPPED = ("pyodide.asm.wasm", "pyodide.asm.js")  # 10.1 MB -> 3.1, 1.3 MB -> 0.2
# Without what no code can use in the browser, gzipped as a whole (tools/site/
# runtime_repack.py): 3.06 MB -> 2.56, 2.36 MB -> 1.66.
REPACKED = {NUMPY_WHEEL: NUMPY_UNUSED, "python_stdlib.zip": STDLIB_UNUSED}


def download_bytes() -> int:
    """What the first Run fetches: the served files and the package's wheel, gzipped (a
    page that reads a shipped run adds ``gzipped(checkpoint_wheel_bytes())``)."""
    return sum(len(data) for data in served().values()) + len(gzipped(package_wheel_bytes()))


def runtime_versions() -> tuple[str, str]:
    """The Python and NumPy the browser runs."""
    lock = json.loads((ensure_runtime() / "pyodide-lock.json").read_text("utf8"))
    return lock["info"]["python"], NUMPY_WHEEL.split("-")[1]


def facts() -> str:
    """One sentence for the page that explains Run: the versions and the download."""
    python, numpy = runtime_versions()
    tested = f"{platform.python_version()} and NumPy {importlib.metadata.version('numpy')}"
    return (f"Your browser runs Python {python} and NumPy {numpy} (the pages were tested "
            f"with Python {tested}; the output of every block that runs here is checked in "
            "both). The first "
            f"Run downloads {download_bytes() / 1e6:.1f} MB once (the pages that use "
            f"chapters 7 and 14's trained models {len(gzipped(checkpoint_wheel_bytes())) / 1e6:.1f} MB "
            "more); later pages and visits take it from the browser's cache.")


def version() -> str:
    return re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text("utf8"), re.M)[1]


def wheel(dist: str, files: dict[str, bytes]) -> tuple[str, bytes]:
    """A pure-Python wheel of distribution ``dist`` holding ``files`` (path -> bytes): its
    file name and its bytes (the same bytes for the same files)."""
    dist = f"{dist}-{version()}"
    name = f"{dist}-py3-none-any.whl"
    meta = {f"{dist}.dist-info/METADATA":
            f"Metadata-Version: 2.1\nName: {dist.rsplit('-', 1)[0].replace('_', '-')}\n"
            f"Version: {version()}\n",
            f"{dist}.dist-info/WHEEL":
            "Wheel-Version: 1.0\nGenerator: tools.site.run_in_page\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    files = {**files, **{path: text.encode() for path, text in meta.items()}}
    record = [f"{path},sha256={hashlib.sha256(data).hexdigest()},{len(data)}"
              for path, data in files.items()]
    files[f"{dist}.dist-info/RECORD"] = ("\n".join(record + [f"{dist}.dist-info/RECORD,,"])
                                         + "\n").encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in files.items():
            info = zipfile.ZipInfo(path, (2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED  # a ZipInfo's own default is stored
            archive.writestr(info, data)
    return name, buffer.getvalue()


def is_checkpoint(path: Path) -> bool:
    """A data file of a shipped run: chapter 7's (attention/gpt/shipped/: tokenizer,
    weights, log) or chapter 14's (attention/circuits/shipped/: weights, log)."""
    return path.parent.name == "shipped" and path.is_file() and path.suffix != ".tmp"


@functools.cache
def package_wheel_bytes() -> tuple[str, bytes]:
    """A pure-Python wheel of the ``attention`` package's modules, built from this checkout.
    The browser installs it, and so do the downloadable notebooks
    (``tools/notebooks/chapter.py``)."""
    files = {path.relative_to(ROOT).as_posix(): path.read_bytes()
             for path in sorted((ROOT / PACKAGE).rglob("*.py"))}
    # Pages read benchmarks' results next to the package, as in the repository: installed
    # from this wheel, they are there too (site-packages/benchmarks/).
    files |= {name: (ROOT / name).read_bytes() for name in RESULTS}
    return wheel("attention_from_scratch", files)


NOTHING = re.compile(r"(?!)")  # a pattern no member name matches: repack keeps them all


@functools.cache
def gzipped(wheel_: tuple[str, bytes]) -> bytes:
    """A wheel as the browser fetches it: its members stored (not deflated one by one) and
    the whole gzipped, as the runtime's files are (``runtime_repack``), which compresses
    across the modules (their shared words and code) as one file; the worker unzips the
    stream and Pyodide installs the same files."""
    return repack(wheel_[1], NOTHING)[0]


@functools.cache
def checkpoint_wheel_bytes() -> tuple[str, bytes]:
    """Chapter 7's tokenizer, checkpoint and log as a wheel of their own, installed into
    the package's folder beside the modules: only the pages that read them fetch it."""
    return wheel("attention_from_scratch_checkpoint",
                 {path.relative_to(ROOT).as_posix(): path.read_bytes()
                  for path in sorted((ROOT / PACKAGE).rglob("*")) if is_checkpoint(path)})


def write_runtime(site_dir: Path) -> None:
    """Write what Run downloads into the built site: the runtime, NumPy's wheel, the
    package's wheel, chapter 7's checkpoint wheel (fetched only by the pages that read
    it), and the manifest of their names and sizes."""
    dest = Path(site_dir) / ASSETS
    dest.mkdir(parents=True, exist_ok=True)
    for name, data in served().items():
        (dest / name).write_bytes(data)
    files = {name.removesuffix(".gz"): {"gzip": name if name.endswith(".gz") else None,
                                        "bytes": len(data)}
             for name, data in served().items() if name != "pyodide.js"}  # importScripts
    package, checkpoint = package_wheel_bytes(), checkpoint_wheel_bytes()
    for name, data in (package, checkpoint):
        (dest / name).write_bytes(data)  # what a notebook's %pip installs
        (dest / f"{name}.gz").write_bytes(gzipped((name, data)))  # what Run fetches
        files[name] = {"gzip": f"{name}.gz", "bytes": len(gzipped((name, data)))}
    manifest = {"wheels": [NUMPY_WHEEL, package[0]], "checkpoint": checkpoint[0],
                "files": files, "download": sum(entry["bytes"] for name, entry in files.items()
                                                if name != checkpoint[0])}
    (dest / "manifest.json").write_text(json.dumps(manifest), "utf8")


def on_post_build(config):
    write_runtime(Path(config.site_dir))
