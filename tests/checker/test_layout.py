"""The repository's layout rules, checked: tests mirror what they test, every test folder
is a package (two test files may share a basename), nothing edits ``sys.path``, and pages
import nothing from the tooling."""

import re

from tests.support import ROOT

MIRRORS = {"package", "pages", "checker", "site", "practice", "ci"}
PAGE_IMPORT = re.compile(r"^\s*(?:from|import)\s+(?P<module>[\w.]+)", re.M)
ALLOWED_ON_PAGES = {"attention", "numpy", "torch", "transformers", "matplotlib"}
# Pages that import one more library, and why.
EXCEPTIONS = {"docs/blog/posts/self-attention-numpy.md": {"threadpoolctl"},  # BLAS threads
              # the reference the chapter's tokenizer is checked against
              "docs/chapters/ch07-train-a-gpt.md": {"tokenizers"}}


def test_tests_mirror_what_they_test_and_every_folder_is_a_package():
    assert not list((ROOT / "tests").glob("test_*.py")), "put tests in a mirror folder"
    folders = {p.parent for p in (ROOT / "tests").rglob("test_*.py") if "fixtures" not in p.parts}
    assert {f.name for f in folders} <= MIRRORS
    for folder in folders | {ROOT / "tests"}:
        assert (folder / "__init__.py").exists(), f"{folder} needs an __init__.py"


def test_two_test_files_may_share_a_basename(tmp_path):
    # Module names come from the package path (tests.site.test_x, tests.pages.test_x).
    names = [p.name for p in (ROOT / "tests").rglob("test_*.py") if "fixtures" not in p.parts]
    assert len(names) >= 2  # the rule above is what makes duplicates safe


def sys_path_edits(source: str) -> list[int]:
    """Lines of the code (not of strings: a subprocess's script is its own business) that
    change ``sys.path``."""
    import ast

    edits = []
    for node in ast.walk(ast.parse(source)):
        target = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target = node.func.value  # sys.path.insert(...), sys.path.append(...)
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            target = next((t.value if isinstance(t, ast.Subscript) else t for t in targets), None)
        if target is not None and ast.unparse(target) == "sys.path":
            edits.append(node.lineno)
    return edits


def test_no_test_edits_sys_path():
    for path in (ROOT / "tests").rglob("*.py"):
        assert not sys_path_edits(path.read_text("utf8")), f"{path}: lines {sys_path_edits(path.read_text('utf8'))}"
    assert sys_path_edits("import sys\nsys.path.insert(0, 'x')\n") == [2]
    assert sys_path_edits("script = 'sys.path.insert(0, x)'\n") == []


def test_pages_import_only_the_package_libraries_and_the_standard_library():
    import sys

    from tools.source.markdown import read_page

    for page in [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]:
        for block in read_page(page, ROOT).blocks:
            for match in PAGE_IMPORT.finditer(block.code):
                top = match["module"].split(".")[0]
                allowed = ALLOWED_ON_PAGES | EXCEPTIONS.get(page.relative_to(ROOT).as_posix(), set())
                assert top in allowed or top in sys.stdlib_module_names, (
                    f"{page.relative_to(ROOT)}:{block.line} imports {match['module']}"
                )
