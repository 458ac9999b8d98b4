"""Chapter 11's speeds, side by side in one process: the package's cached ``generate``
against Hugging Face ``generate`` on the CPU, for a GPT-2-small-shaped model with random
float32 weights (the same weights in both, the same greedy tokens checked), batch 1 and
batch 8; and speculative decoding's speed-up over plain ``generate`` with a draft made
of the target's own first two blocks (a layer-skipping draft: no second model to train).

    python benchmarks/serving.py            -> benchmarks/serving.{json,md}
    python benchmarks/serving.py --quick    a tiny model, seconds

Each time is the median of ``--rounds`` calls, each timed right after untimed calls of
the same function (``primed_time``), the runners alternating.
"""

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from side_by_side import alternate  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402

from attention.checkpoints import config_from_hf, from_hf_state_dict  # noqa: E402
from attention.generation import generate  # noqa: E402
from attention.speculative import speculative_generate  # noqa: E402

PROMPT, NEW, N_DRAFT, DRAFT_LAYERS = 16, 32, 4, 2


def models(quick):
    """(HF model, our params, our config), GPT-2 small's shape unless quick."""
    shape = (dict(n_embd=64, n_layer=4, n_head=4, vocab_size=512) if quick
             else dict(n_embd=768, n_layer=12, n_head=12, vocab_size=50257))
    torch.manual_seed(0)
    hf = GPT2LMHeadModel(GPT2Config(**shape, n_positions=1024, bos_token_id=0,
                                    eos_token_id=None, pad_token_id=0))
    hf = hf.float().eval()
    state = {k: v.detach().numpy().copy() for k, v in hf.state_dict().items()}
    config = config_from_hf(hf.config)
    return hf, from_hf_state_dict(state, config), config


def layer_skip_draft(params, config, n_layers):
    """The target's first n_layers blocks, its embeddings, final norm and head."""
    keep = {k: v for k, v in params.items() if not k.startswith("blocks.")
            or int(k.split(".")[1]) < n_layers}
    return keep, replace(config, n_layers=n_layers)


def tables(result: dict) -> str:
    """The page's tables (Markdown) of a run's ``result``: narrow enough for a phone, with
    one column per batch size and what was run said above the table, not in a header."""
    m, runs = result["model"], result["generate"]
    md = (f"Greedy decoding, {m['n_layers']} layers x {m['d_model']}, vocabulary "
          f"{m['vocab_size']}, float32, {result['prompt']} + {result['new_tokens']} tokens:\n\n"
          f"| measured | {' | '.join(runs)} |\n|---|{'---|' * len(runs)}\n")
    for label, cell in (("ours, tokens/s", lambda r: f"{r['tokens_per_s']['numpy']:.0f}"),
                        ("Hugging Face, tokens/s", lambda r: f"{r['tokens_per_s']['hf']:.0f}"),
                        ("time, ours / Hugging Face", lambda r: f"{r['ratio_numpy_over_hf']:.2f}"),
                        ("same tokens", lambda r: str(r["same_tokens"]))):
        md += f"| {label} | {' | '.join(cell(r) for r in runs.values())} |\n"
    s = result["speculative"]
    return md + (f"\n| speculative, batch 1, draft: the first {s['draft_layers']} blocks, "
                 f"{s['n_draft']} drafted a round | value |\n|---|---|\n"
                 f"| acceptance rate | {s['acceptance']:.2f} |\n"
                 f"| tokens per target call | {s['tokens_per_target_call']:.2f} |\n"
                 f"| speed-up over generate | {s['speedup']:.2f} |\n"
                 f"| same tokens as generate | {s['same_tokens']} |\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    hf, params, config = models(args.quick)
    rng = np.random.default_rng(0)
    result = {"date": time.strftime("%Y-%m-%d", time.gmtime()),
              "load_average_start": load, "threads_torch": torch.get_num_threads(),
              "model": {"d_model": config.d_model, "n_layers": config.n_layers,
                        "n_heads": config.n_heads, "vocab_size": config.vocab_size},
              "prompt": PROMPT, "new_tokens": NEW, "generate": {}}
    for batch in (1, 8):
        ids = rng.integers(0, config.vocab_size, (batch, PROMPT))
        x = torch.from_numpy(ids)

        def theirs(x=x):
            with torch.no_grad():
                return hf.generate(x, attention_mask=torch.ones_like(x),
                                   max_new_tokens=NEW, min_new_tokens=NEW,
                                   do_sample=False).numpy()

        def mine(ids=ids):
            return generate(params, config, ids, max_new_tokens=NEW)

        same = bool(np.array_equal(mine(), theirs()))
        times = alternate({"numpy": mine, "hf": theirs}, args.rounds)
        result["generate"][f"batch {batch}"] = {
            "seconds": times, "same_tokens": same,
            "tokens_per_s": {k: batch * NEW / v for k, v in times.items()},
            "ratio_numpy_over_hf": times["numpy"] / times["hf"]}

    draft, draft_config = layer_skip_draft(params, config, DRAFT_LAYERS)
    prompt = rng.integers(0, config.vocab_size, PROMPT)
    spec = lambda: speculative_generate(params, config, draft, draft_config,  # noqa: E731
                                        prompt, max_new_tokens=NEW, n_draft=N_DRAFT)
    plain = lambda: generate(params, config, prompt, max_new_tokens=NEW)  # noqa: E731
    ids, stats = spec()
    times = alternate({"speculative": lambda: spec()[0], "generate": plain}, args.rounds)
    result["speculative"] = {
        "n_draft": N_DRAFT, "draft_layers": DRAFT_LAYERS, "stats": stats,
        "same_tokens": bool(np.array_equal(ids, plain()[0])),
        "acceptance": stats["accepted"] / (stats["accepted"] + stats["rejected"]),
        "tokens_per_target_call": NEW / stats["target_calls"],
        "seconds": times, "speedup": times["generate"] / times["speculative"]}
    result["load_average_end"] = os.getloadavg()[0]

    stem = "serving-quick" if args.quick else "serving"
    out = ROOT / "benchmarks"
    with tempfile.NamedTemporaryFile("w", dir=out, delete=False, suffix=".tmp") as f:
        json.dump(result, f, indent=1)
    os.replace(f.name, out / f"{stem}.json")
    md = tables(result)
    (out / f"{stem}.md").write_text(md)
    print(md)
    return result


if __name__ == "__main__":
    main()
