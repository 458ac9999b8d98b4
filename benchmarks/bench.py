"""Benchmark: plain NumPy attention, blocked NumPy attention and PyTorch's SDPA on the CPU.

    python benchmarks/bench.py            # full run -> benchmarks/results.json, results.md
    python benchmarks/bench.py --quick    # tiny sizes, seconds -> results-quick.json, .md

Everything runs in one process. For each case (heads, n, causal) the implementations
take turns: one warm-up call each, then ``--repeats`` rounds in which every
implementation runs once, so a slow moment of a shared machine hits all of them alike.
We report the median of the rounds. Before each timed call we pause (PAUSE) so that the
idle threads of the previous call (OpenBLAS, OpenMP) have stopped spinning.

- numpy-plain: ``attention.attention`` (the full n x n score matrix).
- numpy-blocked: ``attention.blocked_attention`` (tiles, online softmax, threads).
- torch-sdpa: ``torch.nn.functional.scaled_dot_product_attention`` with 4-D inputs
  (1, heads, n, d) and the default dispatch, which picks PyTorch's fastest CPU kernel.
- torch-sdpa-math: the same call inside ``sdpa_kernel(SDPBackend.MATH)``: the unfused
  reference path that builds the whole score matrix, as the plain NumPy version does.

Peak memory, measured in an extra, untimed call per implementation and case:
NumPy with ``tracemalloc`` (NumPy reports its allocations to it): the peak of traced
memory during the call, output included, inputs not. PyTorch's allocations are not
traced, so for it we use the process's peak resident memory (VmHWM in
/proc/self/status, reset through /proc/self/clear_refs) minus the resident memory
before the call, with glibc told to give every block of 64 KiB or more fresh pages
during that call. Both count the output and every temporary.

Achieved speed counts 4 n_q n_k d floating-point operations per head (two matrix
products of 2 n_q n_k d each), and for causal attention only the allowed pairs,
n (n + 1) / 2 instead of n^2. The machine's peak is the best of many 2048 x 2048
float32 matrix products (NumPy and PyTorch, the faster counts), taken throughout the run.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from attention import attention, blocked_attention  # noqa: E402
from attention._blas_threads import _bundled_openblas  # noqa: E402

D = 64
DTYPE = np.float32
FULL_CASES = [(1, n) for n in (1024, 2048, 4096, 8192, 16384)] + [(8, 4096)]
QUICK_CASES = [(1, 256), (1, 512), (2, 256)]
IMPLS = ["numpy-plain", "numpy-blocked", "torch-sdpa", "torch-sdpa-math"]
# After a call, OpenBLAS's idle threads keep spinning for about 0.1 s (2^28 cycles) and
# PyTorch's OpenMP threads for a while too: on 2 cores they would steal time from the
# next implementation in the round. A pause before each timed call lets them go to sleep.
PAUSE = 0.2  # seconds
MEMORY_LIMIT = 8 * 10**9  # skip a case whose score matrices would need more than this
RECORD_KEYS = ["impl", "heads", "n", "d", "dtype", "causal", "median_s", "peak_bytes", "gflops"]


def flops(heads: int, n: int, d: int, causal: bool) -> float:
    """Floating-point operations of q kᵀ and p v: 2 multiply-adds per allowed (query, key) pair."""
    pairs = n * (n + 1) / 2 if causal else n * n
    return 4.0 * heads * pairs * d


def estimated_bytes(impl: str, heads: int, n: int) -> int:
    """A generous estimate of peak memory, used only to skip cases that would not fit."""
    if impl in ("numpy-plain", "torch-sdpa-math"):
        return 5 * heads * n * n * np.dtype(DTYPE).itemsize  # several n x n temporaries
    return 10 * heads * n * D * np.dtype(DTYPE).itemsize


def make_runner(impl: str, q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool):
    """A no-argument function that runs one implementation on (heads, n, d) inputs."""
    if impl == "numpy-plain":
        return lambda: attention(q, k, v, causal=causal)
    if impl == "numpy-blocked":
        return lambda: blocked_attention(q, k, v, causal=causal)
    tq, tk, tv = (torch.from_numpy(a)[None] for a in (q, k, v))  # (1, heads, n, d), shared memory
    if impl == "torch-sdpa":
        return lambda: F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)
    if impl == "torch-sdpa-math":
        def run_math():
            with sdpa_kernel(SDPBackend.MATH):
                return F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)
        return run_math
    raise ValueError(f"unknown implementation {impl!r}")


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def _glibc():
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter


def peak_memory(impl: str, run) -> tuple[int | None, str]:
    """Peak extra memory of one call, in bytes, and how it was measured."""
    gc.collect()
    if impl.startswith("numpy"):
        tracemalloc.start()
        try:
            result = run()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        del result
        return peak, "tracemalloc"
    # PyTorch: resident memory. glibc would serve blocks up to 32 MB from memory that
    # earlier calls freed but kept, which adds nothing to the resident size; for this
    # one call every block of 64 KiB or more gets fresh pages, so it is counted.
    libc = _glibc()
    try:
        if libc is not None:
            libc.mallopt(M_MMAP_THRESHOLD, 64 * 1024)
            libc.malloc_trim(0)
        before = _status_kib("VmRSS")
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM, the peak resident size, to the current size
        result = run()
        peak = _status_kib("VmHWM")
        del result
        return (peak - before) * 1024, "rss-peak-delta"
    except (OSError, KeyError):
        return None, "unavailable"
    finally:
        if libc is not None:
            libc.mallopt(M_MMAP_THRESHOLD, 32 * 2**20)  # glibc's largest default


class GemmPeak:
    """The machine's float32 matrix-multiply peak: the best GFLOP/s of 2048 x 2048 products.

    Other programs on a shared machine can slow any one measurement, never speed it up,
    so we keep the best of many: a few at the start, then one NumPy and one PyTorch
    product after every round of every case.
    """

    N = 2048

    def __init__(self):
        rng = np.random.default_rng(0)
        self.a = rng.standard_normal((self.N, self.N), dtype=np.float32)
        self.b = rng.standard_normal((self.N, self.N), dtype=np.float32)
        self.ta, self.tb = torch.from_numpy(self.a), torch.from_numpy(self.b)
        self.best = {"numpy": 0.0, "torch": 0.0}

    def sample(self, rounds: int = 1) -> None:
        for _ in range(rounds):
            for name, run in (("numpy", lambda: self.a @ self.b), ("torch", lambda: self.ta @ self.tb)):
                start = time.perf_counter()
                run()
                gflops = 2 * self.N**3 / (time.perf_counter() - start) / 1e9
                self.best[name] = max(self.best[name], gflops)


def blas_threads() -> int:
    """Threads of NumPy's BLAS: threadpoolctl if installed, else NumPy's bundled OpenBLAS."""
    try:
        from threadpoolctl import threadpool_info

        counts = [info["num_threads"] for info in threadpool_info() if info.get("user_api") == "blas"]
        if counts:
            return max(counts)
    except ImportError:
        pass
    functions = _bundled_openblas()
    return functions[0]() if functions else (os.cpu_count() or 1)


def bench_case(heads: int, n: int, causal: bool, repeats: int, impls: list[str],
               pause: float = 0.0, gemm: GemmPeak | None = None) -> list[dict]:
    rng = np.random.default_rng(n + heads)
    q, k, v = (rng.standard_normal((heads, n, D), dtype=DTYPE) for _ in range(3))  # (heads, n, d)
    base = {"heads": heads, "n": n, "d": D, "dtype": np.dtype(DTYPE).name, "causal": causal}
    runners, records = {}, {}
    for impl in impls:
        record = {"impl": impl, **base, "median_s": None, "peak_bytes": None, "gflops": None}
        if estimated_bytes(impl, heads, n) > MEMORY_LIMIT:
            record.update(skipped=True, reason=f"would need more than {MEMORY_LIMIT / 1e9:.0f} GB")
        else:
            runners[impl] = make_runner(impl, q, k, v, causal)
            record["skipped"] = False
        records[impl] = record

    times: dict[str, list[float]] = {impl: [] for impl in runners}
    order = list(runners)
    for round_ in range(repeats + 1):  # round 0 is the warm-up
        # Rotate the order each round, so that no implementation always follows the same one.
        for impl in order[round_ % len(order):] + order[: round_ % len(order)]:
            run = runners[impl]
            time.sleep(pause)  # let the previous call's idle threads stop spinning
            start = time.perf_counter()
            result = run()
            elapsed = time.perf_counter() - start
            del result
            if round_:
                times[impl].append(elapsed)
        if gemm is not None:
            gemm.sample()

    work = flops(heads, n, D, causal)
    for impl, run in runners.items():
        median = statistics.median(times[impl])
        peak, method = peak_memory(impl, run)
        records[impl].update(
            median_s=median, peak_bytes=peak, gflops=work / median / 1e9,
            times_s=times[impl], peak_method=method,
        )
    return [records[impl] for impl in impls]


def median_of(records, impl: str, heads: int, n: int, causal: bool) -> float | None:
    """The median time of one record, or None if that case was skipped or not run."""
    for r in records:
        if (r["impl"], r["heads"], r["n"], r["causal"]) == (impl, heads, n, causal):
            return r["median_s"]
    return None


def summary_ratios(records) -> dict:
    """The time ratios the issue sets targets for (None when a case was not run)."""
    def divide(a, b):
        return None if a is None or b is None else a / b

    blocked, plain, torch_fast = "numpy-blocked", "numpy-plain", "torch-sdpa"
    return {
        # target: at most 2.0
        "blocked_over_torch_8x4096": divide(
            median_of(records, blocked, 8, 4096, False), median_of(records, torch_fast, 8, 4096, False)),
        "blocked_over_torch_8x4096_causal": divide(
            median_of(records, blocked, 8, 4096, True), median_of(records, torch_fast, 8, 4096, True)),
        # target: at least 1.7
        "blocked_causal_speedup_8192": divide(
            median_of(records, blocked, 1, 8192, False), median_of(records, blocked, 1, 8192, True)),
        # target: at least 1.5
        "plain_over_blocked_8192": divide(
            median_of(records, plain, 1, 8192, False), median_of(records, blocked, 1, 8192, False)),
        "plain_over_blocked_8192_causal": divide(
            median_of(records, plain, 1, 8192, True), median_of(records, blocked, 1, 8192, True)),
    }


def markdown_table(result: dict) -> str:
    """The results as a Markdown table, with the machine and versions above it."""
    peak = result["gemm_gflops"]
    lines = [
        f"Measured {result['date']} on {result['machine']}, {result['cpu_count']} cores: "
        f"Python {result['python']}, NumPy {result['numpy']}, PyTorch {result['torch']}; "
        f"threads: PyTorch {result['threads']['torch']}, NumPy BLAS {result['threads']['numpy_blas']}. "
        f"float32, d = {D}, median of {result['repeats']} interleaved runs. "
        f"Matrix-multiply peak: {peak:.0f} GFLOP/s."
        + (f" Load average (1 min) {result['load_average']['start']:.1f} at the start, "
           f"{result['load_average']['end']:.1f} at the end." if "load_average" in result else ""),
        "",
        "| heads | n | causal | implementation | time (ms) | GFLOP/s | % of peak | peak memory (MiB) |",
        "|---:|---:|:---:|:---|---:|---:|---:|---:|",
    ]
    for r in result["records"]:
        if r["skipped"]:
            cells = ["skipped", "", "", ""]
        else:
            memory = "n/a" if r["peak_bytes"] is None else f"{r['peak_bytes'] / 2**20:,.1f}"
            cells = [f"{r['median_s'] * 1e3:,.1f}", f"{r['gflops']:.1f}",
                     f"{100 * r['gflops'] / peak:.0f}", memory]
        lines.append(
            f"| {r['heads']} | {r['n']:,} | {'yes' if r['causal'] else 'no'} | {r['impl']} | "
            + " | ".join(cells) + " |"
        )
    lines += ["", "NumPy peak memory: tracemalloc; PyTorch: peak resident memory minus resident "
              "memory before the call. Both include the output."]
    return "\n".join(lines) + "\n"


def run(quick: bool, repeats: int, out_dir: Path, cases=None) -> dict:
    cases = cases or (QUICK_CASES if quick else FULL_CASES)
    torch.manual_seed(0)
    load_before = os.getloadavg()[0]  # other programs compete for the same cores
    gemm = GemmPeak()
    gemm.sample(rounds=3 if quick else 5)
    records = []
    for heads, n in cases:
        for causal in (False, True):
            records += bench_case(heads, n, causal, repeats, IMPLS, pause=0.02 if quick else PAUSE, gemm=None if quick else gemm)
            done = [r for r in records[-len(IMPLS):] if not r["skipped"]]
            print(f"heads={heads} n={n} causal={causal}: "
                  + ", ".join(f"{r['impl']} {r['median_s'] * 1e3:.1f} ms" for r in done), flush=True)
    result = {
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "machine": f"{platform.machine()} {_cpu_name()}",
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "threads": {"torch": torch.get_num_threads(), "numpy_blas": blas_threads()},
        "load_average": {"start": load_before, "end": os.getloadavg()[0]},
        "quick": quick,
        "repeats": repeats,
        "pause_s": 0.02 if quick else PAUSE,
        "gemm_gflops": max(gemm.best.values()),
        "gemm_gflops_by_library": gemm.best,
        "records": records,
    }
    for r in records:
        r["fraction_of_peak"] = None if r["gflops"] is None else r["gflops"] / result["gemm_gflops"]
    result["ratios"] = summary_ratios(records)
    stem = "results-quick" if quick else "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{stem}.json").write_text(json.dumps(result, indent=1) + "\n")
    (out_dir / f"{stem}.md").write_text(markdown_table(result))
    return result


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, finishes in seconds")
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds per case (>= 5)")
    parser.add_argument("--out-dir", type=Path, default=ROOT / "benchmarks")
    args = parser.parse_args(argv)
    if args.repeats < 5:
        parser.error("--repeats must be at least 5: the median of fewer is too noisy")
    result = run(args.quick, args.repeats, args.out_dir)
    print(json.dumps(result["ratios"], indent=1))
    return result


if __name__ == "__main__":
    main()
