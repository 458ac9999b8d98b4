"""MkDocs hook: the reader can run and edit a page's Python blocks in the browser.

Each Python block gets Run, Edit, Restore and Restart controls (``docs/javascripts/
run-in-page.js``), which send its code to Pyodide in a Web Worker (``run-worker.js``). The
site serves the runtime itself: ``on_post_build`` copies the verified Pyodide runtime and
NumPy wheel (``tools/site/pyodide_runtime.py``) and a pure-Python wheel of the ``attention``
package, built from this checkout, into ``assets/pyodide/``. Nothing is downloaded until
the reader first presses Run.

Which blocks can run there is decided here, at build time, from the code itself: the
browser has NumPy, the ``attention`` package and the standard library, nothing else. An
import of anything else (PyTorch, Transformers, Matplotlib) still succeeds in the browser
(the worker installs stand-in modules), so a block that only imports runs; a block that
*uses* such a name, or a name bound by a block that could not run, says what it needs
instead of offering Run, and keeps the output the tests checked.
"""

from __future__ import annotations

import ast
import hashlib
import html
import json
import re
import shutil
import symtable
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # mkdocs loads hooks by path
    sys.path.insert(0, str(ROOT))

from tools.site.pyodide_runtime import NUMPY_WHEEL, RUNTIME_FILES, ensure_runtime  # noqa: E402

ASSETS = "assets/pyodide"
PACKAGE = "attention"
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
    "chapters/ch05-attention-at-scale.md": {
        "results.json": "reads the benchmark's results from the repository",
        "time of q @ k.T": "times products of up to (8192, 64) @ (64, 8192): minutes "
                           "in WebAssembly, which has no BLAS",
    },
}

PYTHON_BLOCK = re.compile(r'<div class="language-python highlight">(.*?)</code></pre></div>', re.S)
TAG = re.compile(r"<[^>]+>")


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


def browser_plan(codes: list[str], skips: dict[str, str] | None = None) -> list[str | None]:
    """For each block in page order: None if it runs in the browser, else why not."""
    missing: dict[str, str] = {}  # name -> why a block that reads it cannot run
    plan: list[str | None] = []
    for code in codes:
        reason = next((why for text, why in (skips or {}).items() if text in code), None)
        try:
            statements = ast.parse(code).body
        except SyntaxError:
            plan.append(reason)  # the browser shows the SyntaxError, as Python would
            continue
        bound: set[str] = set()
        for statement in statements:
            if isinstance(statement, (ast.Import, ast.ImportFrom)):
                modules = ([a.name for a in statement.names] if isinstance(statement, ast.Import)
                           else [statement.module or ""])
                top = modules[0].split(".")[0]
                for alias in statement.names:
                    name = (alias.asname or alias.name).split(".")[0]
                    if top in IN_BROWSER:
                        missing.pop(name, None)
                    else:  # importing works in the browser (a stand-in); using it does not
                        missing[name] = f"needs {WHAT.get(top, top)}"
                continue
            for reads, binds in effects(statement):
                if reason is None:
                    reason = next((missing[name] for name in sorted(reads) if name in missing),
                                  None)
                bound |= binds
                for name in binds:
                    missing.pop(name, None)
        if reason is not None:
            for name in bound:  # what this block would have defined does not exist there
                missing.setdefault(name, f"uses `{name}` from a block that does not run here")
        plan.append(reason)
    return plan


def on_page_content(content, page, config, files):
    blocks = list(PYTHON_BLOCK.finditer(content))
    if not blocks:
        return content
    skips = NOT_IN_BROWSER.get(page.file.src_uri, {})
    plan = browser_plan([block_code(b.group(1)) for b in blocks], skips)
    pieces, last = [], 0
    for index, (match, reason) in enumerate(zip(blocks, plan)):
        attrs = f'data-run-block="{index}"'
        if reason is not None:
            attrs += f' data-run-needs="{html.escape(reason)}"'
        pieces += [content[last:match.start()],
                   f'<div class="language-python highlight" {attrs}>', match.group(1),
                   "</code></pre></div>"]
        last = match.end()
    return "".join(pieces) + content[last:]


def package_wheel(dest: Path) -> str:
    """A pure-Python wheel of the ``attention`` package, built from this checkout."""
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text("utf8"), re.M)[1]
    dist = f"attention_from_scratch-{version}"
    name = f"{dist}-py3-none-any.whl"
    files = {f"{dist}.dist-info/METADATA":
             f"Metadata-Version: 2.1\nName: attention-from-scratch\nVersion: {version}\n",
             f"{dist}.dist-info/WHEEL":
             "Wheel-Version: 1.0\nGenerator: tools.site.run_in_page\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    files = {path: text.encode() for path, text in files.items()}
    # The modules, and the data files that travel with them: chapter 7's tokenizer,
    # checkpoint and log (attention/gpt/shipped/), read by the pages as by the tests.
    for path in sorted((ROOT / PACKAGE).rglob("*")):
        if path.suffix == ".py" or (path.parent.name == "shipped" and path.is_file()
                                    and path.suffix != ".tmp"):
            files[path.relative_to(ROOT).as_posix()] = path.read_bytes()
    record = [f"{path},sha256={hashlib.sha256(data).hexdigest()},{len(data)}"
              for path, data in files.items()]
    files[f"{dist}.dist-info/RECORD"] = ("\n".join(record + [f"{dist}.dist-info/RECORD,,"])
                                         + "\n").encode()
    with zipfile.ZipFile(dest / name, "w", zipfile.ZIP_DEFLATED) as wheel:
        for path, data in files.items():
            wheel.writestr(zipfile.ZipInfo(path, (2020, 1, 1, 0, 0, 0)), data)
    return name


def on_post_build(config):
    runtime = ensure_runtime()
    dest = Path(config.site_dir) / ASSETS
    dest.mkdir(parents=True, exist_ok=True)
    for name in (*RUNTIME_FILES, NUMPY_WHEEL):
        shutil.copyfile(runtime / name, dest / name)
    manifest = {"wheels": [NUMPY_WHEEL, package_wheel(dest)]}
    (dest / "manifest.json").write_text(json.dumps(manifest), "utf8")
