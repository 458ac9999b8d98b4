"""Chapter 12's KDA: its chunked form against its recurrence on long sequences.

    python benchmarks/kda_chunked.py           -> benchmarks/kda-chunked.json
    python benchmarks/kda_chunked.py --quick   (n up to 1024, for a check in seconds)

One head of Kimi Linear's size (d_k = d_v = 128), float32, unit-length q and k, a decay
per key channel; chunks of 16 and of 64 tokens (Hugging Face's chunk size). Both forms run side by side in this one process,
taking turns (``side_by_side.alternate``: the median of primed calls), so the ratio
compares them under the same load; the load average is stored with the times. The
outputs of the two forms are compared too (their largest difference, relative). BLAS
runs on one thread: both forms make many small products, and on a shared machine a
thread pool's waits, not the work, set their times.
"""

import argparse
import json
import os

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before NumPy loads its BLAS
os.environ["OMP_NUM_THREADS"] = "1"
import platform
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from attention.linear.kda import kimi_delta_attention  # noqa: E402
from side_by_side import alternate  # noqa: E402

SIZES = (1024, 4096, 16384)
QUICK_SIZES = (256, 1024)
D, CHUNKS = 128, (16, 64)


def inputs(n, seed=0):
    """q, k, v (1, n, D) float32, g (1, n, D) <= 0, beta (1, n)."""
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((1, n, D), dtype=np.float32)
               for _ in range(3))
    g = -np.exp(rng.standard_normal((1, n, D), dtype=np.float32) - 3)
    return q, k, v, g, rng.random((1, n), dtype=np.float32)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    records = []
    for n in QUICK_SIZES if args.quick else SIZES:
        x = inputs(n)
        runs = {"recurrent": lambda: kimi_delta_attention(*x)[0]} | {
            f"chunks of {C}": lambda C=C: kimi_delta_attention(
                *x, chunk_size=C)[0] for C in CHUNKS}
        seconds = alternate(runs, rounds=3)
        outs = {name: run() for name, run in runs.items()}
        rec = outs.pop("recurrent")
        gap = max(float(np.abs(o - rec).max() / np.abs(rec).max())
                  for o in outs.values())
        records.append({"n": n, "seconds": seconds,
                        "relative_difference": gap})
        print(n, {k: f"{s * 1e3:.0f} ms" for k, s in seconds.items()},
              f"difference {gap:.1e}")
    out = {"d_k": D, "d_v": D, "dtype": "float32",
           "blas_threads": 1,
           "machine": platform.machine(), "load_average": os.getloadavg(),
           "records": records}
    name = "kda-chunked-quick.json" if args.quick else "kda-chunked.json"
    path = ROOT / "benchmarks" / name
    path.write_text(json.dumps(out, indent=1) + "\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
