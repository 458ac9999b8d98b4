"""Chapter 7's speeds, side by side in one process: one training step of the shipped
model's shape (forward, backward, clipping, AdamW) in NumPy and in PyTorch eager on the
CPU, float32, with NumPy's step also split into two micro-batches of half the batch run
on two threads (``train_step(workers=2)``: the same tokens, masks and gradients); and
tokenizer encode throughput against Hugging Face ``tokenizers``. The load average is
printed beside the ratios.

    python benchmarks/train_step.py            -> benchmarks/train-step.{json,md}
    python benchmarks/train_step.py --quick    a tiny model, seconds

Each time is the median of ``--rounds`` calls, each timed right after untimed calls of the
same function (``primed_time``), the two libraries alternating.
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
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from side_by_side import alternate  # noqa: E402
from tokenizers import ByteLevelBPETokenizer  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402

from attention.checkpoints import config_from_hf, from_hf_state_dict  # noqa: E402
from attention.gpt import run  # noqa: E402
from attention.gpt.adamw import adamw_init, decay_groups  # noqa: E402
from attention.gpt.training import TrainConfig, train_step  # noqa: E402


def step_runners(model_config, tc):
    """(numpy step, numpy step on two threads, torch step) of the same GPT-2,
    shapes and optimiser, float32."""
    c = model_config
    hf = GPT2LMHeadModel(GPT2Config(
        n_embd=c.d_model, n_layer=c.n_layers, n_head=c.n_heads, vocab_size=c.vocab_size,
        n_positions=c.max_positions, resid_pdrop=tc.dropout, embd_pdrop=tc.dropout,
        attn_pdrop=tc.dropout, bos_token_id=0, eos_token_id=0)).float().train()
    hf.config._attn_implementation = "eager"
    params = from_hf_state_dict({k: v.detach().numpy().copy() for k, v in hf.state_dict().items()},
                                config_from_hf(hf.config))
    ids = np.random.default_rng(0).integers(0, c.vocab_size, 200_000)
    groups = decay_groups(params)
    state = adamw_init(params, groups)
    rng = np.random.default_rng(1)

    def numpy_step():
        return train_step(params, c, tc, state, groups, rng, 10, ids)

    halves = replace(tc, batch_size=tc.batch_size // 2, accumulation=2)

    def numpy_threads():  # two micro-batches of half the batch, two threads
        return train_step(params, c, halves, state, groups, rng, 10, ids,
                          workers=2)

    decay = [p for p in hf.parameters() if p.ndim >= 2]
    rest = [p for p in hf.parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": tc.weight_decay},
                             {"params": rest, "weight_decay": 0.0}], lr=tc.lr,
                            betas=(tc.beta1, tc.beta2))
    x = torch.tensor(ids[: tc.batch_size * (tc.context + 1)].reshape(tc.batch_size, -1))

    def torch_step():
        opt.zero_grad()
        logits = hf(x[:, :-1]).logits
        loss = F.cross_entropy(logits.reshape(-1, c.vocab_size), x[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(hf.parameters(), tc.clip)
        opt.step()
        return loss.item()

    return numpy_step, numpy_threads, torch_step


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    model, tc = run.MODEL, run.TRAIN
    if args.quick:
        from attention.model import ModelConfig
        model = ModelConfig(vocab_size=512, d_model=32, n_layers=1, n_heads=2, max_positions=32)
        tc = TrainConfig(batch_size=2, context=32)
    torch.manual_seed(0)
    load = os.getloadavg()[0]
    numpy_step, numpy_threads, torch_step = step_runners(model, tc)
    steps = alternate({"numpy": numpy_step, "numpy_two_threads": numpy_threads,
                       "torch": torch_step}, args.rounds)
    load_steps = os.getloadavg()[0]

    tokenizer = run.BPETokenizer.from_files(run.SHIPPED)
    hf = ByteLevelBPETokenizer(str(run.SHIPPED / "vocab.json"), str(run.SHIPPED / "merges.txt"))
    text = "".join((ROOT / "docs" / p).read_text("utf8") for p in run.PAGES)
    if args.quick:
        text = text[:20_000]

    def ours():
        tokenizer._cache.clear()  # every call starts cold, as on new text
        return tokenizer.encode(text)

    encode = alternate({"ours": ours, "tokenizers": lambda: hf.encode(text).ids}, args.rounds)
    mb = len(text.encode()) / 1e6
    result = {
        "date": time.strftime("%Y-%m-%d", time.gmtime()), "load_average_start": load,
        "load_average_end": os.getloadavg()[0], "threads_torch": torch.get_num_threads(),
        "model": {"d_model": model.d_model, "n_layers": model.n_layers,
                  "n_heads": model.n_heads, "vocab_size": model.vocab_size},
        "batch": [tc.batch_size, tc.context], "dropout": tc.dropout,
        "step_seconds": steps, "step_ratio_numpy_over_torch": steps["numpy"] / steps["torch"],
        "step_ratio_numpy_two_threads_over_torch":
            steps["numpy_two_threads"] / steps["torch"],
        "load_average_after_steps": load_steps,
        "encode_mb_per_s": {k: mb / v for k, v in encode.items()},
        "encode_ratio_ours_over_tokenizers": encode["ours"] / encode["tokenizers"],
    }
    stem = "train-step-quick" if args.quick else "train-step"
    out = ROOT / "benchmarks"
    with tempfile.NamedTemporaryFile("w", dir=out, delete=False, suffix=".tmp") as f:
        json.dump(result, f, indent=1)
    os.replace(f.name, out / f"{stem}.json")
    md = (f"| training step ({tc.batch_size} x {tc.context} tokens, float32) | seconds |\n"
          f"|---|---|\n| NumPy | {steps['numpy']:.3f} |\n"
          f"| NumPy, two micro-batches on two threads | "
          f"{steps['numpy_two_threads']:.3f} |\n| PyTorch eager "
          f"({result['threads_torch']} threads) | "
          f"{steps['torch']:.3f} |\n| ratio NumPy / PyTorch | "
          f"{result['step_ratio_numpy_over_torch']:.2f} |\n"
          f"| ratio NumPy on two threads / PyTorch | "
          f"{result['step_ratio_numpy_two_threads_over_torch']:.2f} (load "
          f"{load:.1f} to {load_steps:.1f}) |\n\n"
          f"| tokenizer encode | MB/s |\n|---|---|\n"
          + "".join(f"| {k} | {v:.2f} |\n" for k, v in result["encode_mb_per_s"].items()))
    (out / f"{stem}.md").write_text(md)
    print(md)
    return result


if __name__ == "__main__":
    main()
