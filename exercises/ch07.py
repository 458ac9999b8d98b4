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

from attention.practice.ch07 import (
    check_accumulate,
    check_adamw_groups,
    check_clip_grad_norm,
    check_merge_step,
    check_smoothed_cross_entropy,
    check_warmup_cosine,
)
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
def adamw_groups_step(params, grads, state, groups, betas=(0.9, 0.999),
                      eps=1e-8):
    """One AdamW step in place, as PyTorch's AdamW with parameter groups:
    groups is a list of {"names": [...], "lr": ..., "weight_decay": ...},
    each parameter in one group. state: {"step": t, "m": {...}, "v":
    {...}}, the moments of every parameter, t the steps taken so far."""
    # Your code: this takes no step at all.
    state["step"] += 1
# --8<-- [end:ex2-starter]


# --8<-- [start:ex2-solution]
def adamw_groups_step(params, grads, state, groups, betas=(0.9, 0.999),
                      eps=1e-8):
    """One AdamW step in place, as PyTorch's AdamW with parameter groups:
    groups is a list of {"names": [...], "lr": ..., "weight_decay": ...},
    each parameter in one group. state: {"step": t, "m": {...}, "v":
    {...}}, the moments of every parameter, t the steps taken so far."""
    beta1, beta2 = betas
    state["step"] += 1
    t = state["step"]
    for group in groups:
        lr, decay = group["lr"], group["weight_decay"]
        for name in group["names"]:
            p, g = params[name], grads[name]
            m, v = state["m"][name], state["v"][name]
            p *= 1 - lr * decay  # decoupled: before Adam, outside it
            m[...] = beta1 * m + (1 - beta1) * g
            v[...] = beta2 * v + (1 - beta2) * g * g
            m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
            p -= lr * m_hat / (np.sqrt(v_hat) + eps)
# --8<-- [end:ex2-solution]


# --8<-- [start:ex2-wrong-one-lr]
# rejected with: its own lr
def adamw_groups_step(params, grads, state, groups, betas=(0.9, 0.999),
                      eps=1e-8):
    beta1, beta2 = betas
    state["step"] += 1
    t = state["step"]
    for group in groups:
        lr, decay = groups[0]["lr"], group["weight_decay"]  # the first lr
        for name in group["names"]:
            p, g = params[name], grads[name]
            m, v = state["m"][name], state["v"][name]
            p *= 1 - lr * decay  # decoupled: before Adam, outside it
            m[...] = beta1 * m + (1 - beta1) * g
            v[...] = beta2 * v + (1 - beta2) * g * g
            m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
            p -= lr * m_hat / (np.sqrt(v_hat) + eps)
# --8<-- [end:ex2-wrong-one-lr]


# --8<-- [start:ex2-wrong-l2]
# rejected with: decoupled
def adamw_groups_step(params, grads, state, groups, betas=(0.9, 0.999),
                      eps=1e-8):
    beta1, beta2 = betas
    state["step"] += 1
    t = state["step"]
    for group in groups:
        lr, decay = group["lr"], group["weight_decay"]
        for name in group["names"]:
            p, g = params[name], grads[name]
            m, v = state["m"][name], state["v"][name]
            g = g + decay * p  # L2 in the gradient: Adam, not AdamW
            m[...] = beta1 * m + (1 - beta1) * g
            v[...] = beta2 * v + (1 - beta2) * g * g
            m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
            p -= lr * m_hat / (np.sqrt(v_hat) + eps)
# --8<-- [end:ex2-wrong-l2]


# --8<-- [start:ex2-wrong-decay-after]
# rejected with: before the Adam step
def adamw_groups_step(params, grads, state, groups, betas=(0.9, 0.999),
                      eps=1e-8):
    beta1, beta2 = betas
    state["step"] += 1
    t = state["step"]
    for group in groups:
        lr, decay = group["lr"], group["weight_decay"]
        for name in group["names"]:
            p, g = params[name], grads[name]
            m, v = state["m"][name], state["v"][name]
            m[...] = beta1 * m + (1 - beta1) * g
            v[...] = beta2 * v + (1 - beta2) * g * g
            m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
            p -= lr * m_hat / (np.sqrt(v_hat) + eps)
            p *= 1 - lr * decay  # decays the updated weight
# --8<-- [end:ex2-wrong-decay-after]


# --8<-- [start:ex2-wrong-by-ndim]
# rejected with: the group's weight_decay
def adamw_groups_step(params, grads, state, groups, betas=(0.9, 0.999),
                      eps=1e-8):
    beta1, beta2 = betas
    state["step"] += 1
    t = state["step"]
    for group in groups:
        lr, decay = group["lr"], group["weight_decay"]
        for name in group["names"]:
            p, g = params[name], grads[name]
            m, v = state["m"][name], state["v"][name]
            if p.ndim >= 2:  # decay by shape, whatever the group says
                p *= 1 - lr * group["weight_decay"]
            m[...] = beta1 * m + (1 - beta1) * g
            v[...] = beta2 * v + (1 - beta2) * g * g
            m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
            p -= lr * m_hat / (np.sqrt(v_hat) + eps)
# --8<-- [end:ex2-wrong-by-ndim]


# --8<-- [start:ex2-wrong-no-bias-correction]
# rejected with: Not yet
def adamw_groups_step(params, grads, state, groups, betas=(0.9, 0.999),
                      eps=1e-8):
    beta1, beta2 = betas
    state["step"] += 1
    t = state["step"]
    for group in groups:
        lr, decay = group["lr"], group["weight_decay"]
        for name in group["names"]:
            p, g = params[name], grads[name]
            m, v = state["m"][name], state["v"][name]
            p *= 1 - lr * decay  # decoupled: before Adam, outside it
            m[...] = beta1 * m + (1 - beta1) * g
            v[...] = beta2 * v + (1 - beta2) * g * g
            p -= lr * m / (np.sqrt(v) + eps)
# --8<-- [end:ex2-wrong-no-bias-correction]


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


# --8<-- [start:ex4-starter]
def clip_grad_norm(grads, max_norm, norm_type=2.0):
    """Clipped copies of the gradients {name: array} and their global
    norm before clipping: the p-norm of all entries together (norm_type
    p >= 1, or math.inf for the largest |entry|). Scale every gradient
    by max_norm / (norm + 1e-6), capped at 1."""
    # Your code: this clips each gradient by its own 2-norm.
    clipped = {}
    for name, g in grads.items():
        norm = float(np.sqrt(np.sum(g * g)))
        clipped[name] = g * min(max_norm / (norm + 1e-6), 1.0)
    return clipped, norm
# --8<-- [end:ex4-starter]


# --8<-- [start:ex4-solution]
def clip_grad_norm(grads, max_norm, norm_type=2.0):
    """Clipped copies of the gradients {name: array} and their global
    norm before clipping: the p-norm of all entries together (norm_type
    p >= 1, or math.inf for the largest |entry|). Scale every gradient
    by max_norm / (norm + 1e-6), capped at 1."""
    entries = np.concatenate([np.abs(g).ravel() for g in grads.values()])
    if norm_type == math.inf:
        norm = float(np.max(entries))
    else:
        norm = float(np.sum(entries**norm_type) ** (1 / norm_type))
    scale = min(max_norm / (norm + 1e-6), 1.0)  # one scale for all
    return {name: g * g.dtype.type(scale) for name, g in grads.items()}, norm
# --8<-- [end:ex4-solution]


# --8<-- [start:ex4-wrong-per-parameter]
# rejected with: its own norm
def clip_grad_norm(grads, max_norm, norm_type=2.0):
    clipped = {}
    for name, g in grads.items():
        a = np.abs(g).ravel()
        norm = float(np.max(a) if norm_type == math.inf
                     else np.sum(a**norm_type) ** (1 / norm_type))
        clipped[name] = g * g.dtype.type(min(max_norm / (norm + 1e-6), 1.0))
    entries = np.concatenate([np.abs(g).ravel() for g in grads.values()])
    total = float(np.max(entries) if norm_type == math.inf
                  else np.sum(entries**norm_type) ** (1 / norm_type))
    return clipped, total
# --8<-- [end:ex4-wrong-per-parameter]


# --8<-- [start:ex4-wrong-always-two]
# rejected with: use the norm_type
def clip_grad_norm(grads, max_norm, norm_type=2.0):
    norm = math.sqrt(sum(float(np.sum(g * g)) for g in grads.values()))
    scale = min(max_norm / (norm + 1e-6), 1.0)
    return {name: g * g.dtype.type(scale) for name, g in grads.items()}, norm
# --8<-- [end:ex4-wrong-always-two]


# --8<-- [start:ex4-wrong-uncapped]
# rejected with: capped at 1
def clip_grad_norm(grads, max_norm, norm_type=2.0):
    entries = np.concatenate([np.abs(g).ravel() for g in grads.values()])
    if norm_type == math.inf:
        norm = float(np.max(entries))
    else:
        norm = float(np.sum(entries**norm_type) ** (1 / norm_type))
    scale = max_norm / (norm + 1e-6)  # scales small gradients up too
    return {name: g * g.dtype.type(scale) for name, g in grads.items()}, norm
# --8<-- [end:ex4-wrong-uncapped]


# --8<-- [start:ex4-wrong-no-epsilon]
# rejected with: norm + 1e-6
def clip_grad_norm(grads, max_norm, norm_type=2.0):
    entries = np.concatenate([np.abs(g).ravel() for g in grads.values()])
    if norm_type == math.inf:
        norm = float(np.max(entries))
    else:
        norm = float(np.sum(entries**norm_type) ** (1 / norm_type))
    scale = min(max_norm / norm, 1.0)
    return {name: g * g.dtype.type(scale) for name, g in grads.items()}, norm
# --8<-- [end:ex4-wrong-no-epsilon]


# --8<-- [start:ex4-wrong-no-abs]
# rejected with: Not yet
def clip_grad_norm(grads, max_norm, norm_type=2.0):
    entries = np.concatenate([g.ravel() for g in grads.values()])  # signs kept
    if norm_type == math.inf:
        norm = float(np.max(entries))
    else:
        norm = float(np.sum(entries**norm_type) ** (1 / norm_type))
    scale = min(max_norm / (norm + 1e-6), 1.0)
    return {name: g * g.dtype.type(scale) for name, g in grads.items()}, norm
# --8<-- [end:ex4-wrong-no-abs]


# --8<-- [start:ex5-starter]
def smoothed_cross_entropy(logits, targets, smoothing=0.0, ignore_index=-100):
    """Mean cross-entropy of logits (..., V) against integer targets (...),
    over the targets that are not ignore_index, with label smoothing:
    the true distribution puts 1 - smoothing + smoothing / V on the target
    and smoothing / V on every other class. Returns a float."""
    # Your code: this is the loss of a model that knows nothing, log V.
    return float(np.log(logits.shape[-1]))
# --8<-- [end:ex5-starter]


# --8<-- [start:ex5-solution]
def smoothed_cross_entropy(logits, targets, smoothing=0.0, ignore_index=-100):
    """Mean cross-entropy of logits (..., V) against integer targets (...),
    over the targets that are not ignore_index, with label smoothing:
    the true distribution puts 1 - smoothing + smoothing / V on the target
    and smoothing / V on every other class. Returns a float."""
    shifted = logits - np.max(logits, axis=-1, keepdims=True)  # no overflow
    log_p = shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))
    keep = targets != ignore_index
    safe = np.where(keep, targets, 0)  # any valid class where ignored
    nll = -np.take_along_axis(log_p, safe[..., None], axis=-1)[..., 0]
    uniform = -np.mean(log_p, axis=-1)  # against smoothing / V on each class
    rows = (1 - smoothing) * nll + smoothing * uniform
    return float(np.sum(rows[keep]) / np.sum(keep))
# --8<-- [end:ex5-solution]


# --8<-- [start:ex5-wrong-unshifted]
# rejected with: overflowed
def smoothed_cross_entropy(logits, targets, smoothing=0.0, ignore_index=-100):
    log_p = np.log(np.exp(logits) / np.sum(np.exp(logits), axis=-1, keepdims=True))
    keep = targets != ignore_index
    safe = np.where(keep, targets, 0)
    nll = -np.take_along_axis(log_p, safe[..., None], axis=-1)[..., 0]
    rows = (1 - smoothing) * nll - smoothing * np.mean(log_p, axis=-1)
    return float(np.sum(rows[keep]) / np.sum(keep))
# --8<-- [end:ex5-wrong-unshifted]


# --8<-- [start:ex5-wrong-mean-over-all]
# rejected with: not ignored
def smoothed_cross_entropy(logits, targets, smoothing=0.0, ignore_index=-100):
    shifted = logits - np.max(logits, axis=-1, keepdims=True)
    log_p = shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))
    keep = targets != ignore_index
    safe = np.where(keep, targets, 0)
    nll = -np.take_along_axis(log_p, safe[..., None], axis=-1)[..., 0]
    rows = (1 - smoothing) * nll - smoothing * np.mean(log_p, axis=-1)
    return float(np.mean(np.where(keep, rows, 0.0)))  # ignored rows count as 0
# --8<-- [end:ex5-wrong-mean-over-all]


# --8<-- [start:ex5-wrong-others-only]
# rejected with: the target included
def smoothed_cross_entropy(logits, targets, smoothing=0.0, ignore_index=-100):
    shifted = logits - np.max(logits, axis=-1, keepdims=True)
    log_p = shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))
    keep = targets != ignore_index
    safe = np.where(keep, targets, 0)
    nll = -np.take_along_axis(log_p, safe[..., None], axis=-1)[..., 0]
    V = logits.shape[-1]  # smoothing / (V - 1) on each other class
    others = (-np.sum(log_p, axis=-1) - nll) / (V - 1)
    rows = (1 - smoothing) * nll + smoothing * others
    return float(np.sum(rows[keep]) / np.sum(keep))
# --8<-- [end:ex5-wrong-others-only]


# --8<-- [start:ex5-wrong-mean-shift]
# rejected with: overflowed
def smoothed_cross_entropy(logits, targets, smoothing=0.0, ignore_index=-100):
    shifted = logits - np.mean(logits, axis=-1, keepdims=True)
    log_p = shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))
    keep = targets != ignore_index
    safe = np.where(keep, targets, 0)
    nll = -np.take_along_axis(log_p, safe[..., None], axis=-1)[..., 0]
    rows = (1 - smoothing) * nll - smoothing * np.mean(log_p, axis=-1)
    return float(np.sum(rows[keep]) / np.sum(keep))
# --8<-- [end:ex5-wrong-mean-shift]


# --8<-- [start:ex5-wrong-ignore-minus-100]
# rejected with: Not yet
def smoothed_cross_entropy(logits, targets, smoothing=0.0, ignore_index=-100):
    shifted = logits - np.max(logits, axis=-1, keepdims=True)
    log_p = shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))
    keep = targets != -100  # the default only
    safe = np.where(keep, targets, 0)
    nll = -np.take_along_axis(log_p, safe[..., None], axis=-1)[..., 0]
    rows = (1 - smoothing) * nll - smoothing * np.mean(log_p, axis=-1)
    return float(np.sum(rows[keep]) / np.sum(keep))
# --8<-- [end:ex5-wrong-ignore-minus-100]


# --8<-- [start:ex6-starter]
def accumulate(grads, counts):
    """The gradient of the mean loss over every token of a batch, from its
    micro-batches: grads[i] {name: array} is the gradient of micro-batch
    i's own mean loss over its counts[i] tokens (NaN when it has none).
    counts: a list or an integer array. Returns {name: array}."""
    # Your code: this keeps the first micro-batch's gradient only.
    return {name: g.copy() for name, g in grads[0].items()}
# --8<-- [end:ex6-starter]


# --8<-- [start:ex6-solution]
def accumulate(grads, counts):
    """The gradient of the mean loss over every token of a batch, from its
    micro-batches: grads[i] {name: array} is the gradient of micro-batch
    i's own mean loss over its counts[i] tokens (NaN when it has none).
    counts: a list or an integer array. Returns {name: array}."""
    total = sum(int(n) for n in counts)  # Python ints: no overflow
    out = {name: np.zeros_like(g) for name, g in grads[0].items()}
    for g, n in zip(grads, counts):
        if n == 0:
            continue  # the mean of no tokens: NaN, and no weight
        for name in out:
            out[name] += g[name] * (int(n) / total)
    return out
# --8<-- [end:ex6-solution]


# --8<-- [start:ex6-wrong-mean-of-means]
# rejected with: weigh each by its tokens
def accumulate(grads, counts):
    kept = [g for g, n in zip(grads, counts) if n]
    return {name: sum(g[name] for g in kept) / len(kept) for name in grads[0]}
# --8<-- [end:ex6-wrong-mean-of-means]


# --8<-- [start:ex6-wrong-zero-weight-nan]
# rejected with: holds NaN
def accumulate(grads, counts):
    total = sum(int(n) for n in counts)
    out = {name: np.zeros_like(g) for name, g in grads[0].items()}
    for g, n in zip(grads, counts):
        for name in out:
            out[name] += g[name] * (int(n) / total)  # 0 * NaN is NaN
    return out
# --8<-- [end:ex6-wrong-zero-weight-nan]


# --8<-- [start:ex6-wrong-int32-total]
# rejected with: Not yet
def accumulate(grads, counts):
    total = int(np.sum(np.asarray(counts), dtype=np.int32))  # wraps past 2**31
    out = {name: np.zeros_like(g) for name, g in grads[0].items()}
    for g, n in zip(grads, counts):
        if n == 0:
            continue
        for name in out:
            out[name] += g[name] * (int(n) / total)
    return out
# --8<-- [end:ex6-wrong-int32-total]


# --8<-- [start:ex6-wrong-float64]
# rejected with: float32
def accumulate(grads, counts):
    total = sum(int(n) for n in counts)
    out = {name: np.zeros(g.shape) for name, g in grads[0].items()}  # float64
    for g, n in zip(grads, counts):
        if n == 0:
            continue
        for name in out:
            out[name] += g[name] * (int(n) / total)
    return out
# --8<-- [end:ex6-wrong-float64]
