"""Time blocked_attention as it was at several git revisions, side by side with PyTorch.

    python benchmarks/compare.py 8x4096 7acff16 HEAD            # without a mask
    python benchmarks/compare.py 8x4096 7acff16 HEAD --causal

Each revision's whole `attention` package is imported apart from the others (taken
with `git archive`), and their kernels and PyTorch's fused SDPA take turns in one
process, each timed call right after untimed ones of the same function (primed_time).
We print each revision's median time and the median of its per-round ratio to PyTorch,
and the load average (1 min): how chapter 5's table of what each step bought is measured.
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.side_by_side import primed_time  # noqa: E402


def kernel_at(revision: str, folder: Path):
    """blocked_attention as it was at ``revision``, with the package of that revision."""
    archive = subprocess.run(["git", "archive", revision, "attention"], cwd=ROOT,
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    ours = {name: sys.modules.pop(name) for name in list(sys.modules)
            if name.split(".")[0] == "attention"}  # the working tree's, set aside
    sys.path.insert(0, str(folder))
    try:
        return importlib.import_module("attention.blocked").blocked_attention
    finally:
        sys.path.remove(str(folder))
        for name in [name for name in sys.modules if name.split(".")[0] == "attention"]:
            del sys.modules[name]  # the revision's modules live on in its functions
        sys.modules.update(ours)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("case", help="heads x n, e.g. 8x4096")
    parser.add_argument("revisions", nargs="+", help="git revisions to compare")
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv)
    heads, n = map(int, args.case.split("x"))
    rng = np.random.default_rng(n + heads)
    # (heads, n, d) each, and (1, heads, n, d) views of the same memory for PyTorch
    q, k, v = (rng.standard_normal((heads, n, 64), dtype=np.float32) for _ in range(3))
    tq, tk, tv = (torch.from_numpy(a)[None] for a in (q, k, v))
    runs = {"torch-sdpa": lambda: F.scaled_dot_product_attention(
        tq, tk, tv, is_causal=args.causal)}
    with tempfile.TemporaryDirectory() as folder:
        for i, revision in enumerate(args.revisions):
            kernel = kernel_at(revision, Path(folder) / str(i))
            runs[revision] = (lambda kernel=kernel:
                              kernel(q, k, v, causal=args.causal))
        load = os.getloadavg()[0]
        times = {name: [] for name in runs}
        order = list(runs)
        for round_ in range(args.rounds):  # rotate who goes first
            for name in order[round_ % len(order):] + order[:round_ % len(order)]:
                times[name].append(primed_time(runs[name]))
    torch_times = times.pop("torch-sdpa")
    print(f"{heads} x {n}, causal={args.causal}: PyTorch "
          f"{statistics.median(torch_times) * 1e3:.1f} ms; load {load:.1f} -> "
          f"{os.getloadavg()[0]:.1f}")
    for name, t in times.items():
        ratio = statistics.median(a / b for a, b in zip(t, torch_times))
        print(f"  {name:12} {statistics.median(t) * 1e3:7.1f} ms   "
              f"blocked / PyTorch {ratio:.2f}")


if __name__ == "__main__":
    main()
