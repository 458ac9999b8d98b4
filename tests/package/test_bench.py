"""The benchmark script runs end to end in quick mode and writes the documented schema."""

import json

from benchmarks import bench
from tests.support import ROOT

RECORD_TYPES = {
    "impl": str, "heads": int, "n": int, "d": int, "dtype": str, "causal": bool,
    "median_s": float, "peak_bytes": int, "gflops": float,
}


def test_quick_benchmark_writes_json_and_markdown_with_the_schema(tmp_path):
    result = bench.run(quick=True, repeats=5, out_dir=tmp_path, cases=[(1, 64), (2, 32)])
    saved = json.loads((tmp_path / "results-quick.json").read_text())
    assert saved == json.loads(json.dumps(result))
    assert saved["gemm_gflops"] > 0
    for key in ("python", "numpy", "torch"):
        assert isinstance(saved[key], str) and saved[key]
    assert saved["threads"]["torch"] >= 1 and saved["threads"]["numpy_blas"] >= 1
    records = saved["records"]
    assert len(records) == 2 * 2 * len(bench.IMPLS)  # 2 cases x causal or not x impls
    assert {r["impl"] for r in records} == set(bench.IMPLS)
    for r in records:
        for key, kind in RECORD_TYPES.items():
            assert isinstance(r[key], kind), (key, r)
        assert r["d"] == 64 and r["dtype"] == "float32"
        assert len(r["times_s"]) == 5 and r["median_s"] > 0
        assert r["peak_bytes"] >= 0
    table = (tmp_path / "results-quick.md").read_text()
    assert table.count("\n| ") == 1 + len(records)  # header row plus one row per record


def test_flop_count_halves_for_causal_attention():
    assert bench.flops(1, 1000, 64, causal=False) == 4 * 1000 * 1000 * 64
    assert bench.flops(1, 1000, 64, causal=True) == 4 * 1000 * 1001 / 2 * 64


def test_cases_that_would_not_fit_in_memory_are_recorded_as_skipped(monkeypatch, tmp_path):
    monkeypatch.setattr(bench, "MEMORY_LIMIT", 1_000_000)  # bytes: only the n x n paths exceed it
    records = bench.bench_case(1, 256, False, 5, bench.IMPLS)
    skipped = {r["impl"] for r in records if r["skipped"]}
    assert skipped == {"numpy-plain", "torch-sdpa-math"}
    assert all(r["median_s"] is None and r["reason"] for r in records if r["skipped"])
