"""A new chapter needs the five files of CONTRIBUTING's "Add a chapter" checklist, and
nothing else: this test follows the checklist in a temporary copy of the repository, runs
`make outputs` on the new page, and then `make test`'s checks that concern a chapter (its
page, its exercises, its practice page and notebook, the drills page, the site), in a
subprocess."""

import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.support import ROOT
from tools.site.pyodide_runtime import CACHE, ensure_runtime

PAGE = '''---
title: A throwaway chapter
description: Exists only inside a test, to prove that a chapter needs five files.
level: Beginner
learn:
  - that a chapter needs five files
assumes:
  - nothing
---

# 99. A throwaway chapter

```python
import matplotlib.pyplot as plt
import numpy as np

print(np.arange(3) * 2)
```

```{.python figure="ch99-line"}
fig, ax = plt.subplots(figsize=(3, 2))
ax.plot([0, 1, 2], [0, 1, 4])
```

![A parabola](../assets/figures/ch99-line.svg)

??? question "Why does this chapter exist?"
    To prove that a chapter needs five files.

## Practice

```python title="exercises/ch99.py"
--8<-- "exercises/ch99.py:imports"
```

### Exercise 1: Double it

*Difficulty: easy. Trains: following the checklist.*

Write `double(x)`, which returns twice the array `x` (a new array; `x` stays as it was).

```python title="exercises/ch99.py"
--8<-- "exercises/ch99.py:ex1-starter"
```

```python
check_double(double)
```

??? tip "Hint 1"
    Multiply every entry by two, into a new array.

??? success "Solution"
    ```python title="exercises/ch99.py"
    --8<-- "exercises/ch99.py:ex1-solution"
    ```

    ```python
    check_double(double)
    ```
'''

EXERCISES = '''"""Exercises of the throwaway chapter."""

# --8<-- [start:imports]
from attention.practice.ch99 import check_double
# --8<-- [end:imports]

# --8<-- [start:ex1-starter]
def double(x):
    return x  # Your code: twice x
# --8<-- [end:ex1-starter]

# --8<-- [start:ex1-solution]
def double(x):
    return 2 * x
# --8<-- [end:ex1-solution]

# --8<-- [start:ex1-wrong-square]
# rejected with: is not 2 x
def double(x):
    return x * x
# --8<-- [end:ex1-wrong-square]

# --8<-- [start:ex1-wrong-add]
# rejected with: is not 2 x
def double(x):
    return x + 2
# --8<-- [end:ex1-wrong-add]

# --8<-- [start:ex1-wrong-in-place]
# rejected with: in place
def double(x):
    x *= 2
    return x
# --8<-- [end:ex1-wrong-in-place]
'''

CHECKS = '''"""Self-checks of the throwaway chapter."""

import numpy as np

from attention.practice.trials import fresh_rng, kind_problem
from attention.practice.verdict import call, verdict


def check_double(double) -> bool:
    rng = fresh_rng()
    for shape in ((3,), (2, 5)):
        x = rng.normal(size=shape)
        result, error = call(double, x)
        if error:
            return verdict(False, error)
        problem = kind_problem(result, 2 * x, "double(x)")
        if problem:
            return verdict(False, problem)
        if np.shape(result) != x.shape or not np.allclose(result, 2 * x):
            return verdict(False, f"on a random {shape} input, double(x) is not 2 x.")
    return verdict(True, "double(x) is 2 x on random inputs.")
'''

CHECKLIST = {
    "docs/chapters/ch99-throwaway.md",
    "mkdocs.yml",
    "exercises/ch99.py",
    "attention/practice/ch99.py",
    "docs/assets/figures/ch99-line.svg",
}


def copy_repository(target):
    """The checkout's files as git sees them, and the verified browser runtime (git-ignored,
    prepared by `make`), which the copy's site build would otherwise fetch again from npm
    and PyPI."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    shutil.copytree(ensure_runtime(), target / CACHE.relative_to(ROOT))


def add_nav_line(mkdocs_yml):
    lines = mkdocs_yml.read_text("utf8").split("\n")
    last = max(i for i, line in enumerate(lines) if re.match(r"^\s+- chapters/ch\d\d-", line))
    indent = lines[last][: len(lines[last]) - len(lines[last].lstrip())]
    lines.insert(last + 1, f"{indent}- chapters/ch99-throwaway.md")
    mkdocs_yml.write_text("\n".join(lines), "utf8")


def pytest_in(repo, *args):
    env = {**os.environ, "PYTHONPATH": str(repo), "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=900)


def changed_files(repo) -> set[str]:
    changed = set()
    for path in repo.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            name = path.relative_to(repo).as_posix()
            original = ROOT / name
            if not original.is_file() or original.read_bytes() != path.read_bytes():
                changed.add(name)
    return changed


# A minute of `make test`'s checks run again on a copy: left to `make audit`, which CI runs.
@pytest.mark.audit
def test_a_chapter_from_the_checklist_alone_passes_every_check(tmp_path):
    repo = tmp_path / "repo"
    copy_repository(repo)
    (repo / "docs/chapters/ch99-throwaway.md").write_text(PAGE, "utf8")
    add_nav_line(repo / "mkdocs.yml")
    (repo / "exercises/ch99.py").write_text(EXERCISES, "utf8")
    (repo / "attention/practice/ch99.py").write_text(CHECKS, "utf8")

    outputs = pytest_in(repo, "docs/chapters/ch99-throwaway.md", "--update-outputs")  # make outputs
    assert outputs.returncode == 0, outputs.stdout + outputs.stderr
    assert changed_files(repo) == CHECKLIST | {"docs/chapters/ch99-throwaway.md"}

    checks = pytest_in(
        repo, "docs/chapters/ch99-throwaway.md", "tests/practice", "tests/site/test_render.py",
        "tests/site/test_features.py", "tests/site/test_hooks.py", "-k",
        "ch99 or practice_pages_are_generated or drills_page or site_builds or questions "
        "or header",
    )
    report = checks.stdout + checks.stderr
    assert checks.returncode == 0, report
    passed = int(re.search(r"(\d+) passed", report)[1])
    assert passed >= 10, report
