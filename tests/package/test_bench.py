"""The benchmark script runs end to end in quick mode, writes the documented schema, and
leaves glibc's allocator as it found it."""

import dataclasses
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from benchmarks import bench
from tests.support import ROOT

RECORD_TYPES = {
    "impl": str, "heads": int, "n": int, "d": int, "dtype": str, "causal": bool,
    "median_s": float, "peak_bytes": int, "gflops": float,
}
TINY = dataclasses.replace(bench.QUICK, cases=((1, 64), (2, 32)))


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """One tiny benchmark run in a fresh process, with the allocator probed around it."""
    out = tmp_path_factory.mktemp("bench")
    child = subprocess.run([sys.executable, "-c", PROBE, str(out)],
                           capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(child.stdout.strip().splitlines()[-1]), out


def test_quick_benchmark_writes_json_and_markdown_with_the_schema(quick_run):
    _, tmp_path = quick_run
    saved = json.loads((tmp_path / "results-quick.json").read_text())
    assert saved["gemm_gflops"] > 0
    for key in ("python", "numpy", "torch"):
        assert isinstance(saved[key], str) and saved[key]
    assert saved["threads"]["torch"] >= 1 and saved["threads"]["numpy_blas"] >= 1
    assert saved["settings"]["cases"] == [[1, 64], [2, 32]]
    records = saved["records"]
    assert len(records) == 2 * 2 * len(bench.IMPLS)  # 2 cases x causal or not x impls
    assert {r["impl"] for r in records} == set(bench.IMPLS)
    for r in records:
        for key, kind in RECORD_TYPES.items():
            assert isinstance(r[key], kind), (key, r)
        assert r["d"] == 64 and r["dtype"] == "float32"
        assert len(r["times_s"]) == bench.QUICK.repeats and r["median_s"] > 0
        assert r["peak_bytes"] >= 0
    check = saved["cross_check"]
    assert set(check["ratios"]) == {"plain_over_blocked", "blocked_over_torch",
                                    "plain_over_blocked_causal", "blocked_over_torch_causal"}
    for ratio in check["ratios"].values():
        assert ratio["benchmark"] > 0 and ratio["fresh_process"] > 0
    table = (tmp_path / "results-quick.md").read_text()
    cases = len(records) // len(bench.IMPLS)  # one row per case, a column per impl
    assert table.count("\n| ") == 2 * (1 + cases)  # time and memory: header and rows
    assert max(len(line.split(" | ")) for line in table.splitlines()) == 2 + len(bench.IMPLS)
    assert "Load average" in table and "fresh process" in table


def test_flop_count_halves_for_causal_attention():
    assert bench.flops(1, 1000, 64, causal=False) == 4 * 1000 * 1000 * 64
    assert bench.flops(1, 1000, 64, causal=True) == 4 * 1000 * 1001 / 2 * 64


def test_causal_work_ratio_counts_the_scores_the_kernel_computes():
    # 1024 x 1024 with 512 x 256 tiles: query tile 0 computes 256 x 512 + 256 x 256 (rows
    # 0..255 skip the second key tile), tile 1 four key tiles, the last one for 256 rows.
    entries = (512 * 256 + 256 * 256) + (512 * 256 * 3 + 256 * 256)
    assert abs(bench.causal_work_ratio(1024) - 1024 * 1024 / entries) < 1e-12
    assert 1.9 < bench.causal_work_ratio(8192) < 2.0


def test_cases_that_would_not_fit_in_memory_are_recorded_as_skipped():
    settings = dataclasses.replace(TINY, memory_limit=1_000_000)  # only n x n paths exceed it
    records = bench.bench_case(1, 256, False, settings, memory=False)
    skipped = {r["impl"] for r in records if r["skipped"]}
    assert skipped == {"numpy-plain", "torch-sdpa-math"}
    assert all(r["median_s"] is None and r["reason"] for r in records if r["skipped"])


def test_every_setting_has_a_comment():
    source = Path(bench.__file__).read_text().splitlines()
    start = source.index("class Settings:")
    for field in dataclasses.fields(bench.Settings):
        line = next(i for i in range(start, len(source))
                    if source[i].strip().startswith(f"{field.name}:"))
        assert source[line - 1].strip().startswith("#"), f"no comment above {field.name}"


# glibc raises its mmap threshold to the size of each mapped block that is freed (up to
# 32 MiB), unless a program has called mallopt(M_MMAP_THRESHOLD), which fixes it for
# good. The probe finds a size that is mapped, frees it, and asks again.
PROBE = textwrap.dedent("""
    import ctypes, dataclasses, json, sys
    libc = ctypes.CDLL("libc.so.6")
    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks",
                    "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
    libc.mallinfo2.restype = MallInfo2
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]

    def mapped(size):
        before = libc.mallinfo2().hblks
        block = libc.malloc(size)
        grew = libc.mallinfo2().hblks > before
        libc.free(block)
        return grew

    def threshold_is_dynamic():
        for mib in (1, 2, 4, 8, 16, 31):
            if mapped(mib * 2**20):
                return not mapped(mib * 2**20)
        return False  # nothing below 32 MiB is mapped: a fixed threshold

    from benchmarks import bench  # run from the repository root
    seen = {"fresh": threshold_is_dynamic()}
    settings = dataclasses.replace(bench.QUICK, cases=((1, 64), (2, 32)),
                                   cross_check_case=(1, 64), cross_check_rounds=1,
                                   gemm_rounds=1)
    bench.run(settings, __import__("pathlib").Path(sys.argv[1]), "results-quick")
    seen["after the benchmark"] = threshold_is_dynamic()
    libc.mallopt(-3, 32 * 2**20)  # M_MMAP_THRESHOLD: what the old benchmark did
    seen["after mallopt"] = threshold_is_dynamic()
    print(json.dumps(seen))
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_the_benchmark_leaves_glibcs_dynamic_mmap_threshold_on(quick_run):
    seen, _ = quick_run
    assert seen == {"fresh": True, "after the benchmark": True, "after mallopt": False}


def test_render_rewrites_the_table_from_the_json_alone(quick_run, tmp_path):
    _, out = quick_run
    (tmp_path / "results.json").write_text((out / "results-quick.json").read_text())
    bench.render(tmp_path)
    assert (tmp_path / "results.md").read_text() == (out / "results-quick.md").read_text()


def test_the_serving_tables_on_chapter_11_are_the_ones_its_json_gives():
    """benchmarks/serving.md is what `tables` writes from benchmarks/serving.json: the
    page shows the measured run, in the layout a phone can show whole (three columns)."""
    from benchmarks.serving import tables

    result = json.loads((ROOT / "benchmarks" / "serving.json").read_text("utf8"))
    shown = (ROOT / "benchmarks" / "serving.md").read_text("utf8")
    assert shown == tables(result)
    assert all(line.count("|") <= 4 for line in shown.splitlines() if line.startswith("|"))


def test_the_encoder_table_on_chapter_13_is_the_one_its_json_gives():
    """benchmarks/encoders.md is what `tables` writes from benchmarks/encoders.json,
    and the run it shows gave the same outputs on both sides."""
    from benchmarks.encoders import tables

    result = json.loads((ROOT / "benchmarks" / "encoders.json").read_text("utf8"))
    shown = (ROOT / "benchmarks" / "encoders.md").read_text("utf8")
    assert shown == tables(result) and result["same_outputs"]
    assert all(line.count("|") <= 3 for line in shown.splitlines() if line.startswith("|"))
