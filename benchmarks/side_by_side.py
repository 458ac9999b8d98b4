"""Side-by-side timing of the same calls in one fresh process, for checking the benchmark.

    python benchmarks/side_by_side.py                 # blocked NumPy against PyTorch SDPA
    python benchmarks/side_by_side.py --plain         # also plain NumPy (slow)
    python benchmarks/side_by_side.py --rounds 9 --cases 8x4096 1x8192

No allocator settings, no memory measurement, nothing else in between: each round times
every implementation once, in turn (each timed call right after untimed ones of the
same implementation), and we report the best and the median of the rounds, the ratio
blocked / PyTorch of each, and the load average (1 min) before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from attention import attention, blocked_attention  # noqa: E402


def runners(heads: int, n: int, causal: bool, plain: bool, d: int = 64):
    rng = np.random.default_rng(n + heads)
    q, k, v = (rng.standard_normal((heads, n, d), dtype=np.float32) for _ in range(3))
    tq, tk, tv = (torch.from_numpy(a)[None] for a in (q, k, v))  # (1, heads, n, d)
    runs = {
        "torch-sdpa": lambda: F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal),
        "numpy-blocked": lambda: blocked_attention(q, k, v, causal=causal),
    }
    if plain:
        runs["numpy-plain"] = lambda: attention(q, k, v, causal=causal)
    return runs


def primed_time(run, settle_s: float = 0.15) -> float:
    """Seconds one call of ``run`` takes right after untimed calls of it.

    The untimed calls (at least one, and for ``settle_s`` seconds) leave things as a
    repeated call finds them: the idle threads of another library's last call
    (OpenBLAS's spin for about 0.1 s, PyTorch's OpenMP ones too) have stopped taking a
    core, the threads still spinning are run's own, and the memory it frees is reused
    at once. No pause separates the calls: memory left free for a second or two costs
    far more to touch again on a virtual machine whose kernel returns free memory to
    the host (free page reporting), as the one that produced the committed results does.
    """
    settled = time.perf_counter() + settle_s
    run()  # untimed; results are freed before the timed call
    while time.perf_counter() < settled:
        run()
    start = time.perf_counter()
    result = run()
    elapsed = time.perf_counter() - start
    del result
    return elapsed


def alternate(runs: dict, rounds: int) -> dict:
    """The median of ``rounds`` primed times of each runner, the runners taking turns
    within every round (so a slower spell of the machine falls on all of them)."""
    times = {name: [] for name in runs}
    for _ in range(rounds):
        for name, fn in runs.items():
            times[name].append(primed_time(fn))
    return {name: statistics.median(t) for name, t in times.items()}


def measure(heads: int, n: int, causal: bool, rounds: int, plain: bool,
            settle_s: float) -> dict:
    runs = runners(heads, n, causal, plain)
    times = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            times[name].append(primed_time(run, settle_s))
    return times


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--cases", nargs="+", default=["8x4096", "1x8192"])
    parser.add_argument("--plain", action="store_true", help="also time plain NumPy attention")
    parser.add_argument("--settle", type=float, default=0.15,
                        help="seconds of untimed calls before each timed one")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON line: {case: {causal: {impl: [seconds, ...]}}}")
    args = parser.parse_args(argv)
    if args.json:
        result = {}
        for case in args.cases:
            heads, n = map(int, case.split("x"))
            result[case] = {
                str(causal): measure(heads, n, causal, args.rounds, args.plain, args.settle)
                for causal in (False, True)}
        print(json.dumps(result))
        return
    for case in args.cases:
        heads, n = map(int, case.split("x"))
        for causal in (False, True):
            load = os.getloadavg()[0]
            times = measure(heads, n, causal, args.rounds, args.plain, args.settle)
            best = {name: min(t) for name, t in times.items()}
            median = {name: statistics.median(t) for name, t in times.items()}
            cells = ", ".join(f"{name} {best[name] * 1e3:.0f} ms (median {median[name] * 1e3:.0f})"
                              for name in times)
            ratio = best["numpy-blocked"] / best["torch-sdpa"]
            ratio_median = median["numpy-blocked"] / median["torch-sdpa"]
            extra = ""
            if args.plain:
                extra = (f"; plain/blocked {best['numpy-plain'] / best['numpy-blocked']:.2f} "
                         f"(median {median['numpy-plain'] / median['numpy-blocked']:.2f})")
            print(f"{heads}x{n} causal={causal!s:5}: {cells}; blocked/torch best {ratio:.2f}, "
                  f"median {ratio_median:.2f}{extra}; load {load:.1f} -> {os.getloadavg()[0]:.1f}",
                  flush=True)


if __name__ == "__main__":
    main()
