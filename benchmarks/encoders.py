"""Chapter 13's speed, side by side in one process: BERT encoding a batch of padded
sentences, the package's ``bert_encode`` against Hugging Face's ``BertModel`` on the
CPU, for BERT-base's shape (12 layers x 768, 12 heads) with random float32 weights, the
same weights in both and the same hidden states on the real tokens (checked, float32
rounding). Throughput counts real tokens only: the pads are computed and thrown away by
both. The share of our time spent in exact GELU (``math.erf`` on every element, as
chapter 3's ``gelu`` computes it) is timed on its own. The load average is printed
beside the ratio.

    python benchmarks/encoders.py            -> benchmarks/encoders.{json,md}
    python benchmarks/encoders.py --quick    a tiny model, seconds

Each time is the median of ``--rounds`` calls, each timed right after untimed calls of
the same function (``primed_time``), the runners alternating.
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from side_by_side import alternate, primed_time  # noqa: E402
from transformers import BertConfig, BertModel  # noqa: E402

from attention.encoders.bert import (bert_config_from_hf, bert_encode,  # noqa: E402
                                     bert_from_hf)
from attention.feed_forward import gelu  # noqa: E402

BATCH, SHORTEST, LONGEST = 8, 16, 128  # sentences, real tokens: 16 to 128


def models(quick):
    """(HF model, our params, our config): BERT-base's shape unless quick."""
    shape = (dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=256, vocab_size=512) if quick
             else dict(hidden_size=768, num_hidden_layers=12,
                       num_attention_heads=12, intermediate_size=3072,
                       vocab_size=30522))
    torch.manual_seed(0)
    hf = BertModel(BertConfig(**shape, max_position_embeddings=512)).eval()
    state = {k: v.detach().numpy().copy() for k, v in hf.state_dict().items()}
    config = bert_config_from_hf(hf.config)
    return hf, bert_from_hf(state, config), config


def measure(args):
    load = os.getloadavg()[0]
    hf, params, config = models(args.quick)
    rng = np.random.default_rng(0)
    shortest, longest = (4, 16) if args.quick else (SHORTEST, LONGEST)
    lengths = rng.integers(shortest, longest + 1, BATCH)
    lengths[0] = longest
    real = np.arange(longest)[None, :] < lengths[:, None]     # (batch, n)
    ids = np.where(real, rng.integers(1, config.vocab_size, real.shape), 0)
    x, mask = torch.from_numpy(ids), torch.from_numpy(real.astype(np.int64))

    def theirs():
        with torch.no_grad():
            return hf(x, attention_mask=mask).last_hidden_state.numpy()

    def mine():
        return bert_encode(params, config, ids, real)

    ours, ref = mine(), theirs()
    error = float(np.abs(ours[real] - ref[real]).max() / np.abs(ref[real]).max())
    times = alternate({"numpy": mine, "hf": theirs}, args.rounds)
    hidden = rng.normal(size=(BATCH, longest, config.d_ff)).astype(np.float32)
    gelu_s = config.n_layers * primed_time(lambda: gelu(hidden))
    n_real = int(real.sum())
    return {"date": time.strftime("%Y-%m-%d", time.gmtime()),
            "load_average_start": load, "threads_torch": torch.get_num_threads(),
            "model": {"d_model": config.d_model, "n_layers": config.n_layers,
                      "n_heads": config.n_heads, "d_ff": config.d_ff},
            "hf_attention": hf.config._attn_implementation,
            "batch": BATCH, "padded_to": longest, "real_tokens": n_real,
            "largest_difference_relative": error,
            "same_outputs": error < 1e-4,
            "seconds": times,
            "tokens_per_s": {k: n_real / v for k, v in times.items()},
            "ratio_numpy_over_hf": times["numpy"] / times["hf"],
            "gelu_seconds": gelu_s,
            "gelu_share_of_numpy": gelu_s / times["numpy"],
            "load_average_end": os.getloadavg()[0]}


def tables(r: dict) -> str:
    """The Markdown table chapter 13 shows, from the JSON alone."""
    m = r["model"]
    return (
        f"BERT encoding, {m['n_layers']} layers x {m['d_model']}, "
        f"{m['n_heads']} heads, float32: {r['batch']} sentences of "
        f"{r['real_tokens']} real tokens in all, padded to {r['padded_to']}; "
        f"Hugging Face with its `{r['hf_attention']}` attention. Measured "
        f"{r['date']}, load average {r['load_average_start']:.1f} to "
        f"{r['load_average_end']:.1f}.\n\n"
        "| measured | value |\n|---|---|\n"
        f"| ours, real tokens/s | {r['tokens_per_s']['numpy']:.0f} |\n"
        f"| Hugging Face, real tokens/s | {r['tokens_per_s']['hf']:.0f} |\n"
        f"| time, ours / Hugging Face | {r['ratio_numpy_over_hf']:.2f} |\n"
        f"| of our time, exact GELU | {r['gelu_share_of_numpy']:.0%} |\n"
        f"| same outputs (float32) | {r['same_outputs']} |\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    stem = "encoders-quick" if args.quick else "encoders"
    out = ROOT / "benchmarks"
    result = measure(args)
    with tempfile.NamedTemporaryFile("w", dir=out, delete=False,
                                     suffix=".tmp") as f:
        json.dump(result, f, indent=1)
    os.replace(f.name, out / f"{stem}.json")
    md = tables(result)
    (out / f"{stem}.md").write_text(md)
    print(md)
    return result


if __name__ == "__main__":
    main()
