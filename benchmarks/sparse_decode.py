"""Chapter 12's decode step, side by side in one process: one query attending over every
cached key against DeepSeek Sparse Attention's indexer plus attention over its top_k keys.

The shapes are DeepSeek-V3.2's absorbed MLA layer (chapter 9): 128 query heads reading
one shared latent of 512 + 64 numbers per token as keys (its first 512 as values), and an
indexer of 64 heads of 128 choosing 2048 tokens; float32, one layer, contexts of 8K, 32K
and 128K tokens. Full: the package's ``attention``. Sparse: ``index_scores`` over every
cached indexer key, ``top_k_keys``, then ``sparse_attention`` over the gathered keys:
the indexer's cost is inside the sparse time. Bytes read: the cache entries each one
touches (the latent of every token, or of top_k tokens plus every token's indexer key).

    python benchmarks/sparse_decode.py           -> benchmarks/sparse-decode.{json,md}
    python benchmarks/sparse_decode.py --quick   small contexts, seconds

Each time is the median of ``--rounds`` primed calls, the two runners taking turns
(``side_by_side.alternate``); the load average is recorded beside the ratios.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from side_by_side import alternate  # noqa: E402

from attention import attention  # noqa: E402
from attention.sparse.dsa import sparse_attention  # noqa: E402
from attention.sparse.indexer import index_scores, top_k_keys  # noqa: E402

HEADS, D_LATENT, D_ROPE = 128, 512, 64       # absorbed MLA: one shared latent
INDEX_HEADS, D_INDEX, TOP_K = 64, 128, 2048  # DeepSeek-V3.2's indexer


def runners(n, rng):
    """The two decode steps over a cache of n tokens, same inputs."""
    d = D_LATENT + D_ROPE
    cache = rng.normal(size=(1, 1, n, d)).astype(np.float32)  # latents
    q = rng.normal(size=(1, HEADS, 1, d)).astype(np.float32)
    keys, values = cache, cache[..., :D_LATENT]
    index_keys = rng.normal(size=(1, n, D_INDEX)).astype(np.float32)
    iq = rng.normal(size=(1, 1, INDEX_HEADS, D_INDEX)).astype(np.float32)
    iw = rng.normal(size=(1, 1, INDEX_HEADS)).astype(np.float32)

    def full():  # the heads as query rows of the one key head: one product
        return attention(q.reshape(1, 1, HEADS, d), keys, values)

    def sparse():  # the indexer, its choice, then the chosen latents only
        picked, kept = top_k_keys(index_scores(iq, iw, index_keys), TOP_K)
        return sparse_attention(q, keys, values, picked, kept)[0]
    return {"full": full, "sparse": sparse}


def bytes_read(n, bytes_per_value=4):
    entry = (D_LATENT + D_ROPE) * bytes_per_value
    return {"full": n * entry,
            "sparse": min(TOP_K, n) * entry + n * D_INDEX * bytes_per_value}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    contexts = (4096, 8192) if args.quick else (8192, 32768, 131072)
    rng = np.random.default_rng(0)
    result = {"date": time.strftime("%Y-%m-%d", time.gmtime()),
              "load_average": round(os.getloadavg()[0], 2),
              "heads": HEADS, "latent": D_LATENT + D_ROPE,
              "index_heads": INDEX_HEADS, "index_dim": D_INDEX,
              "top_k": TOP_K, "dtype": "float32", "rows": {}}
    for n in contexts:
        runs = runners(n, rng)
        assert runs["full"]().size == runs["sparse"]().size  # 128 x 512
        times = alternate(runs, args.rounds)
        read = bytes_read(n)
        result["rows"][str(n)] = {
            "full_ms": times["full"] * 1e3, "sparse_ms": times["sparse"] * 1e3,
            "time_ratio": times["full"] / times["sparse"],
            "full_mib": read["full"] / 2**20, "sparse_mib": read["sparse"] / 2**20,
            "bytes_ratio": read["full"] / read["sparse"]}
        print(n, result["rows"][str(n)], flush=True)
    result["load_average_end"] = round(os.getloadavg()[0], 2)
    lines = ["| context | full (ms) | sparse, indexer included (ms) | time full / sparse "
             "| MiB read full | MiB read sparse | bytes full / sparse |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for n, r in result["rows"].items():
        lines.append(f"| {int(n) // 1024}K | {r['full_ms']:.1f} | {r['sparse_ms']:.1f} | "
                     f"{r['time_ratio']:.2f} | {r['full_mib']:.1f} | "
                     f"{r['sparse_mib']:.1f} | {r['bytes_ratio']:.2f} |")
    lines.append(f"\nMeasured {result['date']}, load average "
                 f"{result['load_average']} to {result['load_average_end']}, "
                 f"one decode query, float32, median of {args.rounds} primed calls.")
    stem = "sparse-decode-quick" if args.quick else "sparse-decode"
    (ROOT / "benchmarks" / f"{stem}.json").write_text(json.dumps(result, indent=1))
    (ROOT / "benchmarks" / f"{stem}.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
