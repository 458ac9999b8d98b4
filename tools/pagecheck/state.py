"""What is reset before each page runs, so a page passes alone exactly when it passes in
the full run: NumPy's print options, error handling and global generator, ``random``,
PyTorch's generator (once imported), the working directory, the environment variables,
``sys.path``, the builtins, the ``decimal`` context, the attributes of the course's
package and of NumPy (a page that patches ``attention.softmax`` or ``np.sum``), and
Matplotlib (every figure closed, the course's figure style set).

The state to return to is taken once, just before the first page runs (``Baseline``).
"""

from __future__ import annotations

import builtins
import decimal
import importlib
import importlib.abc
import importlib.util
import os
import pkgutil
import random
import sys
from pathlib import Path
from types import ModuleType

import numpy as np

_PRINT_OPTIONS = np.get_printoptions()
_ERROR_STATE = np.geterr()

# Modules whose attributes a page must not change for the pages after it, besides the
# course's package.
PATCHABLE = ("numpy", "numpy.linalg", "numpy.random", "math", "random")
_MISSING = object()
PYTEST_OWN = {"PYTEST_CURRENT_TEST"}  # set by pytest for each test: not a page's to keep


def course_modules() -> list[ModuleType]:
    """The course's package and every module in it, imported, and the PATCHABLE ones."""
    found = []
    try:
        package = importlib.import_module("attention")
    except ImportError:  # a checker test's fixture folder: no package to protect
        package = None
    if package is not None:
        for info in pkgutil.walk_packages(package.__path__, "attention."):
            found.append(importlib.import_module(info.name))
        found.append(package)
    return found + [importlib.import_module(name) for name in PATCHABLE]


class SeedTorchOnImport(importlib.abc.MetaPathFinder):
    """Seeds PyTorch's generator (0) as it is first imported, as each later page finds it
    seeded: a fresh torch seeds itself at random, so a page drawing from it would print the
    same numbers only after a page that imported torch."""

    def find_spec(self, name, path, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)  # once, and not for the search below
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            run = spec.loader.exec_module

            def exec_and_seed(module):
                run(module)
                module.manual_seed(0)

            spec.loader.exec_module = exec_and_seed
        return spec


class Baseline:
    """The process state the pages start from, taken before the first page runs."""

    def __init__(self) -> None:
        self.environ = {k: v for k, v in os.environ.items() if k not in PYTEST_OWN}
        self.path = list(sys.path)
        self.builtins = dict(vars(builtins))
        self.decimal = decimal.getcontext().copy()
        self.modules = {module: dict(vars(module)) for module in course_modules()}
        if "torch" not in sys.modules:
            sys.meta_path.insert(0, SeedTorchOnImport())

    def restore(self) -> None:
        environ = {k: v for k, v in os.environ.items() if k not in PYTEST_OWN}
        if environ != self.environ:
            for name in environ.keys() - self.environ.keys():
                del os.environ[name]
            os.environ.update(self.environ)
        sys.path[:] = self.path
        restore_namespace(vars(builtins), self.builtins, keep_added=False)
        decimal.setcontext(self.decimal.copy())
        for module, namespace in self.modules.items():
            # A submodule imported later becomes an attribute of its package: keep those.
            restore_namespace(vars(module), namespace, keep_added=True)


def restore_namespace(current: dict, saved: dict, keep_added: bool) -> None:
    """Put back every name of ``saved`` as it was; drop the names added since (modules,
    which an import adds to its package, are kept when ``keep_added``)."""
    for name in [n for n in current if n not in saved]:
        if not (keep_added and isinstance(current[name], ModuleType)):
            del current[name]
    for name, value in saved.items():
        if current.get(name, _MISSING) is not value:
            current[name] = value


def reset_page_state(root: Path, baseline: Baseline) -> None:
    baseline.restore()
    np.set_printoptions(**_PRINT_OPTIONS)
    np.seterr(**_ERROR_STATE)
    np.random.seed(0)
    random.seed(0)
    if "torch" in sys.modules:  # else it is seeded as it is imported (SeedTorchOnImport)
        sys.modules["torch"].manual_seed(0)
    os.chdir(root)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tools.pagecheck.figures import STYLE

    plt.close("all")
    matplotlib.rcdefaults()
    matplotlib.use("Agg")
    plt.rcParams.update(STYLE)
