"""Every number marked ``~`` on a page truly varies between runs.

A block whose ``~`` numbers come out identical in two runs of its page is deterministic:
it must print exact numbers, so that a stale value fails. Each page with markers runs
twice (three times when a block came out the same twice), each time in a fresh process,
as far as its last marked block (``tools/pagecheck/varying.py``). The pages with markers
are the timing pages and the exercises' verdicts, nine of them: 2 min 40 s in all,
serially, on two shared CPU cores (December 2026).
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


def marked_numbers(page: str, out: Path) -> dict[str, list]:
    """The printed numbers of the page's marked blocks, by fence line, in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    subprocess.run([sys.executable, "-m", "tools.pagecheck.varying", page, str(out)],
                   cwd=ROOT, env=env, check=True, timeout=1800)
    return json.loads(out.read_text())


@pytest.mark.parametrize("page", PAGES)
def test_each_block_with_varying_numbers_varies_between_two_runs(page, tmp_path):
    runs = [marked_numbers(page, tmp_path / "1.json")]
    for attempt in range(2, RUNS + 1):
        runs.append(marked_numbers(page, tmp_path / f"{attempt}.json"))
        same = [line for line, numbers in runs[0].items()
                if None not in numbers and all(run[line] == numbers for run in runs)]
        if not same:
            return
    assert not same, (
        f"{page}: the ~ numbers of the block(s) at line(s) {', '.join(same)} came out "
        f"identical in {RUNS} runs of the page: they do not vary, so print them exactly "
        "(drop the ~), or print a bound the code asserts")
