"""Practice exercises of chapter 1: starters and worked solutions, one source for the page and the notebook.

Each exercise has a `exN-starter` and a `exN-solution` section; the page includes them by
snippet, and the practice tests run each section on its own (after the `imports` section)
through its self-check. Starter and solution define the same name on purpose: the reader
replaces the one with the other. Sections `exN-wrong-<what>` are plausible wrong answers
the check must reject (never shown on a page).
"""

# --8<-- [start:imports]
import math

import numpy as np

from attention.practice.ch01 import (check_attention_scores, check_entropy,
                                     check_log_softmax, check_logsumexp,
                                     check_product_shape, check_stable_softmax)
# --8<-- [end:imports]

# --8<-- [start:ex1-starter]
def stable_softmax(x, axis=-1):
    """Softmax of x along `axis`. It has a bug: find it with the check."""
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)
# --8<-- [end:ex1-starter]


# --8<-- [start:ex1-solution]
def stable_softmax(x, axis=-1):
    """Softmax of x along `axis`, without overflow."""
    # softmax(x - c) = softmax(x): shift each row by its own maximum, so
    # the largest exponent is exp(0) = 1 and nothing overflows.
    m = np.max(x, axis=axis, keepdims=True)  # (..., 1, ...): one per row
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)
# --8<-- [end:ex1-solution]


# --8<-- [start:ex1-wrong-mean-shift]
# rejected with: Not yet
def stable_softmax(x, axis=-1):
    e = np.exp(x - np.mean(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)
# --8<-- [end:ex1-wrong-mean-shift]


# --8<-- [start:ex1-wrong-min-shift]
# rejected with: Not yet
def stable_softmax(x, axis=-1):
    e = np.exp(x - np.min(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)
# --8<-- [end:ex1-wrong-min-shift]


# --8<-- [start:ex1-wrong-uninitialised]
# rejected with: Not yet
def stable_softmax(x, axis=-1):
    return np.empty(x.shape, x.dtype)  # whatever memory held last
# --8<-- [end:ex1-wrong-uninitialised]


# --8<-- [start:ex1-wrong-float64-out]
# rejected with: float64 for float32
def stable_softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)
# --8<-- [end:ex1-wrong-float64-out]


# --8<-- [start:ex1-wrong-list]
# rejected with: not a NumPy array
def stable_softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return (e / np.sum(e, axis=axis, keepdims=True)).tolist()
# --8<-- [end:ex1-wrong-list]


# --8<-- [start:ex2-starter]
def log_softmax(x, axis=-1):
    """log softmax(x) along `axis`, finite wherever the answer is."""
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    # Your code: the log of a weight that underflowed to 0 is -inf.
    return np.log(e / np.sum(e, axis=axis, keepdims=True))
# --8<-- [end:ex2-starter]


# --8<-- [start:ex2-solution]
def log_softmax(x, axis=-1):
    """log softmax(x) along `axis`, finite wherever the answer is."""
    m = np.max(x, axis=axis, keepdims=True)  # one maximum per row
    m = np.where(np.isfinite(m), m, 0.0)  # a row of -inf: shift by 0
    shifted = x - m  # <= 0, the largest entry exactly 0
    # log softmax = x - log Σ exp(x) = (x - m) - log Σ exp(x - m): the sum
    # is at least 1, so its log never underflows.
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))
# --8<-- [end:ex2-solution]


# --8<-- [start:ex2-wrong-mean-shift]
# rejected with: Not yet
def log_softmax(x, axis=-1):
    shifted = x - np.mean(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))
# --8<-- [end:ex2-wrong-mean-shift]


# --8<-- [start:ex3-starter]
def logsumexp(x, axis=-1, keepdims=False):
    """log Σ exp(x) along `axis`, stable; -inf for a row of -inf."""
    # Your code: exp overflows at scores near 1000.
    return np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims))
# --8<-- [end:ex3-starter]


# --8<-- [start:ex3-solution]
def logsumexp(x, axis=-1, keepdims=False):
    """log Σ exp(x) along `axis`, stable; -inf for a row of -inf."""
    m = np.max(x, axis=axis, keepdims=True)  # keep the axis: one per row
    m = np.where(np.isfinite(m), m, 0.0)  # -inf - (-inf) would be nan
    total = np.sum(np.exp(x - m), axis=axis, keepdims=True)  # >= 1, or 0
    with np.errstate(divide="ignore"):  # log(0) = -inf for a row of -inf
        out = np.log(total) + m
    return out if keepdims else np.squeeze(out, axis=axis)
# --8<-- [end:ex3-solution]


# --8<-- [start:ex3-wrong-mean-shift]
# rejected with: Not yet
def logsumexp(x, axis=-1, keepdims=False):
    c = np.mean(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - c), axis=axis, keepdims=True)) + c
    return out if keepdims else np.squeeze(out, axis=axis)
# --8<-- [end:ex3-wrong-mean-shift]


# --8<-- [start:ex3-wrong-cached-by-shape]
# rejected with: drawn again with new values
_seen = {}
def logsumexp(x, axis=-1, keepdims=False):
    key = (x.shape, axis, keepdims)
    if key not in _seen:
        m = np.max(x, axis=axis, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)
        with np.errstate(divide="ignore"):
            out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
        _seen[key] = out if keepdims else np.squeeze(out, axis=axis)
    return _seen[key]
# --8<-- [end:ex3-wrong-cached-by-shape]


# --8<-- [start:ex4-starter]
def product_shape(a_shape, b_shape):
    """The shape of a @ b (both with >= 2 axes), or None if NumPy refuses."""
    # Your code: this handles two matrices that fit, and nothing else.
    return (a_shape[0], b_shape[1])
# --8<-- [end:ex4-starter]


# --8<-- [start:ex4-solution]
def product_shape(a_shape, b_shape):
    """The shape of a @ b (both with >= 2 axes), or None if NumPy refuses."""
    *a_batch, n, d = a_shape
    *b_batch, d_b, m = b_shape
    if d != d_b:  # the inner sizes must match
        return None
    batch = []  # the leading axes broadcast, matched from the right
    width = max(len(a_batch), len(b_batch))
    a_batch = [1] * (width - len(a_batch)) + a_batch
    b_batch = [1] * (width - len(b_batch)) + b_batch
    for p, q in zip(a_batch, b_batch):
        if p == 1 or p == q:  # a size 1 stretches to the other size
            batch.append(q)
        elif q == 1:
            batch.append(p)
        else:
            return None
    return (*batch, n, m)
# --8<-- [end:ex4-solution]


# --8<-- [start:ex4-wrong-asks-numpy]
# rejected with: not to use
def product_shape(a_shape, b_shape):
    try:
        return np.matmul(np.zeros(a_shape), np.zeros(b_shape)).shape
    except ValueError:
        return None
# --8<-- [end:ex4-wrong-asks-numpy]


# --8<-- [start:ex4-wrong-broadcast-shapes]
# rejected with: not to use
def product_shape(a_shape, b_shape):
    if a_shape[-1] != b_shape[-2]:
        return None
    try:
        batch = np.broadcast_shapes(a_shape[:-2], b_shape[:-2])
    except ValueError:
        return None
    return (*batch, a_shape[-2], b_shape[-1])
# --8<-- [end:ex4-wrong-broadcast-shapes]


# --8<-- [start:ex5-starter]
def attention_scores(q, k):
    """q kᵀ / √d over the last two axes: q (..., n_q, d), k (..., n_k, d)."""
    # Your code: this works for one matrix each, not for a batch of heads.
    return q @ k.T / np.sqrt(q.shape[-1])
# --8<-- [end:ex5-starter]


# --8<-- [start:ex5-solution]
def attention_scores(q, k):
    """q kᵀ / √d over the last two axes: q (..., n_q, d), k (..., n_k, d)."""
    # k.T reverses every axis; swap only the last two: (..., d, n_k).
    k_t = np.swapaxes(k, -1, -2)
    # math.sqrt keeps float32 inputs float32 (np.sqrt(8) is a float64).
    return q @ k_t / math.sqrt(q.shape[-1])  # (..., n_q, n_k)
# --8<-- [end:ex5-solution]


# --8<-- [start:ex6-starter]
def entropy(p):
    """-Σ p log p along the last axis, in nats; a zero probability adds 0."""
    # Your code: what does a zero probability do here?
    return -np.sum(p * np.log(p), axis=-1)
# --8<-- [end:ex6-starter]


# --8<-- [start:ex6-solution]
def entropy(p):
    """-Σ p log p along the last axis, in nats; a zero probability adds 0."""
    positive = p > 0
    # log only where p > 0 (log 1 = 0 elsewhere), so no -inf, no 0 · -inf.
    log_p = np.log(np.where(positive, p, 1.0))
    return -np.sum(np.where(positive, p * log_p, 0.0), axis=-1)
# --8<-- [end:ex6-solution]


# Plausible wrong answers: never shown on the page; each check must reject them with
# the words after `rejected with:` (tests/practice/ finds and runs every one).

# --8<-- [start:ex1-wrong-global-max]
# rejected with: its own maximum
def stable_softmax(x, axis=-1):
    e = np.exp(x - np.max(x))
    return e / np.sum(e, axis=axis, keepdims=True)
# --8<-- [end:ex1-wrong-global-max]


# --8<-- [start:ex1-wrong-last-axis]
# rejected with: use the axis you are given
def stable_softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)
# --8<-- [end:ex1-wrong-last-axis]


# --8<-- [start:ex1-wrong-no-keepdims]
# rejected with: on a
def stable_softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis))
    return e / np.sum(e, axis=axis)
# --8<-- [end:ex1-wrong-no-keepdims]


# --8<-- [start:ex1-wrong-in-place]
# rejected with: changed its input x in place
def stable_softmax(x, axis=-1):
    x -= np.max(x, axis=axis, keepdims=True)
    np.exp(x, out=x)
    x /= np.sum(x, axis=axis, keepdims=True)
    return x
# --8<-- [end:ex1-wrong-in-place]


# --8<-- [start:ex1-wrong-2d-only]
# rejected with: on a (7,) float64 input
def stable_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=1)[:, None])
    return e / e.sum(axis=1)[:, None]
# --8<-- [end:ex1-wrong-2d-only]


# --8<-- [start:ex2-wrong-no-log-sum]
# rejected with: not log Σ exp(x - m)
def log_softmax(x, axis=-1):
    return x - np.max(x, axis=axis, keepdims=True)
# --8<-- [end:ex2-wrong-no-log-sum]


# --8<-- [start:ex2-wrong-last-axis]
# rejected with: use the axis you are given
def log_softmax(x, axis=-1):
    m = np.max(x, axis=-1, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True))
# --8<-- [end:ex2-wrong-last-axis]


# --8<-- [start:ex2-wrong-forgets-the-shift]
# rejected with: on a
def log_softmax(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    return x - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
# --8<-- [end:ex2-wrong-forgets-the-shift]


# --8<-- [start:ex2-wrong-float32-sum]
# rejected with: on a
def log_softmax(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    total = np.sum(np.exp(x - m).astype(np.float16), axis=axis, keepdims=True)
    return x - m - np.log(total.astype(x.dtype))
# --8<-- [end:ex2-wrong-float32-sum]


# --8<-- [start:ex3-wrong-no-add-back]
# rejected with: did not add it back
def logsumexp(x, axis=-1, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    return np.log(np.sum(np.exp(x - m), axis=axis, keepdims=keepdims))
# --8<-- [end:ex3-wrong-no-add-back]


# --8<-- [start:ex3-wrong-nan-for-inf-rows]
# rejected with: not nan
def logsumexp(x, axis=-1, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)
# --8<-- [end:ex3-wrong-nan-for-inf-rows]


# --8<-- [start:ex3-wrong-ignores-keepdims]
# rejected with: the result should have shape (2, 1, 6), got (2, 6)
def logsumexp(x, axis=-1, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    return np.log(np.sum(np.exp(x - m), axis=axis)) + np.squeeze(m, axis=axis)
# --8<-- [end:ex3-wrong-ignores-keepdims]


# --8<-- [start:ex3-wrong-global-max]
# rejected with: on a
def logsumexp(x, axis=-1, keepdims=False):
    m = np.max(x)
    return np.log(np.sum(np.exp(x - m), axis=axis, keepdims=keepdims)) + m
# --8<-- [end:ex3-wrong-global-max]


# --8<-- [start:ex4-wrong-no-broadcast]
# rejected with: should be
def product_shape(a_shape, b_shape):
    if a_shape[-1] != b_shape[-2]:
        return None
    return (*a_shape[:-1], b_shape[-1])
# --8<-- [end:ex4-wrong-no-broadcast]


# --8<-- [start:ex4-wrong-never-refuses]
# rejected with: NumPy refuses this product
def product_shape(a_shape, b_shape):
    width = max(len(a_shape), len(b_shape)) - 2
    a = (1,) * (width + 2 - len(a_shape)) + tuple(a_shape[:-2])
    b = (1,) * (width + 2 - len(b_shape)) + tuple(b_shape[:-2])
    batch = [max(p, q) for p, q in zip(a, b)]  # never checks that sizes fit
    return (*batch, a_shape[-2], b_shape[-1])
# --8<-- [end:ex4-wrong-never-refuses]


# --8<-- [start:ex4-wrong-longer-batch-wins]
# rejected with: should be
def product_shape(a_shape, b_shape):
    if a_shape[-1] != b_shape[-2]:
        return None
    batch = a_shape[:-2] if len(a_shape) >= len(b_shape) else b_shape[:-2]
    return (*batch, a_shape[-2], b_shape[-1])
# --8<-- [end:ex4-wrong-longer-batch-wins]


# --8<-- [start:ex5-wrong-no-scale]
# rejected with: not scaled
def attention_scores(q, k):
    return q @ np.swapaxes(k, -1, -2)
# --8<-- [end:ex5-wrong-no-scale]


# --8<-- [start:ex5-wrong-divides-by-d]
# rejected with: divide by √d
def attention_scores(q, k):
    return q @ np.swapaxes(k, -1, -2) / q.shape[-1]
# --8<-- [end:ex5-wrong-divides-by-d]


# --8<-- [start:ex5-wrong-reverses-axes]
# rejected with: raised ValueError
def attention_scores(q, k):
    return q @ np.transpose(k) / math.sqrt(q.shape[-1])
# --8<-- [end:ex5-wrong-reverses-axes]


# --8<-- [start:ex5-wrong-float64-scale]
# rejected with: on q
def attention_scores(q, k):
    return (q @ np.swapaxes(k, -1, -2)).astype(np.float16) / math.sqrt(q.shape[-1])
# --8<-- [end:ex5-wrong-float64-scale]


# --8<-- [start:ex6-wrong-nan-at-zero]
# rejected with: 0 · log 0 = 0 · (-inf) = nan
def entropy(p):
    return -np.sum(p * np.log(p), axis=-1)
# --8<-- [end:ex6-wrong-nan-at-zero]


# --8<-- [start:ex6-wrong-bits]
# rejected with: that is in bits
def entropy(p):
    safe = np.where(p > 0, p, 1.0)
    return -np.sum(np.where(p > 0, p * np.log2(safe), 0.0), axis=-1)
# --8<-- [end:ex6-wrong-bits]


# --8<-- [start:ex6-wrong-first-axis]
# rejected with: the result should have shape
def entropy(p):
    safe = np.where(p > 0, p, 1.0)
    return -np.sum(np.where(p > 0, p * np.log(safe), 0.0), axis=0)
# --8<-- [end:ex6-wrong-first-axis]


# --8<-- [start:ex3-wrong-squeezes-every-axis]
# rejected with: Not yet
def logsumexp(x, axis=-1, keepdims=False):
    """log Σ exp(x) along `axis`, stable; -inf for a row of -inf."""
    m = np.max(x, axis=axis, keepdims=True)  # keep the axis: one per row
    m = np.where(np.isfinite(m), m, 0.0)  # -inf - (-inf) would be nan
    total = np.sum(np.exp(x - m), axis=axis, keepdims=True)  # >= 1, or 0
    with np.errstate(divide="ignore"):  # log(0) = -inf for a row of -inf
        out = np.log(total) + m
    return out if keepdims else np.squeeze(out)
# --8<-- [end:ex3-wrong-squeezes-every-axis]
