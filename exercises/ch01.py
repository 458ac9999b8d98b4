"""Practice exercises of chapter 1: starters and worked solutions, one source for the page and the notebook.

Each exercise has a `exN-starter` and a `exN-solution` section; the page includes them by
snippet, and the practice tests run each section on its own (after the `imports` section)
through its self-check. Starter and solution define the same name on purpose: the reader
replaces the one with the other.
"""

# --8<-- [start:imports]
import numpy as np

from attention.practice.ch01 import (check_logsumexp, check_product_shape,
                                     check_softmax_along)
# --8<-- [end:imports]

# --8<-- [start:ex1-starter]
def my_logsumexp(x, axis=-1):
    """log(sum(exp(x))) along `axis`, without overflow."""
    x = np.asarray(x, dtype=float)
    # Your code: this naive formula overflows for scores around 1000.
    return np.log(np.sum(np.exp(x), axis=axis))
# --8<-- [end:ex1-starter]


# --8<-- [start:ex1-solution]
def my_logsumexp(x, axis=-1):
    """log(sum(exp(x))) along `axis`, without overflow."""
    x = np.asarray(x, dtype=float)
    m = np.max(x, axis=axis, keepdims=True)  # keep the axis: one max per row
    m = np.where(np.isfinite(m), m, 0.0)  # a row of -inf: shift by 0, not -inf
    total = np.sum(np.exp(x - m), axis=axis)  # each term <= 1, one of them 1
    with np.errstate(divide="ignore"):  # log(0) = -inf for a row of -inf
        return np.log(total) + np.squeeze(m, axis=axis)


lse = my_logsumexp([1000.0, 999.0, 998.0])  # 1000 + log(1 + e^-1 + e^-2)
print(f"{lse:.4f}")
# --8<-- [end:ex1-solution]


# --8<-- [start:ex2-starter]
def softmax_along(x, axis=-1):
    """Stable softmax of `x` along `axis`: sums to one along that axis."""
    x = np.asarray(x, dtype=float)
    # Your code: this works for one row, but not along an axis of a batch.
    e = np.exp(x - np.max(x))
    return e / np.sum(e)
# --8<-- [end:ex2-starter]


# --8<-- [start:ex2-solution]
def softmax_along(x, axis=-1):
    """Stable softmax of `x` along `axis`: sums to one along that axis."""
    x = np.asarray(x, dtype=float)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))  # one max per row
    return e / np.sum(e, axis=axis, keepdims=True)


scores = np.random.default_rng(0).normal(size=(2, 3, 4, 5))
weights = softmax_along(scores, axis=-1)  # (batch, n_heads, n_q, n_k)
print(weights.shape, np.allclose(weights.sum(axis=-1), 1.0))
# --8<-- [end:ex2-solution]


# --8<-- [start:ex3-starter]
def product_shape(a_shape, b_shape):
    """The shape of a @ b (both with >= 2 axes), or None if NumPy refuses."""
    # Your code: this handles two matrices that fit, and nothing else.
    return (a_shape[0], b_shape[1])
# --8<-- [end:ex3-starter]


# --8<-- [start:ex3-solution]
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


print(product_shape((2, 12, 5, 64), (2, 12, 64, 5)))  # scores of 12 heads
print(product_shape((2, 5, 64), (64, 64)))  # one weight matrix, a batch
print(product_shape((5, 64), (5, 64)))  # forgot the transpose
# --8<-- [end:ex3-solution]
