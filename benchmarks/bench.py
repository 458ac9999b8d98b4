"""Benchmark: plain NumPy attention, blocked NumPy attention and PyTorch's SDPA on the CPU.

    python benchmarks/bench.py            # full run -> benchmarks/results.json, results.md
    python benchmarks/bench.py --quick    # tiny sizes, seconds -> results-quick.json, .md
    python benchmarks/bench.py --render   # only rewrite results.md from results.json

Everything runs in one process. For each case (heads, n, causal) the implementations
take turns: ``--repeats`` rounds in which every implementation runs once, so a slow
moment of a shared machine hits all of them alike. We report the median of the rounds.
Each timed call directly follows untimed calls of the same implementation (at least
one, and for 0.15 s: ``primed_time``): it finds memory, caches and idle threads as a
repeated call does, and not as another library's call left them.

- numpy-plain: ``attention.attention`` (the full n x n score matrix).
- numpy-blocked: ``attention.blocked_attention`` (tiles, online softmax, threads).
- torch-sdpa: ``torch.nn.functional.scaled_dot_product_attention`` with 4-D inputs
  (1, heads, n, d) and the default dispatch, which picks PyTorch's fastest CPU kernel.
- torch-sdpa-math: the same call inside ``sdpa_kernel(SDPBackend.MATH)``: the unfused
  reference path that builds the whole score matrix, as the plain NumPy version does.

Peak memory, measured in an extra, untimed call per implementation and case:
NumPy with ``tracemalloc`` (NumPy reports its allocations to it): the peak of traced
memory during the call, output included, inputs not. PyTorch's allocations are not
traced, so for it we use a child process's peak resident memory (VmHWM in
/proc/self/status, reset through /proc/self/clear_refs) minus its resident memory before
the call. The child tells glibc to give every block of 64 KiB or more fresh pages, so
that reused memory is counted too. That setting (``mallopt(M_MMAP_THRESHOLD)``) stays in
force for the rest of a process and switches off glibc's dynamic threshold, which made
the plain NumPy version of an earlier benchmark map and fault in fresh memory for every
large temporary: so it is never made in the process that times anything.

After the cases, the benchmark times plain and blocked NumPy again in a fresh process,
side by side (``benchmarks/side_by_side.py``), and records how far those
ratios are from its own.

Achieved speed counts 4 n_q n_k d floating-point operations per head (two matrix
products of 2 n_q n_k d each), and for causal attention only the allowed pairs,
n (n + 1) / 2 instead of n^2. The machine's peak is the best of many 2048 x 2048
float32 matrix products (NumPy and PyTorch, the faster counts), taken throughout the run.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import math
import os
import platform
import statistics
import subprocess
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
from benchmarks.side_by_side import primed_time  # noqa: E402

IMPLS = ("numpy-plain", "numpy-blocked", "torch-sdpa", "torch-sdpa-math")


@dataclasses.dataclass(frozen=True)
class Settings:
    """Everything that decides what the benchmark measures, in one place."""

    # head dimension d of q, k and v
    d: int = 64
    # dtype of q, k and v (NumPy name); PyTorch shares the same memory
    dtype: str = "float32"
    # (heads, n) pairs; each is timed without a mask and causal
    cases: tuple = tuple((1, n) for n in (1024, 2048, 4096, 8192, 16384)) + ((8, 4096),)
    # implementations, timed in turns within each round
    impls: tuple = IMPLS
    # timed rounds per case; we report their median
    repeats: int = 5
    # seconds of untimed calls before each timed one (primed_time): another library's
    # idle threads stop spinning (OpenBLAS's after about 0.1 s)
    settle_s: float = 0.15
    # bytes: a case whose n x n arrays would need more than this is skipped
    memory_limit: int = 8 * 10**9
    # glibc blocks of this size or more get fresh pages in the PyTorch memory child
    child_mmap_threshold: int = 64 * 1024
    # rounds of 2048 x 2048 matrix products that measure the peak at the start
    gemm_rounds: int = 5
    # sample the peak again after every round of every case (the best is kept)
    gemm_every_round: bool = True
    # (heads, n) timed again in a fresh process, side by side, to check the ratios
    cross_check_case: tuple = (1, 8192)
    # timed rounds of that fresh-process check; the best round of each is compared
    cross_check_rounds: int = 5


FULL = Settings()
QUICK = Settings(cases=((1, 256), (1, 512), (2, 256)), settle_s=0.01, gemm_rounds=3,
                 gemm_every_round=False, cross_check_case=(1, 512), cross_check_rounds=5)
RECORD_KEYS = ["impl", "heads", "n", "d", "dtype", "causal", "median_s", "peak_bytes", "gflops"]


def flops(heads: int, n: int, d: int, causal: bool) -> float:
    """Floating-point operations of q kᵀ and p v: 2 multiply-adds per allowed (query, key) pair."""
    pairs = n * (n + 1) / 2 if causal else n * n
    return 4.0 * heads * pairs * d


def estimated_bytes(impl: str, heads: int, n: int, settings: Settings = FULL) -> int:
    """A generous estimate of peak memory, used only to skip cases that would not fit."""
    itemsize = np.dtype(settings.dtype).itemsize
    if impl in ("numpy-plain", "torch-sdpa-math"):
        return 5 * heads * n * n * itemsize  # several n x n temporaries
    return 10 * heads * n * settings.d * itemsize


def make_inputs(heads: int, n: int, settings: Settings = FULL):
    rng = np.random.default_rng(n + heads)
    return [rng.standard_normal((heads, n, settings.d), dtype=np.dtype(settings.dtype))
            for _ in range(3)]  # q, k, v: (heads, n, d) each


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


def traced_peak(run) -> int:
    """Peak traced memory of one NumPy call, in bytes (output included, inputs not)."""
    gc.collect()
    tracemalloc.start()
    try:
        result = run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del result
    return peak


def resident_peaks(jobs: list, settings: Settings) -> list:
    """Peak extra resident memory of PyTorch calls, each (impl, heads, n, causal), in bytes.

    Measured in a child process, because the allocator setting it needs would stay in
    force in this one (see the module docstring). None where it cannot be measured.
    """
    if not jobs:
        return []
    request = json.dumps({"jobs": jobs, "settings": dataclasses.asdict(settings)})
    child = subprocess.run([sys.executable, __file__, "--memory-child"], input=request,
                           capture_output=True, text=True, check=True)
    return json.loads(child.stdout.strip().splitlines()[-1])


def _memory_child() -> None:
    """Runs in the child: read jobs on stdin, print their peaks as one JSON line."""
    request = json.loads(sys.stdin.read())
    keys = ("d", "dtype", "child_mmap_threshold")
    settings = Settings(**{key: request["settings"][key] for key in keys})
    libc = _glibc()
    if libc is not None:
        # glibc would serve blocks up to 32 MB from memory that earlier calls freed but
        # kept, which adds nothing to the resident size: give blocks of 64 KiB or more
        # fresh pages, so that every byte a call uses is counted.
        libc.mallopt(M_MMAP_THRESHOLD, settings.child_mmap_threshold)
    peaks = []
    for impl, heads, n, causal in request["jobs"]:
        run = make_runner(impl, *make_inputs(heads, n, settings), causal)
        run()  # warm-up: PyTorch's one-time allocations are not the call's
        gc.collect()
        try:
            if libc is not None:
                libc.malloc_trim(0)
            before = _status_kib("VmRSS")
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # resets VmHWM, the peak resident size, to the current size
            result = run()
            peaks.append((_status_kib("VmHWM") - before) * 1024)
            del result
        except (OSError, KeyError):
            peaks.append(None)
    print(json.dumps(peaks))


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


def bench_case(heads: int, n: int, causal: bool, settings: Settings = FULL,
               gemm: GemmPeak | None = None, memory: bool = True) -> list[dict]:
    """Time every implementation on one case, in turns; NumPy's peak memory too."""
    q, k, v = make_inputs(heads, n, settings)
    base = {"heads": heads, "n": n, "d": settings.d, "dtype": settings.dtype, "causal": causal}
    runners, records = {}, {}
    for impl in settings.impls:
        record = {"impl": impl, **base, "median_s": None, "peak_bytes": None, "gflops": None}
        if estimated_bytes(impl, heads, n, settings) > settings.memory_limit:
            record.update(skipped=True,
                          reason=f"would need more than {settings.memory_limit / 1e9:.0f} GB")
        else:
            runners[impl] = make_runner(impl, q, k, v, causal)
            record["skipped"] = False
        records[impl] = record

    times: dict[str, list[float]] = {impl: [] for impl in runners}
    order = list(runners)
    for round_ in range(settings.repeats):
        # Rotate the order each round, so that no implementation always follows the same one.
        for impl in order[round_ % len(order):] + order[: round_ % len(order)]:
            times[impl].append(primed_time(runners[impl], settings.settle_s))
        if gemm is not None and settings.gemm_every_round:
            gemm.sample()

    work = flops(heads, n, settings.d, causal)
    for impl, run in runners.items():
        median = statistics.median(times[impl])
        records[impl].update(median_s=median, gflops=work / median / 1e9, times_s=times[impl])
        if memory and impl.startswith("numpy"):
            records[impl].update(peak_bytes=traced_peak(run), peak_method="tracemalloc")
    return [records[impl] for impl in settings.impls]


def _times(records, impl: str, heads: int, n: int, causal: bool) -> list[float]:
    """The timed rounds of one record; empty if that case was skipped or not run."""
    for r in records:
        if (r["impl"], r["heads"], r["n"], r["causal"]) == (impl, heads, n, causal):
            return r.get("times_s", [])
    return []


def median_of(records, impl: str, heads: int, n: int, causal: bool) -> float | None:
    """The median time of one record, or None if that case was skipped or not run."""
    times = _times(records, impl, heads, n, causal)
    return statistics.median(times) if times else None


def best_of(records, impl: str, heads: int, n: int, causal: bool) -> float | None:
    """The best (shortest) round of one record, or None if it was skipped or not run."""
    times = _times(records, impl, heads, n, causal)
    return min(times) if times else None


def causal_work_ratio(n: int) -> float:
    """Scores computed without a mask over scores computed with the causal mask, for the
    blocked kernel's default tiles: a ratio of work, not of time."""
    from attention.blocked import BLOCK_K, BLOCK_Q, key_tiles

    entries = 0
    for q0 in range(0, n, BLOCK_Q):
        bq = min(BLOCK_Q, n - q0)
        for k0, k1, on_diagonal in key_tiles(q0, bq, n, BLOCK_K):
            entries += (bq - (max(0, k0 - q0) if on_diagonal else 0)) * (k1 - k0)
    return n * n / entries


def summary_ratios(records) -> dict:
    """The time ratios the issue sets targets for (None when a case was not run)."""
    def divide(a, b):
        return None if a is None or b is None else a / b

    def ratio(impl_a, impl_b, heads, n, causal):
        return divide(median_of(records, impl_a, heads, n, causal),
                      median_of(records, impl_b, heads, n, causal))

    blocked, plain, torch_fast = "numpy-blocked", "numpy-plain", "torch-sdpa"
    return {
        # target: at most 1.5
        "blocked_over_torch_8x4096": ratio(blocked, torch_fast, 8, 4096, False),
        "blocked_over_torch_8x4096_causal": ratio(blocked, torch_fast, 8, 4096, True),
        "blocked_over_torch_8192": ratio(blocked, torch_fast, 1, 8192, False),
        "blocked_over_torch_8192_causal": ratio(blocked, torch_fast, 1, 8192, True),
        # time without a mask over time with the causal mask; and the same for work
        "blocked_causal_speedup_8192": divide(
            median_of(records, blocked, 1, 8192, False), median_of(records, blocked, 1, 8192, True)),
        "causal_work_ratio_8192": causal_work_ratio(8192),
        "plain_over_blocked_8192": ratio(plain, blocked, 1, 8192, False),
        "plain_over_blocked_8192_causal": ratio(plain, blocked, 1, 8192, True),
    }


def cross_check(records, settings: Settings) -> dict:
    """Time the cross-check case again in a fresh process, side by side, and compare
    its ratios with this benchmark's, best round against best round.

    The best, not the median: on a virtual machine whose host takes back free memory
    every two seconds or so, a call that allocates much (plain NumPy) pays for it now
    and then, and the median of a few rounds can fall on either side of that.
    """
    heads, n = settings.cross_check_case
    script = Path(__file__).resolve().parent / "side_by_side.py"
    child = subprocess.run(
        [sys.executable, str(script), "--json", "--plain", "--cases", f"{heads}x{n}",
         "--rounds", str(settings.cross_check_rounds), "--settle", str(settings.settle_s)],
        capture_output=True, text=True, check=True)
    fresh = json.loads(child.stdout.strip().splitlines()[-1])[f"{heads}x{n}"]
    check = {"case": [heads, n], "rounds": settings.cross_check_rounds, "ratios": {},
             "fresh_best_s": {}}
    for causal in (False, True):
        suffix = "_causal" if causal else ""
        best = {impl: min(t) for impl, t in fresh[str(causal)].items()}
        check["fresh_best_s"][f"causal={causal}"] = best
        ours = {impl: best_of(records, impl, heads, n, causal) for impl in best}
        for name, (a, b) in {"plain_over_blocked": ("numpy-plain", "numpy-blocked"),
                             "blocked_over_torch": ("numpy-blocked", "torch-sdpa")}.items():
            if ours[a] is None or ours[b] is None:
                continue
            here, there = ours[a] / ours[b], best[a] / best[b]
            check["ratios"][name + suffix] = {"benchmark": here, "fresh_process": there,
                                              "relative_difference": abs(here / there - 1)}
    return check


LABELS = {"numpy-plain": "plain NumPy", "numpy-blocked": "blocked NumPy",
          "torch-sdpa": "PyTorch SDPA", "torch-sdpa-math": "PyTorch SDPA math"}


def markdown_table(result: dict) -> str:
    """The results as two narrow Markdown tables (time and share of the peak; memory),
    one row per case and one column per implementation, with the machine above them."""
    peak = result["gemm_gflops"]
    s = result["settings"]
    lines = [
        f"Measured {result['date']} on {result['machine']}, {result['cpu_count']} cores: "
        f"Python {result['python']}, NumPy {result['numpy']}, PyTorch {result['torch']}; "
        f"threads: PyTorch {result['threads']['torch']}, NumPy BLAS {result['threads']['numpy_blas']}. "
        f"{s['dtype']}, d = {s['d']}, median of {s['repeats']} interleaved runs. "
        f"Matrix-multiply peak: {peak:.0f} GFLOP/s. "
        f"Load average (1 min) {result['load_average']['start']:.1f} at the start, "
        f"{result['load_average']['end']:.1f} at the end.",
    ]
    cases = {}  # (heads, n, causal) -> {impl: record}, in the order measured
    for r in result["records"]:
        cases.setdefault((r["heads"], r["n"], r["causal"]), {})[r["impl"]] = r
    impls = [impl for impl in LABELS if any(impl in row for row in cases.values())]

    def time_cell(r):
        if r["skipped"]:
            return "skipped"
        return f"{r['median_s'] * 1e3:,.1f} ({100 * r['gflops'] / peak:.0f}%)"

    def memory_cell(r):
        if r["skipped"]:
            return "skipped"
        return "n/a" if r["peak_bytes"] is None else f"{r['peak_bytes'] / 2**20:,.1f}"

    for title, cell in (("Time in ms (and share of the matrix-multiply peak)", time_cell),
                        ("Peak memory in MiB", memory_cell)):
        lines += ["", f"{title}:", "",
                  "| heads × n | causal | " + " | ".join(LABELS[i] for i in impls) + " |",
                  "|---:|:---:|" + "---:|" * len(impls)]
        for (heads, n, causal), row in cases.items():
            cells = [cell(row[impl]) if impl in row else "" for impl in impls]
            lines.append(f"| {heads} × {n:,} | {'yes' if causal else 'no'} | "
                         + " | ".join(cells) + " |")
    lines += ["", "NumPy peak memory: tracemalloc; PyTorch: peak resident memory minus resident "
              "memory before the call, in a separate process. Both include the output."]
    check = result.get("cross_check")
    if check and check["ratios"]:
        heads, n = check["case"]
        parts = [f"{name.replace('_', ' ')} {c['benchmark']:.2f} here, {c['fresh_process']:.2f} there"
                 for name, c in check["ratios"].items()]
        lines += ["", f"Cross-check: {heads} x {n:,} timed again in a fresh process, side by side "
                  f"(best of {check['rounds']} rounds, in both): " + "; ".join(parts) + "."]
    return "\n".join(lines) + "\n"


def render(out_dir: Path, stem: str = "results") -> None:
    """Rewrite ``stem.md`` from ``stem.json`` (a new table layout needs no new run)."""
    result = json.loads((out_dir / f"{stem}.json").read_text())
    _write(out_dir / f"{stem}.md", markdown_table(result))


def _write(path: Path, text: str) -> None:
    """Write through a temporary file, so that an interrupted run leaves the old file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def run(settings: Settings, out_dir: Path, stem: str = "results") -> dict:
    torch.manual_seed(0)
    load_before = os.getloadavg()[0]  # other programs compete for the same cores
    gemm = GemmPeak()
    gemm.sample(rounds=settings.gemm_rounds)
    records = []
    for heads, n in settings.cases:
        for causal in (False, True):
            records += bench_case(heads, n, causal, settings, gemm=gemm)
            done = [r for r in records[-len(settings.impls):] if not r["skipped"]]
            print(f"heads={heads} n={n} causal={causal}: "
                  + ", ".join(f"{r['impl']} {r['median_s'] * 1e3:.1f} ms" for r in done), flush=True)
    load_end = os.getloadavg()[0]
    torch_records = [r for r in records if not r["skipped"] and r["impl"].startswith("torch")]
    peaks = resident_peaks([[r["impl"], r["heads"], r["n"], r["causal"]] for r in torch_records],
                           settings)
    for r, peak in zip(torch_records, peaks):
        r.update(peak_bytes=peak, peak_method="rss-peak-delta, child process")
    check = cross_check(records, settings) if settings.cross_check_case else None
    result = {
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "machine": f"{platform.machine()} {_cpu_name()}",
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "threads": {"torch": torch.get_num_threads(), "numpy_blas": blas_threads()},
        "load_average": {"start": load_before, "end": load_end},
        "settings": dataclasses.asdict(settings),
        "gemm_gflops": max(gemm.best.values()),
        "gemm_gflops_by_library": gemm.best,
        "records": records,
        "cross_check": check,
    }
    for r in records:
        r["fraction_of_peak"] = None if r["gflops"] is None else r["gflops"] / result["gemm_gflops"]
    result["ratios"] = summary_ratios(records)
    out_dir.mkdir(parents=True, exist_ok=True)
    _write(out_dir / f"{stem}.json", json.dumps(result, indent=1) + "\n")
    _write(out_dir / f"{stem}.md", markdown_table(result))
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


def main(argv=None) -> dict | None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, finishes in seconds")
    parser.add_argument("--repeats", type=int, default=FULL.repeats,
                        help="timed rounds per case (>= 5)")
    parser.add_argument("--out-dir", type=Path, default=ROOT / "benchmarks")
    parser.add_argument("--render", action="store_true",
                        help="only rewrite results.md from results.json (no timing)")
    parser.add_argument("--memory-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_child:
        _memory_child()
        return None
    if args.render:
        render(args.out_dir, "results-quick" if args.quick else "results")
        return None
    if args.repeats < 5:
        parser.error("--repeats must be at least 5: the median of fewer is too noisy")
    settings = dataclasses.replace(QUICK if args.quick else FULL, repeats=args.repeats)
    result = run(settings, args.out_dir, "results-quick" if args.quick else "results")
    print(json.dumps({"ratios": result["ratios"], "cross_check": result["cross_check"]}, indent=1))
    return result


if __name__ == "__main__":
    main()
