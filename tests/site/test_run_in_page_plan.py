"""Which blocks the reader's browser runs: decided from the code at build time."""

import subprocess
import sys

from tests.support import ROOT
from tools.site.run_in_page import browser_plan


def test_importing_a_missing_library_runs_and_using_it_does_not():
    plan = browser_plan(["import numpy as np\nimport torch", "x = np.ones(2)",
                         "t = torch.ones(2)"])
    assert plan == [None, None, "needs PyTorch"]


def test_names_from_a_block_that_cannot_run_are_missing_until_rebound():
    plan = browser_plan(["import torch", "t = torch.ones(2)", "print(t)", "t = 1",
                         "print(t)"])
    assert plan[2] == "uses `t` from a block that does not run here"
    assert plan[3:] == [None, None]


def test_a_function_parameter_or_loop_target_is_not_the_missing_global():
    plan = browser_plan(["import matplotlib.pyplot as plt\nx = plt.gca()\nfor T in (1,):"
                         "\n    plt.plot([T])",
                         "def f(x):\n    return x + 1", "for T in (1, 2):\n    print(T)",
                         "print([x for x in range(3)])"])
    assert plan == ["needs Matplotlib", None, None, None]


def test_blocks_kept_out_by_hand_say_why_and_their_names_follow():
    plan = browser_plan(["slow = 1  # the big one", "print(slow)"],
                        {"the big one": "too slow"})
    assert plan == ["too slow", "uses `slow` from a block that does not run here"]


def test_each_page_keeps_its_own_print_options_and_random_generators():
    """The worker's Python (run-worker.js), run here by CPython: what one page sets of the
    state pages share does not reach another page, and is there again when its page runs."""
    worker = (ROOT / "docs" / "javascripts" / "run-worker.js").read_text("utf8")
    prelude = worker.split("const PRELUDE = `", 1)[1].split("`;", 1)[0]
    runs = [("a", "import numpy as np, random\nnp.set_printoptions(precision=1)\n"
                  "print(np.ones(1) / 3, np.random.random(), random.random())"),
            ("b", "import numpy as np, random\n"
                  "print(np.ones(1) / 3, np.random.random(), random.random())"),
            ("a", "print(np.ones(1) / 3, np.random.random())")]
    script = prelude + "".join(f"\nprint(*_run({page!r}, {code!r}), sep='|', end='')"
                               for page, code in runs)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout
    fresh = "0.5488135039273248 0.8444218515250481"  # seed 0, as the page checker seeds
    assert out.split("None") == [f"[0.3] {fresh}\n|", f"[0.33333333] {fresh}\n|",
                                 "[0.3] 0.7151893663724195\n|", ""]
