"""Chapter 10's crossover: causal linear attention in its three forms against blocked
softmax attention, one head of d = 64 features, float32, as n grows.

    python benchmarks/linear_crossover.py    -> benchmarks/linear-crossover.json

Each time is the least wall-clock time of five calls of ``attention.linear.timing.time_forms``
(the function the chapter-10 page times live at small sizes); the page draws its figure
from this file, so the figure shows this machine's run, with its load average.
"""

import json
import os
import platform
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from attention.linear.timing import time_forms  # noqa: E402

SIZES = (128, 256, 512, 1024, 2048, 4096, 8192)
PARALLEL_UP_TO = 4096  # its n x n matrix: 256 MiB at 8192 in float32, and a copy


def main():
    records = []
    for n in SIZES:
        times = time_forms(n, d=64, chunk_size=64)
        for form, seconds in times.items():
            if form == "linear, parallel" and n > PARALLEL_UP_TO:
                continue
            records.append({"form": form, "n": n, "seconds": seconds})
        print(n, {f: f"{s * 1e3:.1f} ms" for f, s in times.items()})
    out = {"d": 64, "chunk_size": 64, "dtype": "float32",
           "machine": platform.machine(), "load_average": os.getloadavg(),
           "records": records}
    path = ROOT / "benchmarks" / "linear-crossover.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
