"""Practice exercises of chapter 14: starters, worked solutions and plausible wrong answers.

Each exercise has an `exN-starter` and an `exN-solution` section (the page includes them
by snippet) and `exN-wrong-<what>` sections that its self-check must reject (never shown;
tests/practice/test_wrong_answers.py runs them). Starter and solution define the same
name on purpose: the reader replaces the one with the other.
"""

# --8<-- [start:imports]
import numpy as np

from attention.multi_head import merge_heads
from attention.practice.ch14 import (check_copying_score, check_prefix_matching,
                                     check_previous_excess, check_without_head)
# --8<-- [end:imports]

# --8<-- [start:ex1-starter]
def prefix_matching(weights, half):
    """Each head's mean weight from query i (half <= i < n) on key i - half + 1;
    weights (batch, heads, n, n) on sequences of a segment of `half` tokens and
    its repeat. Returns (heads,)."""
    # Your code: this is the weight on the token itself, not the one after.
    rows = np.arange(half, weights.shape[-1])
    return weights[..., rows, rows].mean(axis=-1).mean(axis=-2)
# --8<-- [end:ex1-starter]


# --8<-- [start:ex1-solution]
def prefix_matching(weights, half):
    """Each head's mean weight from query i (half <= i < n) on key i - half + 1;
    weights (batch, heads, n, n) on sequences of a segment of `half` tokens and
    its repeat. Returns (heads,)."""
    rows = np.arange(half, weights.shape[-1])  # the queries of the repeat
    picked = weights[..., rows, rows - half + 1]  # (batch, heads, len(rows))
    return picked.mean(axis=-1).mean(axis=-2)  # over queries, then the batch
# --8<-- [end:ex1-solution]


# --8<-- [start:ex1-wrong-same-token]
# rejected with: the earlier occurrence of the token itself
def prefix_matching(weights, half):
    rows = np.arange(half, weights.shape[-1])
    return weights[..., rows, rows - half].mean(axis=-1).mean(axis=-2)
# --8<-- [end:ex1-wrong-same-token]


# --8<-- [start:ex1-wrong-from-half-minus-one]
# rejected with: the repeat starts at position half
def prefix_matching(weights, half):
    rows = np.arange(half - 1, weights.shape[-1])
    return weights[..., rows, rows - half + 1].mean(axis=-1).mean(axis=-2)
# --8<-- [end:ex1-wrong-from-half-minus-one]


# --8<-- [start:ex1-wrong-one-number]
# rejected with: one score per head
def prefix_matching(weights, half):
    rows = np.arange(half, weights.shape[-1])
    return weights[..., rows, rows - half + 1].mean(axis=-1).mean(axis=-2).mean(axis=-1)
# --8<-- [end:ex1-wrong-one-number]


# --8<-- [start:ex2-starter]
def previous_excess(weights):
    """Each head's previous-token score minus a uniform causal head's;
    weights (batch, heads, n, n). Returns (heads,)."""
    n = weights.shape[-1]
    rows = np.arange(1, n)
    score = weights[..., rows, rows - 1].mean(axis=-1).mean(axis=-2)
    # Your code: a uniform head does not give every query 1 / n.
    return score - 1.0 / n
# --8<-- [end:ex2-starter]


# --8<-- [start:ex2-solution]
def previous_excess(weights):
    """Each head's previous-token score minus a uniform causal head's;
    weights (batch, heads, n, n). Returns (heads,)."""
    n = weights.shape[-1]
    rows = np.arange(1, n)  # query 0 has no previous token
    score = weights[..., rows, rows - 1].mean(axis=-1).mean(axis=-2)
    baseline = np.mean(1.0 / (rows + 1.0))  # query i sees i + 1 positions
    return score - float(baseline)
# --8<-- [end:ex2-solution]


# --8<-- [start:ex2-wrong-over-i]
# rejected with: not 1 / i
def previous_excess(weights):
    n = weights.shape[-1]
    rows = np.arange(1, n)
    score = weights[..., rows, rows - 1].mean(axis=-1).mean(axis=-2)
    return score - float(np.mean(1.0 / rows))
# --8<-- [end:ex2-wrong-over-i]


# --8<-- [start:ex2-wrong-query-zero]
# rejected with: query 0 has no previous token
def previous_excess(weights):
    n = weights.shape[-1]
    rows = np.arange(1, n)
    score = weights[..., rows, rows - 1].mean(axis=-1).mean(axis=-2)
    return score - float(np.mean(1.0 / np.arange(1, n + 1)))
# --8<-- [end:ex2-wrong-query-zero]


# --8<-- [start:ex2-wrong-diagonal]
# rejected with: the diagonal
def previous_excess(weights):
    n = weights.shape[-1]
    rows = np.arange(n)
    score = weights[..., rows, rows].mean(axis=-1).mean(axis=-2)
    return score - float(np.mean(1.0 / (rows + 1.0)))
# --8<-- [end:ex2-wrong-diagonal]


# --8<-- [start:ex3-starter]
def without_head(o, W_O, head):
    """The attention layer's output merge_heads(o) @ W_O with head `head`'s
    output zeroed; o (batch, heads, n, d_head), W_O (heads * d_head, d_model).
    Leave o and W_O as they are."""
    # Your code: nothing is zeroed yet.
    return merge_heads(o) @ W_O
# --8<-- [end:ex3-starter]


# --8<-- [start:ex3-solution]
def without_head(o, W_O, head):
    """The attention layer's output merge_heads(o) @ W_O with head `head`'s
    output zeroed; o (batch, heads, n, d_head), W_O (heads * d_head, d_model).
    Leave o and W_O as they are."""
    kept = o.copy()  # a new array: the caller's o stays whole
    kept[:, head] = 0  # (batch, n, d_head) of that head
    return merge_heads(kept) @ W_O
# --8<-- [end:ex3-solution]


# --8<-- [start:ex3-wrong-in-place]
# rejected with: changed its input
def without_head(o, W_O, head):
    o[:, head] = 0
    return merge_heads(o) @ W_O
# --8<-- [end:ex3-wrong-in-place]


# --8<-- [start:ex3-wrong-position]
# rejected with: zeroed a position
def without_head(o, W_O, head):
    kept = o.copy()
    kept[..., head, :] = 0
    return merge_heads(kept) @ W_O
# --8<-- [end:ex3-wrong-position]


# --8<-- [start:ex3-wrong-columns]
# rejected with: not columns
def without_head(o, W_O, head):
    d_head = o.shape[-1]
    W = W_O.copy()
    W[:, head * d_head:(head + 1) * d_head] = 0
    return merge_heads(o) @ W
# --8<-- [end:ex3-wrong-columns]


# --8<-- [start:ex3-wrong-rescaled]
# rejected with: not rescaled
def without_head(o, W_O, head):
    kept = o.copy()
    kept[:, head] = 0
    heads = o.shape[1]
    return merge_heads(kept) @ W_O * heads / (heads - 1)
# --8<-- [end:ex3-wrong-rescaled]


# --8<-- [start:ex4-starter]
def ov_copying_score(ov):
    """Σλ / Σ|λ| over the eigenvalues λ of the square OV circuit ov."""
    # Your code: the trace is Σλ, but Σ|diagonal| is not Σ|λ|.
    return np.trace(ov) / np.abs(np.diag(ov)).sum()
# --8<-- [end:ex4-starter]


# --8<-- [start:ex4-solution]
def ov_copying_score(ov):
    """Σλ / Σ|λ| over the eigenvalues λ of the square OV circuit ov."""
    eigenvalues = np.linalg.eigvals(ov)  # complex in general
    return float(eigenvalues.sum().real / np.abs(eigenvalues).sum())
# --8<-- [end:ex4-solution]


# --8<-- [start:ex4-wrong-singular-values]
# rejected with: singular values are never negative
def ov_copying_score(ov):
    eigenvalues = np.linalg.eigvals(ov)
    return float(np.linalg.svd(ov, compute_uv=False).sum() / np.abs(eigenvalues).sum())
# --8<-- [end:ex4-wrong-singular-values]


# --8<-- [start:ex4-wrong-real-parts]
# rejected with: its modulus
def ov_copying_score(ov):
    real = np.linalg.eigvals(ov).real
    return float(real.sum() / np.abs(real).sum())
# --8<-- [end:ex4-wrong-real-parts]


# --8<-- [start:ex4-wrong-mean]
# rejected with: the mean eigenvalue
def ov_copying_score(ov):
    return float(np.linalg.eigvals(ov).real.mean())
# --8<-- [end:ex4-wrong-mean]
