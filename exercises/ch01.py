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


# Plausible wrong answers: never shown on the page; each check must reject them with
# the words after `rejected with:` (tests/practice/ finds and runs every one).

# --8<-- [start:ex1-wrong-forgets-to-add-max-back]
# rejected with: did not add it back
def my_logsumexp(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    return np.log(np.sum(np.exp(x - m), axis=axis))
# --8<-- [end:ex1-wrong-forgets-to-add-max-back]


# --8<-- [start:ex1-wrong-one-max-for-the-whole-array]
# rejected with: its own maximum
def my_logsumexp(x, axis=-1):
    m = np.max(x)
    return np.log(np.sum(np.exp(x - m), axis=axis)) + m
# --8<-- [end:ex1-wrong-one-max-for-the-whole-array]


# --8<-- [start:ex1-wrong-max-without-keepdims]
# rejected with: keepdims=True
def my_logsumexp(x, axis=-1):
    m = np.max(x, axis=axis)
    return np.log(np.sum(np.exp(x - m), axis=axis)) + m
# --8<-- [end:ex1-wrong-max-without-keepdims]


# --8<-- [start:ex1-wrong-always-last-axis]
# rejected with: use the axis you are given (0)
def my_logsumexp(x, axis=-1):
    m = np.max(x, axis=-1, keepdims=True)
    return np.log(np.sum(np.exp(x - m), axis=-1)) + np.squeeze(m, -1)
# --8<-- [end:ex1-wrong-always-last-axis]


# --8<-- [start:ex1-wrong-keeps-the-axis]
# rejected with: should have shape ()
def my_logsumexp(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    return np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
# --8<-- [end:ex1-wrong-keeps-the-axis]


# --8<-- [start:ex1-wrong-nan-on-a-row-of-minus-inf]
# rejected with: shift by 0
# the shift without the -inf guard
def my_logsumexp(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    return np.log(np.sum(np.exp(x - m), axis=axis)) + np.squeeze(m, axis)
# --8<-- [end:ex1-wrong-nan-on-a-row-of-minus-inf]


# --8<-- [start:ex1-wrong-hard-max]
# rejected with: the answer is 3.408
# "log-sum-exp is about the max"
def my_logsumexp(x, axis=-1):
    return np.max(x, axis=axis)
# --8<-- [end:ex1-wrong-hard-max]


# --8<-- [start:ex1-wrong-returns-a-string]
# rejected with: returned str, not numbers
def my_logsumexp(x, axis=-1):
    return "about 1000"
# --8<-- [end:ex1-wrong-returns-a-string]


# --8<-- [start:ex1-wrong-raises]
# rejected with: raised NotImplementedError: todo
def my_logsumexp(x, axis=-1):
    raise NotImplementedError("todo")
# --8<-- [end:ex1-wrong-raises]


# --8<-- [start:ex2-wrong-always-last-axis]
# rejected with: use the axis you are given (1)
def softmax_along(x, axis=-1):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)
# --8<-- [end:ex2-wrong-always-last-axis]


# --8<-- [start:ex2-wrong-without-the-shift]
# rejected with: subtract each row's own maximum
def softmax_along(x, axis=-1):
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)
# --8<-- [end:ex2-wrong-without-the-shift]


# --8<-- [start:ex2-wrong-one-max-for-the-whole-array]
# rejected with: (not the maximum of the whole array)
def softmax_along(x, axis=-1):
    e = np.exp(x - np.max(x))
    return e / np.sum(e, axis=axis, keepdims=True)
# --8<-- [end:ex2-wrong-one-max-for-the-whole-array]


# --8<-- [start:ex2-wrong-max-without-keepdims]
# rejected with: keepdims=True
def softmax_along(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis))
    return e / np.sum(e, axis=axis, keepdims=True)
# --8<-- [end:ex2-wrong-max-without-keepdims]


# --8<-- [start:ex2-wrong-sum-without-keepdims]
# rejected with: keepdims=True
def softmax_along(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis)
# --8<-- [end:ex2-wrong-sum-without-keepdims]


# --8<-- [start:ex2-wrong-trailing-none]
# rejected with: keepdims=True
# right for axis -1 only
def softmax_along(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis)[..., None])
    return e / np.sum(e, axis=axis)[..., None]
# --8<-- [end:ex2-wrong-trailing-none]


# --8<-- [start:ex2-wrong-returns-a-list]
# rejected with: should have the input's shape
def softmax_along(x, axis=-1):
    return [[0.5, 0.5]]
# --8<-- [end:ex2-wrong-returns-a-list]


# --8<-- [start:ex3-wrong-never-refuses]
# rejected with: NumPy refuses this product
def product_shape(a, b):
    return (*a[:-1], b[-1])
# --8<-- [end:ex3-wrong-never-refuses]


# --8<-- [start:ex3-wrong-takes-a-batch-only]
# rejected with: should be (2, 4, 3)
def product_shape(a, b):
    return (*a[:-1], b[-1]) if a[-1] == b[-2] else None
# --8<-- [end:ex3-wrong-takes-a-batch-only]


# --8<-- [start:ex3-wrong-batch-by-max]
# rejected with: the batch sizes 2 and 3 differ
# broadcasts without checking that sizes fit
def product_shape(a, b):
    if a[-1] != b[-2]:
        return None
    width = max(len(a), len(b)) - 2
    pa = (1,) * (width - len(a) + 2) + tuple(a[:-2])
    pb = (1,) * (width - len(b) + 2) + tuple(b[:-2])
    return (*(max(p, q) for p, q in zip(pa, pb)), a[-2], b[-1])
# --8<-- [end:ex3-wrong-batch-by-max]


# --8<-- [start:ex3-wrong-zips-from-the-left]
# rejected with: should be (2, 3, 5)
# zip() without padding drops axes
def product_shape(a, b):
    if a[-1] != b[-2]:
        return None
    batch = []
    for p, q in zip(a[:-2], b[:-2]):
        if p != q and 1 not in (p, q):
            return None
        batch.append(max(p, q))
    return (*batch, a[-2], b[-1])
# --8<-- [end:ex3-wrong-zips-from-the-left]


# --8<-- [start:ex3-wrong-second-to-last-of-b]
# rejected with: should be (3, 5)
# reads b's rows as the output's columns
def product_shape(a, b):
    return (*a[:-1], b[-2]) if a[-1] == b[-2] else None
# --8<-- [end:ex3-wrong-second-to-last-of-b]


# --8<-- [start:ex3-wrong-returns-a-string]
# rejected with: return a tuple of ints
def product_shape(a, b):
    return "(3, 5)"
# --8<-- [end:ex3-wrong-returns-a-string]
