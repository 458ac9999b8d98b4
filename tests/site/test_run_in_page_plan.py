"""Which blocks the reader's browser runs: decided from the code at build time."""

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
