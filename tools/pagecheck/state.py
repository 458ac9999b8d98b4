"""What is reset before each page runs, so a page passes alone exactly when it passes in
the full run: NumPy's print options and global generator, ``random``, the working
directory, and Matplotlib (every figure closed, the course's figure style set)."""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np

_PRINT_OPTIONS = np.get_printoptions()


def reset_page_state(root: Path) -> None:
    np.set_printoptions(**_PRINT_OPTIONS)
    np.random.seed(0)
    random.seed(0)
    os.chdir(root)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tools.pagecheck.figures import STYLE

    plt.close("all")
    matplotlib.rcdefaults()
    matplotlib.use("Agg")
    plt.rcParams.update(STYLE)
