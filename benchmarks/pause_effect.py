"""How a pause before a call changes plain NumPy attention's time, in one process.

    python benchmarks/pause_effect.py               # 1 x 4096, pauses 0 to 3 s
    python benchmarks/pause_effect.py --n 8192 --rounds 5

Plain attention allocates several n x n temporaries per call and frees them at the end.
On a virtual machine whose kernel reports free memory to the host (the virtio balloon's
free page reporting, about two seconds after memory is freed), a call that comes after a
pause finds its memory handed back and faults it in anew. This script times the same call
after each pause, in turns, and prints the median per pause, and whether this machine's
balloon driver reports free pages at all.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from attention import attention  # noqa: E402


def reports_free_pages() -> bool | None:
    """Whether a virtio balloon with free page reporting (feature bit 5) is bound here."""
    devices = list(Path("/sys/bus/virtio/devices").glob("*"))
    if not devices:
        return None
    for device in devices:
        driver = device / "driver"
        if driver.exists() and driver.resolve().name == "virtio_balloon":
            features = (device / "features").read_text().strip()
            return len(features) > 5 and features[5] == "1"
    return False


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--pauses", type=float, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, args.n, 64), dtype=np.float32) for _ in range(3))
    attention(q, k, v)  # warm-up
    times = {pause: [] for pause in args.pauses}
    for _ in range(args.rounds):
        for pause in args.pauses:
            time.sleep(pause)
            start = time.perf_counter()
            attention(q, k, v)
            times[pause].append(time.perf_counter() - start)
    print(f"plain attention, 1 x {args.n} x 64, float32; free page reporting: "
          f"{reports_free_pages()}")
    for pause, t in times.items():
        print(f"  after a pause of {pause:g} s: {statistics.median(t) * 1e3:7.1f} ms "
              f"(median of {args.rounds})")


if __name__ == "__main__":
    main()
