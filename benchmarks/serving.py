"""Chapter 11's speeds, side by side in one process: the package's cached ``generate``
against Hugging Face ``generate`` on the CPU, for a GPT-2-small-shaped model with random
float32 weights (the same weights in both, the same greedy tokens checked), batch 1 and
batch 8; and speculative decoding's speed-up over plain ``generate``, twice: with a
draft made of the target's own first two blocks on random weights (a layer-skipping draft:
its acceptance is an artifact, random weights repeat one or two tokens), and on chapter
7's trained model and its held-out page with a draft of no weights (prompt lookup and a
trigram table of the training tokens, ``NgramDraft``), beside the speed-up Leviathan et
al. (2023, section 3.5: Eq. 1 and Theorem 3.8) predict from the acceptance and the
measured costs. The load average is printed beside every ratio.

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
from attention.gpt.run import shipped  # noqa: E402
from attention.kv_cache import KVCache  # noqa: E402
from attention.model import forward  # noqa: E402
from attention.speculative import (NgramDraft, speculate,  # noqa: E402
                                   speculative_generate)

PROMPT, NEW, N_DRAFT, DRAFT_LAYERS = 16, 32, 4, 2
# chapter 7's model: prompts from its held-out page, 128 positions in all
T_PROMPTS, T_PROMPT, T_NEW, T_DRAFT = 8, 32, 64, 4


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


def load():
    return round(os.getloadavg()[0], 2)


def trained_speculation(rounds, quick):
    """Greedy speculation on chapter 7's trained model (float32) with an
    n-gram draft, against its plain cached ``generate``: the speed-up, the
    acceptance, and the costs that predict the speed-up."""
    _, params, config, tokens, _ = shipped()
    draft = NgramDraft(tokens["train"], config.vocab_size)
    val, n = tokens["val"], 2 if quick else T_PROMPTS
    prompts = [val[s:s + T_PROMPT] for s in
               np.linspace(0, len(val) - T_PROMPT, n).astype(int)]

    def plain():
        return [generate(params, config, p, max_new_tokens=T_NEW)[0]
                for p in prompts]

    def spec():
        return [speculate(params, config, draft, p, max_new_tokens=T_NEW,
                          n_draft=T_DRAFT) for p in prompts]

    runs = spec()
    same = all(np.array_equal(ids, ref) for (ids, _), ref in zip(runs, plain()))
    stats = {k: sum(r[1][k] for r in runs) for k in runs[0][1]}
    alpha = stats["accepted"] / (stats["accepted"] + stats["rejected"])
    load_before = load()
    times = alternate({"speculate": spec, "generate": plain}, rounds)
    result = {"prompts": len(prompts), "prompt": T_PROMPT, "new_tokens": T_NEW,
              "n_draft": T_DRAFT, "stats": stats, "same_tokens": same,
              "acceptance": alpha,
              "tokens_per_target_call": (stats["accepted"]
                                         + stats["target_calls"])
              / stats["target_calls"],
              "seconds": times,
              "speedup": times["generate"] / times["speculate"],
              "load": [load_before, load()]}
    result.update(costs(params, config, draft, prompts[0], rounds, alpha))
    return result


def costs(params, config, draft, prompt, rounds, alpha):
    """A draft guess and a verifying call of T_DRAFT + 1 tokens, each in
    target steps (one cached token), and the predicted speed-ups:
    (1 - a^(g+1)) / ((1 - a)(g c + 1)) (Leviathan et al.'s Theorem 3.8,
    verifying as costly as a step), and with the verification's measured
    cost v in place of that 1."""
    context = np.concatenate([prompt, prompt])  # (64,): a mid-length context
    cache = KVCache(config.n_layers)
    forward(params, config, context[None, :-T_DRAFT - 1], cache=cache)
    start, repeat = len(cache), 50

    def call(k):
        def run():
            for _ in range(repeat):
                forward(params, config, context[None, start:start + k],
                        cache=cache)
                cache.crop(start)
        return run

    def guess():
        for _ in range(repeat):
            draft.distribution(context)

    t = alternate({"step": call(1), "verify": call(T_DRAFT + 1),
                   "draft": guess}, rounds)
    c, v, g = t["draft"] / t["step"], t["verify"] / t["step"], T_DRAFT
    tokens = (1 - alpha ** (g + 1)) / (1 - alpha)  # per round (Eq. 1)
    return {"cost_draft_over_step": c, "cost_verify_over_step": v,
            "predicted_speedup": tokens / (g * c + 1),
            "predicted_speedup_measured_verify": tokens / (g * c + v),
            "expected_tokens_per_call": tokens}


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
    result["speculative_trained"] = trained_speculation(args.rounds, args.quick)
    result["load_average_end"] = os.getloadavg()[0]

    stem = "serving-quick" if args.quick else "serving"
    out = ROOT / "benchmarks"
    with tempfile.NamedTemporaryFile("w", dir=out, delete=False, suffix=".tmp") as f:
        json.dump(result, f, indent=1)
    os.replace(f.name, out / f"{stem}.json")
    m = result["model"]
    md = (f"| greedy decoding, {m['n_layers']} layers x {m['d_model']}, vocabulary "
          f"{m['vocab_size']}, float32, {PROMPT} + {NEW} tokens | ours tokens/s | "
          f"Hugging Face tokens/s | time ours / HF | same tokens |\n|---|---|---|---|---|\n")
    for name, r in result["generate"].items():
        md += (f"| {name} | {r['tokens_per_s']['numpy']:.0f} | {r['tokens_per_s']['hf']:.0f} "
               f"| {r['ratio_numpy_over_hf']:.2f} | {r['same_tokens']} |\n")
    s = result["speculative"]
    md += (f"\n| speculative, batch 1, draft: the first {DRAFT_LAYERS} blocks, "
           f"{N_DRAFT} drafted a round | value |\n|---|---|\n"
           f"| acceptance rate | {s['acceptance']:.2f} |\n"
           f"| tokens per target call | {s['tokens_per_target_call']:.2f} |\n"
           f"| speed-up over generate | {s['speedup']:.2f} |\n"
           f"| same tokens as generate | {s['same_tokens']} |\n")
    t = result["speculative_trained"]
    md += (f"\n| speculative, batch 1, chapter 7's trained model, "
           f"{t['prompts']} held-out prompts of {t['prompt']} + {t['new_tokens']}"
           f" tokens, draft: prompt lookup and a trigram table, {t['n_draft']} "
           f"drafted a round | value |\n|---|---|\n"
           f"| acceptance rate | {t['acceptance']:.2f} |\n"
           f"| tokens per target call | {t['tokens_per_target_call']:.2f} |\n"
           f"| a draft guess, in target steps (c) | "
           f"{t['cost_draft_over_step']:.3f} |\n"
           f"| a verifying call of {t['n_draft'] + 1} tokens, in target steps | "
           f"{t['cost_verify_over_step']:.2f} |\n"
           f"| predicted speed-up (Leviathan et al., verifying = 1 step) | "
           f"{t['predicted_speedup']:.2f} |\n"
           f"| predicted speed-up, the verifying call's measured cost | "
           f"{t['predicted_speedup_measured_verify']:.2f} |\n"
           f"| measured speed-up over generate | {t['speedup']:.2f} "
           f"(load {t['load'][0]:.1f} to {t['load'][1]:.1f}) |\n"
           f"| same tokens as generate | {t['same_tokens']} |\n")
    (out / f"{stem}.md").write_text(md)
    print(md)
    return result


if __name__ == "__main__":
    main()
