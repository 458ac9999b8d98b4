"""The package's shape (issue 42): read from the source's imports, nothing is run.

Counting each top-level module of ``attention`` and each subpackage as one unit, no
import loop runs between units; no module imports another module's underscore name;
chapter 3's blocks import nothing from Part II (chapters 7 on); and outside the family
modules no code asks which family it is running (``.arch ==``)."""

import ast
import re

from tests.support import ROOT

PACKAGE = ROOT / "attention"
PART_TWO = ("gpt", "long_context", "families", "linear", "serving",
            "sparse")


def unit(module):
    """attention.x.y -> "x": a top-level module or a subpackage."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "attention" else None


def imports():
    """(importing module, imported module, names) for every import."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.append((module, node.module,
                              [a.name for a in node.names]))
            elif isinstance(node, ast.Import):
                found += [(module, a.name, []) for a in node.names]
    return found


def loops(edges):
    """The strongly connected groups of more than one unit (Tarjan)."""
    index, low, stack, on, groups = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in list(edges):
        if v not in index:
            visit(v)
    return groups


def test_no_import_loop_between_the_packages_units():
    edges = {}
    for source, target, _ in imports():
        a, b = unit(source), unit(target)
        if a and b and a != b:
            edges.setdefault(a, set()).add(b)
    assert loops(edges) == []


def test_no_module_imports_another_modules_underscore_name():
    private = [(source, target, name) for source, target, names in imports()
               if target.startswith("attention") for name in names
               if name.startswith("_") and not name.startswith("__")]
    assert private == []


def test_chapter_3s_blocks_import_nothing_from_part_two():
    used = {unit(target) for source, target, _ in imports()
            if source == "attention.blocks"}
    assert not used & set(PART_TWO), used


def test_no_module_asks_which_family_is_running():
    # A family's own module declares its parts; the cost counters read them too
    # (``family.parts["mixer"]``), so not even attention/families asks for a name.
    asks = re.compile(r"\.arch\s*(==|!=|in\b)")
    allowed = (PACKAGE / "practice",)
    found = [f"{path.relative_to(ROOT)}:{i}"
             for path in PACKAGE.rglob("*.py")
             if not any(folder in path.parents for folder in allowed)
             for i, line in enumerate(path.read_text().splitlines(), 1)
             if asks.search(line)]
    assert found == []
