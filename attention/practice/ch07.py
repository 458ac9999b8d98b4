"""Self-checks for the practice exercises of chapter 7 (training a GPT).

Each check calls the reader's function on data it draws, prints one verdict
("✓ Correct: ..." or "✗ Not yet: ..." saying what is wrong) and returns True or
False. References come from ``attention.gpt``.
"""

import math
from collections import Counter

import numpy as np

from attention.gpt.adamw import adamw_init, adamw_step, decay_groups
from attention.gpt.bpe import merge_word
from attention.gpt.schedule import warmup_cosine
from attention.practice.verdict import call, guard_checks, verdict


# Exercise 1 ---------------------------------------------------------------------------

def _reference_merge(words):
    """The trainer's step (``attention.gpt.bpe``) on symbols instead of ids."""
    pairs = Counter()
    for word, count in words.items():
        for pair in zip(word, word[1:]):
            pairs[pair] += count
    best = max(pairs.values())
    pair = min(p for p, c in pairs.items() if c == best)
    merged = Counter()
    for word, count in words.items():
        merged[tuple(merge_word(list(word), pair, pair[0] + pair[1]))] += count
    return pair, dict(merged)


def check_merge_step(your_function):
    """Exercise 1: your_function(words) = (pair, merged words) for one BPE step."""
    rng = np.random.default_rng(71)
    for trial in range(20):
        words = {}
        for _ in range(6):
            word = tuple(str(c) for c in rng.choice(list("aabc"), size=rng.integers(2, 7)))
            words[word] = words.get(word, 0) + int(rng.integers(1, 5))
        if trial == 0:
            words = {("a", "a", "a"): 3, ("b", "c"): 2}  # overlapping pairs
        pair, expected = _reference_merge(words)
        got, problem = call(your_function, dict(words))
        if problem:
            return verdict(False, problem)
        if not isinstance(got, tuple) or len(got) != 2:
            return verdict(False, f"return a pair (pair, merged words), got "
                                  f"{type(got).__name__}")
        got_pair, got_words = got
        if not isinstance(got_pair, tuple):
            return verdict(False, f"return the merged pair as a tuple of two symbols, "
                                  f"got {got_pair!r}")
        if got_pair != pair:
            return verdict(False, f"for {words} the most frequent pair (counting each word "
                                  f"as often as it occurs, ties to the smallest) is "
                                  f"{pair}, you chose {got_pair}")
        if got_words != expected:
            return verdict(False, f"merging {pair} in {words} gives {expected}, you gave "
                                  f"{got_words} (merge left to right, never overlapping)")
    return verdict(True, "20 corpora merged as the trainer merges them, overlapping "
                         "pairs included.")


# Exercise 2 ---------------------------------------------------------------------------

def check_adamw_groups(your_function):
    """Exercise 2: your_function(params, grads, state, lr, weight_decay) in place."""
    rng = np.random.default_rng(72)
    params = {"attn.W_q": rng.normal(size=(4, 3)), "attn.b_q": rng.normal(size=3),
              "norm1.weight": 1 + rng.normal(size=3)}
    ours = {n: p.copy() for n, p in params.items()}
    groups = decay_groups(ours)
    state = adamw_init(ours, groups)
    theirs = {"step": 0, "m": {n: np.zeros_like(p) for n, p in params.items()},
              "v": {n: np.zeros_like(p) for n, p in params.items()}}
    for _ in range(3):
        grads = {n: rng.normal(size=p.shape) for n, p in params.items()}
        adamw_step(ours, grads, state, groups, lr=0.1, weight_decay=0.5)
        _, problem = call(your_function, params, {n: g.copy() for n, g in grads.items()},
                          theirs, 0.1, 0.5, may_change=("params", "state"))
        if problem:
            return verdict(False, problem)
    for name in params:
        got = np.asarray(params[name], dtype=np.float64)
        if got.shape != ours[name].shape or not np.all(np.isfinite(got)):
            return verdict(False, f"{name} lost its shape or holds NaN")
        if np.max(np.abs(got - ours[name])) > 1e-10:
            decayed = name.endswith("W_q")
            return verdict(False, f"after 3 steps {name} differs by "
                                  f"{np.max(np.abs(got - ours[name])):.3g}; "
                                  + ("a matrix decays: p ← p (1 - lr λ) each step"
                                     if decayed else
                                     "biases and norm gains are not decayed"))
    return verdict(True, "3 AdamW steps equal the two-group optimiser: the matrix "
                         "decayed, the bias and the gain did not.")


# Exercise 3 ---------------------------------------------------------------------------

def check_warmup_cosine(your_function):
    """Exercise 3: your_function(step, peak, floor, warmup, total) = the rate."""
    rng = np.random.default_rng(73)
    for _ in range(5):
        total = int(rng.integers(20, 200))
        warmup = int(rng.integers(2, total // 2))
        peak = float(rng.uniform(1e-4, 1e-2))
        floor = peak * float(rng.uniform(0, 0.5))
        for step in range(total):
            want = warmup_cosine(step, peak=peak, floor=floor, warmup=warmup, total=total)
            got, problem = call(your_function, step, peak, floor, warmup, total)
            if problem:
                return verdict(False, problem)
            try:
                got = float(got)
            except (TypeError, ValueError):
                return verdict(False, f"return a number, got {type(got).__name__}")
            if not math.isfinite(got) or abs(got - want) > 1e-12 * peak:
                where = "warm-up" if step < warmup else "cosine"
                return verdict(False, f"step {step} of {total} (warm-up {warmup}, peak "
                                      f"{peak:.3g}, floor {floor:.3g}) is in the {where}: "
                                      f"the rate is {want:.6g}, you gave {got:.6g}")
    return verdict(True, "every step of 5 random schedules equals warm-up then cosine.")


guard_checks(globals())
