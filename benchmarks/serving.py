"""Chapter 11's speeds, side by side in one process: the package's serving decoder
(``fast_generate`` on ``prepare``d weights) against Hugging Face ``generate`` on the CPU,
greedy, for a GPT-2-small-shaped model and a Llama of that size with grouped-query
attention, random float32 weights (the same weights in both, the same greedy tokens
checked), batch 1 and batch 8, with one thread on each side and with two; and
speculative decoding's speed-up over plain ``generate``, twice: with a
draft made of the target's own first two blocks on random weights (a layer-skipping draft:
its acceptance is an artifact, random weights repeat one or two tokens), and on chapter
7's trained model and its held-out text with a draft of no weights (prompt lookup and a
trigram table of the training tokens, ``NgramDraft``), beside the speed-up Leviathan et
al. (2023: Eq. 1 in section 3.1, and Theorem 3.8) predict from the acceptance and the
measured costs; and serve() on chapter 7's model with a cached system prompt against
none, and with a long prompt's prefill in chunks against whole (work in tokens run
through the model per step, time to the first token, the widest gap between two tokens
of the requests decoding meanwhile); and its greedy decoding with an int8 KV cache
against the float one (bytes, logit drift, tokens, time). The load average is printed
beside every ratio.

    python benchmarks/serving.py            -> benchmarks/serving.{json,md}
    python benchmarks/serving.py --quick    a tiny model, seconds
    python benchmarks/serving.py --trained-only   only chapter 7's model's rows,
                                            merged into serving.json (the rows on
                                            random weights keep their own date and load)
    python benchmarks/serving.py --random-only    only the rows on random weights,
                                            merged alike

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
from transformers import (GPT2Config, GPT2LMHeadModel, LlamaConfig,  # noqa: E402
                          LlamaForCausalLM)

from attention._blas_threads import blas_threads, single_threaded_blas  # noqa: E402
from attention.checkpoints import config_from_hf, from_hf_state_dict  # noqa: E402
from attention.generation import generate  # noqa: E402
from attention.gpt.run import shipped  # noqa: E402
from attention.kv_cache import KVCache  # noqa: E402
from attention.model import forward  # noqa: E402
from attention.serving.batching import Request, serve  # noqa: E402
from attention.serving.fast_decode import fast_generate, prepare  # noqa: E402
from attention.serving.prefix import PrefixCache  # noqa: E402
from attention.serving.quantized import Int8KVCache  # noqa: E402
from attention.speculative import (NgramDraft, speculate,  # noqa: E402
                                   speculative_generate)

PROMPT, NEW, N_DRAFT, DRAFT_LAYERS = 16, 32, 4, 2
# chapter 7's model: prompts from its held-out page, 128 positions in all
T_PROMPTS, T_PROMPT, T_NEW, T_DRAFT = 8, 32, 64, 4


def models(arch, quick):
    """(HF model, our params, our config) with random float32 weights: GPT-2
    small's shape, or a Llama of that size with grouped-query attention (12
    query heads on 4 key/value heads), or tiny ones if quick."""
    torch.manual_seed(0)
    ids = dict(bos_token_id=0, eos_token_id=None, pad_token_id=0)
    if arch == "gpt2":
        shape = (dict(n_embd=64, n_layer=4, n_head=4, vocab_size=512) if quick
                 else dict(n_embd=768, n_layer=12, n_head=12, vocab_size=50257))
        hf = GPT2LMHeadModel(GPT2Config(**shape, n_positions=1024, **ids))
    else:
        shape = (dict(hidden_size=64, intermediate_size=128, num_hidden_layers=4,
                      num_attention_heads=4, num_key_value_heads=2, vocab_size=512)
                 if quick else
                 dict(hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
                      num_attention_heads=12, num_key_value_heads=4,
                      vocab_size=32000))
        hf = LlamaForCausalLM(LlamaConfig(**shape, max_position_embeddings=1024,
                                          tie_word_embeddings=False, **ids))
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


def scheduling(rounds, quick):
    """serve() on chapter 7's model (float32): a shared system prompt of
    64 held-out tokens with and without a PrefixCache, and a mixed
    workload with and without prefill_chunk; times alternate."""
    _, params, config, tokens, _ = shipped()
    val, n = tokens["val"], 3 if quick else 8

    def system_prompted():
        return [Request(2 * i, np.concatenate([val[:64], val[100 + 20 * i:
                                                        108 + 20 * i]]), 16)
                for i in range(n)]

    def mixed():
        return [Request(i, val[500 + 10 * i:504 + 10 * i], 32)
                for i in range(4)] + [Request(4, val[1000:1096], 8)]

    def run(make, **kw):
        def go():
            requests, work = make(), []
            serve(params, config, requests, max_batch=5, n_blocks=64,
                  block_size=8, work=work, **kw)
            return requests, work
        return go

    out, load_before = {}, load()
    prefix = PrefixCache()
    cached, _ = run(system_prompted, prefix_cache=prefix)()
    plain, _ = run(system_prompted)()
    t = alternate({"cached": lambda: run(
        system_prompted, prefix_cache=PrefixCache())(),
        "plain": run(system_prompted)}, rounds)
    out["prefix_cache"] = {
        "requests": n, "system_prompt": 64, "seconds": t,
        "speedup": t["plain"] / t["cached"],
        "hit_rate": prefix.found / prefix.looked_up,
        "same_tokens": all(a.tokens == b.tokens for a, b in zip(cached, plain)),
        "load": [load_before, load()]}
    load_before, runs = load(), {}
    for chunk in (None, 16):
        requests, work = run(mixed, prefill_chunk=chunk)()
        long = requests[-1]
        runs[chunk] = {
            "first_token_steps": long.emitted[0] - long.arrival + 1,
            "first_token_work": sum(work[long.arrival:long.emitted[0] + 1]),
            "widest_gap_work": max(work[t] for r in requests[:4]
                                   for t in r.emitted[1:]),
            "tokens": [r.tokens for r in requests]}
    same = runs[None].pop("tokens") == runs[16].pop("tokens")
    t = alternate({"chunked": run(mixed, prefill_chunk=16),
                   "whole": run(mixed)}, rounds)
    out["chunked_prefill"] = {
        "chunk": 16, "long_prompt": 96, "whole": runs[None], "chunked": runs[16],
        "same_tokens": same,
        "seconds": t, "time_chunked_over_whole": t["chunked"] / t["whole"],
        "load": [load_before, load()]}
    return out


def int8_cache(rounds):
    """Chapter 7's model (float32), a held-out prompt of 32 tokens and 64
    greedy ones, with an Int8KVCache against the float KVCache."""
    _, params, config, tokens, _ = shipped()
    prompt = tokens["val"][1000:1032]
    runs = {}
    for cache_type in (KVCache, Int8KVCache):
        seen = []
        ids = generate(params, config, prompt, max_new_tokens=T_NEW,
                       cache_type=cache_type,
                       on_step=lambda step, last: seen.append(last))
        runs[cache_type] = ids, np.array(seen)
    (ids, exact), (ids8, drift) = runs[KVCache], runs[Int8KVCache]
    cache = Int8KVCache(config.n_layers)
    forward(params, config, ids[:, :-1], cache=cache)
    float16 = sum(k.size for k in cache.keys + cache.values) * 2
    load_before = load()
    t = alternate({name: lambda c=c: generate(params, config, prompt,
                                              max_new_tokens=T_NEW,
                                              cache_type=c)
                   for name, c in (("int8", Int8KVCache), ("float", KVCache))},
                  rounds)
    return {"bytes_over_float16": cache.nbytes() / float16,
            "logit_drift": float(np.abs(drift - exact).max()
                                 / np.abs(exact).max()),
            "same_tokens": bool(np.array_equal(ids, ids8)), "seconds": t,
            "time_int8_over_float": t["int8"] / t["float"],
            "load": [load_before, load()]}


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


def _ratio(row):
    """A ratio cell with the load average it was measured at."""
    return (f"{row['ratio_ours_over_hf']:.2f} (load {row['load'][0]:.1f} to "
            f"{row['load'][1]:.1f})")


def tables(result: dict) -> str:
    """The page's tables (Markdown) of a run's ``result``: narrow enough for a phone, with
    one column per batch size and what was run said above the table, not in a header."""
    md = ""
    for arch, d in result["decoding"].items():
        m, one, two = d["model"], d["1 thread"], d["2 threads"]
        md += (f"Greedy decoding, {arch}'s shape: {m['n_layers']} layers x "
               f"{m['d_model']}, {m['n_heads']} query heads on {m['n_kv_heads']}"
               f" key/value heads, vocabulary {m['vocab_size']}, random float32 "
               f"weights, {result['prompt']} + {result['new_tokens']} tokens, "
               f"`fast_generate` against Hugging Face `generate`:\n\n"
               f"| measured | {' | '.join(one)} |\n|---|{'---|' * len(one)}\n")
        for label, rows, cell in (
                ("time, ours / Hugging Face's, 1 thread", one, _ratio),
                ("time, ours / Hugging Face's, 2 threads", two, _ratio),
                ("ours, tokens/s, 1 thread", one,
                 lambda r: f"{r['tokens_per_s']['ours']:.0f}"),
                ("Hugging Face, tokens/s, 1 thread", one,
                 lambda r: f"{r['tokens_per_s']['hf']:.0f}"),
                ("same tokens, 1 and 2 threads", one, None)):
            cells = ([f"{r['same_tokens']}, {two[k]['same_tokens']}"
                      for k, r in one.items()] if cell is None
                     else [cell(r) for r in rows.values()])
            md += f"| {label} | {' | '.join(cells)} |\n"
        md += "\n"
    s = result["speculative"]
    md += (f"| speculative, batch 1, GPT-2's shape, draft: the first "
           f"{s['draft_layers']} blocks, {s['n_draft']} drafted a round, one "
           f"thread | value |\n|---|---|\n"
           f"| acceptance rate | {s['acceptance']:.2f} |\n"
           f"| tokens per target call | {s['tokens_per_target_call']:.2f} |\n"
           f"| speed-up over generate | {s['speedup']:.2f} "
           f"(load {s['load'][0]:.1f} to {s['load'][1]:.1f}) |\n"
           f"| same tokens as generate | {s['same_tokens']} |\n"
           f"\nThe rows above: measured {result['date']} UTC, load average "
           f"{result['load_average_start']:.1f} to "
           f"{result['load_average_end']:.1f}; the rows below (chapter 7's "
           f"model): {result['trained_date']} UTC, one BLAS thread, each with "
           f"its load.\n")
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
    p, c = result["scheduling"]["prefix_cache"], result["scheduling"]["chunked_prefill"]
    md += (f"\n| serve(), chapter 7's trained model | value |\n|---|---|\n"
           f"| prefix cache, {p['requests']} requests sharing {p['system_prompt']} "
           f"tokens: blocks found | {p['hit_rate']:.0%} |\n"
           f"| prefix cache: speed-up over none | {p['speedup']:.2f} (load "
           f"{p['load'][0]:.1f} to {p['load'][1]:.1f}) |\n"
           f"| prompt of {c['long_prompt']} while 4 decode: first token, whole / "
           f"chunks of {c['chunk']} | {c['whole']['first_token_steps']} / "
           f"{c['chunked']['first_token_steps']} steps |\n"
           f"| the decoding ones' widest gap, whole / chunked | "
           f"{c['whole']['widest_gap_work']} / {c['chunked']['widest_gap_work']}"
           f" tokens of work |\n"
           f"| chunked prefill: time / whole | {c['time_chunked_over_whole']:.2f} "
           f"(load {c['load'][0]:.1f} to {c['load'][1]:.1f}) |\n"
           f"| same tokens (cache, chunks) | {p['same_tokens']}, "
           f"{c['same_tokens']} |\n")
    q = result["int8_cache"]
    md += (f"\n| int8 KV cache, chapter 7's trained model, {T_NEW} greedy tokens "
           f"| value |\n|---|---|\n"
           f"| bytes / float16's | {q['bytes_over_float16']:.3f} |\n"
           f"| largest logit change / largest logit | {q['logit_drift']:.1e} |\n"
           f"| same greedy tokens | {q['same_tokens']} |\n"
           f"| time / float cache's | {q['time_int8_over_float']:.2f} (load "
           f"{q['load'][0]:.1f} to {q['load'][1]:.1f}) |\n")
    return md


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--trained-only", action="store_true")
    parser.add_argument("--random-only", action="store_true")
    args = parser.parse_args(argv)
    stem = "serving-quick" if args.quick else "serving"
    out = ROOT / "benchmarks"
    merged = args.trained_only or args.random_only  # into the last run's
    result = json.loads((out / f"{stem}.json").read_text()) if merged else {}
    if not args.trained_only:
        result.update(hf_rows(args))
    if not args.random_only:
        result.update(trained_rows(args))
    with tempfile.NamedTemporaryFile("w", dir=out, delete=False, suffix=".tmp") as f:
        json.dump(result, f, indent=1)
    os.replace(f.name, out / f"{stem}.json")
    md = tables(result)
    (out / f"{stem}.md").write_text(md)
    print(md)
    return result


def trained_rows(args):
    """The rows of chapter 7's trained model, with their date, on one BLAS
    thread (NumPy on both sides): the load-robust reference, where two
    threads' small products swing with the other core's load."""
    with single_threaded_blas():
        return {"trained_date": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
                "trained_blas_threads": 1,
                "speculative_trained": trained_speculation(args.rounds,
                                                           args.quick),
                "scheduling": scheduling(args.rounds, args.quick),
                "int8_cache": int8_cache(args.rounds)}


def decoding(arch, args):
    """fast_generate against HF generate, greedy, batch 1 and 8, with one
    and with two threads on each side; the load before and after each."""
    hf, params, config = models(arch, args.quick)
    weights = prepare(params, config)
    rng = np.random.default_rng(0)
    out = {"model": {"d_model": config.d_model, "n_layers": config.n_layers,
                     "n_heads": config.n_heads, "n_kv_heads": config.n_kv_heads,
                     "vocab_size": config.vocab_size}}
    for threads in (1, 2):
        torch.set_num_threads(threads)
        rows = out[f"{threads} thread{'s' * (threads > 1)}"] = {}
        for batch in (1, 8):
            ids = rng.integers(0, config.vocab_size, (batch, PROMPT))
            x = torch.from_numpy(ids)

            def theirs(x=x):
                with torch.no_grad():
                    return hf.generate(x, attention_mask=torch.ones_like(x),
                                       max_new_tokens=NEW, min_new_tokens=NEW,
                                       do_sample=False).numpy()

            def ours(ids=ids):
                return fast_generate(weights, ids, max_new_tokens=NEW)

            with blas_threads(threads):
                before = load()
                same = bool(np.array_equal(ours(), theirs()))
                times = alternate({"ours": ours, "hf": theirs}, args.rounds)
            rows[f"batch {batch}"] = {
                "seconds": times, "same_tokens": same,
                "tokens_per_s": {k: batch * NEW / v for k, v in times.items()},
                "ratio_ours_over_hf": times["ours"] / times["hf"],
                "load": [before, load()]}
    return out


def hf_rows(args):
    """The rows on random weights: fast_generate against HF for two shapes,
    and the layer-skip draft (one BLAS thread)."""
    result = {"date": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
              "load_average_start": load(), "prompt": PROMPT, "new_tokens": NEW,
              "decoding": {arch: decoding(arch, args) for arch in ("gpt2", "llama")}}
    _, params, config = models("gpt2", args.quick)
    rng = np.random.default_rng(1)
    draft, draft_config = layer_skip_draft(params, config, DRAFT_LAYERS)
    prompt = rng.integers(0, config.vocab_size, PROMPT)
    spec = lambda: speculative_generate(params, config, draft, draft_config,  # noqa: E731
                                        prompt, max_new_tokens=NEW, n_draft=N_DRAFT)
    plain = lambda: generate(params, config, prompt, max_new_tokens=NEW)  # noqa: E731
    with single_threaded_blas():
        ids, stats = spec()
        before = load()
        times = alternate({"speculative": lambda: spec()[0], "generate": plain},
                          args.rounds)
        result["speculative"] = {
            "n_draft": N_DRAFT, "draft_layers": DRAFT_LAYERS, "stats": stats,
            "same_tokens": bool(np.array_equal(ids, plain()[0])),
            "acceptance": stats["accepted"] / (stats["accepted"] + stats["rejected"]),
            "tokens_per_target_call": NEW / stats["target_calls"],
            "seconds": times, "speedup": times["generate"] / times["speculative"],
            "load": [before, load()]}
    result["load_average_end"] = load()
    return result


if __name__ == "__main__":
    main()
