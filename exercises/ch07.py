"""Practice exercises of chapter 7: starters, worked solutions and plausible wrong answers.

Each exercise has an `exN-starter` and an `exN-solution` section (the page includes them
by snippet) and `exN-wrong-<what>` sections that its self-check must reject (never shown;
tests/practice/test_wrong_answers.py runs them). Starter and solution define the same
name on purpose: the reader replaces the one with the other.
"""

# --8<-- [start:imports]
import math
from collections import Counter

import numpy as np

from attention.practice.ch07 import (check_adamw_groups, check_merge_step,
                                     check_warmup_cosine)
# --8<-- [end:imports]

# --8<-- [start:ex1-starter]
def merge_step(words):
    """One BPE training step. words: {tuple of symbols: count}. Returns
    (pair, merged words): the most frequent adjacent pair (ties: the
    smallest pair) and the words with it merged, left to right."""
    pairs = Counter()
    # Your code: count the pairs, pick one, merge it in every word.
    return None, words
# --8<-- [end:ex1-starter]


# --8<-- [start:ex1-solution]
def merge_step(words):
    """One BPE training step. words: {tuple of symbols: count}. Returns
    (pair, merged words): the most frequent adjacent pair (ties: the
    smallest pair) and the words with it merged, left to right."""
    pairs = Counter()
    for word, count in words.items():
        for pair in zip(word, word[1:]):
            pairs[pair] += count  # a word seen 3 times counts 3 times
    best = max(pairs.values())
    pair = min(p for p, c in pairs.items() if c == best)
    merged = {}
    for word, count in words.items():
        out, i = [], 0
        while i < len(word):
            if word[i:i + 2] == pair:  # merge, then skip both symbols
                out.append(word[i] + word[i + 1])
                i += 2
            else:
                out.append(word[i])
                i += 1
        merged[tuple(out)] = merged.get(tuple(out), 0) + count
    return pair, merged
# --8<-- [end:ex1-solution]


# --8<-- [start:ex1-wrong-unweighted]
# rejected with: as often as it occurs
def merge_step(words):
    pairs = Counter(p for word in words for p in zip(word, word[1:]))
    best = max(pairs.values())
    pair = min(p for p, c in pairs.items() if c == best)
    merged = {}
    for word, count in words.items():
        out, i = [], 0
        while i < len(word):
            if word[i:i + 2] == pair:
                out.append(word[i] + word[i + 1])
                i += 2
            else:
                out.append(word[i])
                i += 1
        merged[tuple(out)] = merged.get(tuple(out), 0) + count
    return pair, merged
# --8<-- [end:ex1-wrong-unweighted]


# --8<-- [start:ex1-wrong-overlap]
# rejected with: never overlapping
def merge_step(words):
    pairs = Counter()
    for word, count in words.items():
        for pair in zip(word, word[1:]):
            pairs[pair] += count
    best = max(pairs.values())
    pair = min(p for p, c in pairs.items() if c == best)
    merged = {}
    for word, count in words.items():
        out = [a + b if (a, b) == pair else a for a, b in zip(word, word[1:])]
        out.append(word[-1])
        merged[tuple(out)] = merged.get(tuple(out), 0) + count
    return pair, merged
# --8<-- [end:ex1-wrong-overlap]


# --8<-- [start:ex1-wrong-largest-tie]
# rejected with: ties to the smallest
def merge_step(words):
    pairs = Counter()
    for word, count in words.items():
        for pair in zip(word, word[1:]):
            pairs[pair] += count
    best = max(pairs.values())
    pair = max(p for p, c in pairs.items() if c == best)
    merged = {}
    for word, count in words.items():
        out, i = [], 0
        while i < len(word):
            if word[i:i + 2] == pair:
                out.append(word[i] + word[i + 1])
                i += 2
            else:
                out.append(word[i])
                i += 1
        merged[tuple(out)] = merged.get(tuple(out), 0) + count
    return pair, merged
# --8<-- [end:ex1-wrong-largest-tie]


# --8<-- [start:ex1-wrong-letters]
# rejected with: Not yet
def merge_step(words):
    pairs = Counter()
    for word, count in words.items():
        letters = "".join(word)  # the spelling, not the symbols
        for pair in zip(letters, letters[1:]):
            pairs[pair] += count
    best = max(pairs.values())
    pair = min(p for p, c in pairs.items() if c == best)
    merged = {}
    for word, count in words.items():
        out, i = [], 0
        while i < len(word):
            if word[i:i + 2] == pair:
                out.append(word[i] + word[i + 1])
                i += 2
            else:
                out.append(word[i])
                i += 1
        merged[tuple(out)] = merged.get(tuple(out), 0) + count
    return pair, merged
# --8<-- [end:ex1-wrong-letters]


# --8<-- [start:ex1-wrong-replace-in-spelling]
# rejected with: you gave
def merge_step(words):
    pairs = Counter()
    for word, count in words.items():
        for pair in zip(word, word[1:]):
            pairs[pair] += count
    best = max(pairs.values())
    pair = min(p for p, c in pairs.items() if c == best)
    joined = pair[0] + pair[1]
    merged = {}
    for word, count in words.items():
        # merge in the spelling, then split it again at the old symbols
        text = " ".join(word).replace(f"{pair[0]} {pair[1]}", joined)
        out = tuple(text.split(" "))
        merged[out] = merged.get(out, 0) + count
    return pair, merged
# --8<-- [end:ex1-wrong-replace-in-spelling]


# --8<-- [start:ex2-starter]
def adamw_groups_step(params, grads, state, lr, weight_decay,
                      betas=(0.9, 0.999), eps=1e-8):
    """One AdamW step in place. state: {"step": t, "m": {...}, "v": {...}}.
    Decay only the parameters with two or more axes."""
    beta1, beta2 = betas
    state["step"] += 1
    t = state["step"]
    for name, p in params.items():
        g, m, v = grads[name], state["m"][name], state["v"][name]
        # Your code: decoupled weight decay, for the matrices only.
        m[...] = beta1 * m + (1 - beta1) * g
        v[...] = beta2 * v + (1 - beta2) * g * g
        m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
        p -= lr * m_hat / (np.sqrt(v_hat) + eps)
# --8<-- [end:ex2-starter]


# --8<-- [start:ex2-solution]
def adamw_groups_step(params, grads, state, lr, weight_decay,
                      betas=(0.9, 0.999), eps=1e-8):
    """One AdamW step in place. state: {"step": t, "m": {...}, "v": {...}}.
    Decay only the parameters with two or more axes."""
    beta1, beta2 = betas
    state["step"] += 1
    t = state["step"]
    for name, p in params.items():
        g, m, v = grads[name], state["m"][name], state["v"][name]
        if p.ndim >= 2:  # decoupled: outside Adam's scaling, before it
            p *= 1 - lr * weight_decay
        m[...] = beta1 * m + (1 - beta1) * g
        v[...] = beta2 * v + (1 - beta2) * g * g
        m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
        p -= lr * m_hat / (np.sqrt(v_hat) + eps)
# --8<-- [end:ex2-solution]


# --8<-- [start:ex2-wrong-decay-all]
# rejected with: not decayed
def adamw_groups_step(params, grads, state, lr, weight_decay,
                      betas=(0.9, 0.999), eps=1e-8):
    beta1, beta2 = betas
    state["step"] += 1
    t = state["step"]
    for name, p in params.items():
        g, m, v = grads[name], state["m"][name], state["v"][name]
        p *= 1 - lr * weight_decay
        m[...] = beta1 * m + (1 - beta1) * g
        v[...] = beta2 * v + (1 - beta2) * g * g
        p -= lr * (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + eps)
# --8<-- [end:ex2-wrong-decay-all]


# --8<-- [start:ex2-wrong-l2]
# rejected with: two or more axes decays
def adamw_groups_step(params, grads, state, lr, weight_decay,
                      betas=(0.9, 0.999), eps=1e-8):
    beta1, beta2 = betas
    state["step"] += 1
    t = state["step"]
    for name, p in params.items():
        g, m, v = grads[name], state["m"][name], state["v"][name]
        if p.ndim >= 2:  # L2 in the gradient: Adam, not AdamW
            g = g + weight_decay * p
        m[...] = beta1 * m + (1 - beta1) * g
        v[...] = beta2 * v + (1 - beta2) * g * g
        p -= lr * (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + eps)
# --8<-- [end:ex2-wrong-l2]


# --8<-- [start:ex2-wrong-decay-after]
# rejected with: two or more axes decays
def adamw_groups_step(params, grads, state, lr, weight_decay,
                      betas=(0.9, 0.999), eps=1e-8):
    beta1, beta2 = betas
    state["step"] += 1
    t = state["step"]
    for name, p in params.items():
        g, m, v = grads[name], state["m"][name], state["v"][name]
        m[...] = beta1 * m + (1 - beta1) * g
        v[...] = beta2 * v + (1 - beta2) * g * g
        p -= lr * (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + eps)
        if p.ndim >= 2:  # decays the updated weight: not PyTorch's order
            p *= 1 - weight_decay
# --8<-- [end:ex2-wrong-decay-after]


# --8<-- [start:ex3-starter]
def warmup_cosine_lr(step, peak, floor, warmup, total):
    """The rate at step 0..total-1: peak (step + 1) / warmup while
    step < warmup, then a cosine from peak down towards floor."""
    # Your code: this is a constant rate.
    return peak
# --8<-- [end:ex3-starter]


# --8<-- [start:ex3-solution]
def warmup_cosine_lr(step, peak, floor, warmup, total):
    """The rate at step 0..total-1: peak (step + 1) / warmup while
    step < warmup, then a cosine from peak down towards floor."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / (total - warmup)  # 0 at the peak, -> 1
    return floor + (peak - floor) * (1 + math.cos(math.pi * progress)) / 2
# --8<-- [end:ex3-solution]


# --8<-- [start:ex3-wrong-zero-start]
# rejected with: warm-up
def warmup_cosine_lr(step, peak, floor, warmup, total):
    if step < warmup:
        return peak * step / warmup
    progress = (step - warmup) / (total - warmup)
    return floor + (peak - floor) * (1 + math.cos(math.pi * progress)) / 2
# --8<-- [end:ex3-wrong-zero-start]


# --8<-- [start:ex3-wrong-no-floor]
# rejected with: cosine
def warmup_cosine_lr(step, peak, floor, warmup, total):
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / (total - warmup)
    return peak * (1 + math.cos(math.pi * progress)) / 2
# --8<-- [end:ex3-wrong-no-floor]


# --8<-- [start:ex3-wrong-cosine-from-zero]
# rejected with: cosine
def warmup_cosine_lr(step, peak, floor, warmup, total):
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = step / total  # counts the warm-up steps into the cosine
    return floor + (peak - floor) * (1 + math.cos(math.pi * progress)) / 2
# --8<-- [end:ex3-wrong-cosine-from-zero]
