"""Every number marked ``~`` on a page truly varies between runs.

A block whose ``~`` numbers come out identical in two runs of its page is deterministic:
it must print exact numbers, so that a stale value fails. Each page with markers runs
twice (three times when a block came out the same twice), each time in a fresh process,
as far as its last marked block (``tools/pagecheck/varying.py``). The pages with markers
are the timing pages and the exercises' verdicts, nine of them: 2 min 40 s in all,
serially, on two shared CPU cores (December 2026), so the pages are checked by
``make audit`` (which CI runs after ``make test``); ``make test`` checks the check itself,
on a page of two blocks.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT
from tools.pagecheck.varying import marked_blocks

# A page runs a third time only if a block came out the same in the first two: a timing
# printed to a few digits can repeat by chance, three times seldom.
RUNS = 3
PAGES = sorted(path.relative_to(ROOT).as_posix()
               for path in [*ROOT.glob("docs/**/*.md"), ROOT / "README.md"]
               if marked_blocks(path, ROOT))


def marked_numbers(page: Path, root: Path, out: Path) -> dict[str, list]:
    """The printed numbers of the page's marked blocks, by fence line, in a fresh process
    whose working folder is the page's repository, ``root``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    subprocess.run([sys.executable, "-m", "tools.pagecheck.varying", str(page), str(out)],
                   cwd=root, env=env, check=True, timeout=1800)
    return json.loads(out.read_text())


def unvarying_blocks(page: Path, root: Path, scratch: Path) -> list[str]:
    """The lines (counted from 1) of the fences of the marked blocks whose numbers came
    out the same in every run (``marked_numbers`` counts them from 0, as the checker)."""
    runs = [marked_numbers(page, root, scratch / "1.json")]
    for attempt in range(2, RUNS + 1):
        runs.append(marked_numbers(page, root, scratch / f"{attempt}.json"))
        same = [line for line, numbers in runs[0].items()
                if None not in numbers and all(run[line] == numbers for run in runs)]
        if not same:
            break
    return [str(int(line) + 1) for line in same]


@pytest.mark.audit
@pytest.mark.parametrize("page", PAGES)
def test_each_block_with_varying_numbers_varies_between_two_runs(page, tmp_path):
    same = unvarying_blocks(ROOT / page, ROOT, tmp_path)
    assert not same, (
        f"{page}: the ~ numbers of the block(s) at line(s) {', '.join(same)} came out "
        f"identical in {RUNS} runs of the page: they do not vary, so print them exactly "
        "(drop the ~), or print a bound the code asserts")


TWO_BLOCKS = '''# A page

```python
import time
print(f"{time.perf_counter_ns() % 1000} ns")
```

```text title="Output"
~512 ns
```

```python
print(f"{2 / 3:.3f}")
```

```text title="Output"
~0.667
```
'''


def test_the_check_names_the_marked_block_that_never_varies(tmp_path):
    """A clock reading varies from run to run, two thirds does not: only its block (its
    fence is the page's 13th line) is reported."""
    page = tmp_path / "page.md"
    page.write_text(TWO_BLOCKS, "utf8")
    scratch = tmp_path / "runs"
    scratch.mkdir()
    assert unvarying_blocks(page, tmp_path, scratch) == ["13"]
