"""Practice exercises of chapter 2: starters and worked solutions, one source for the page and the notebook.

Each exercise has a `exN-starter` and a `exN-solution` section; the page includes them by
snippet, and tests/practice/test_exercises.py runs each section on its own (after the
`imports` section) through its self-check. Starter and solution define the same name on
purpose: the reader replaces the one with the other.
"""

# --8<-- [start:imports]
import math

import numpy as np

from attention import self_attention, softmax
from attention.practice.ch02 import (check_attention_weights,
                                     check_multi_head_scale, check_padding_mask,
                                     check_permutation_test)
# --8<-- [end:imports]

# --8<-- [start:ex1-starter]
def attention_weights(Q, K, scaled=True):
    """softmax(Q Kᵀ / √d_k), row by row; softmax(Q Kᵀ) if scaled is False."""
    scores = Q @ np.swapaxes(K, -1, -2)  # (..., n_q, n_k)
    # Your code: divide the scores by √d_k when `scaled` is True.
    return softmax(scores, axis=-1)
# --8<-- [end:ex1-starter]


# --8<-- [start:ex1-solution]
def attention_weights(Q, K, scaled=True):
    """softmax(Q Kᵀ / √d_k), row by row; softmax(Q Kᵀ) if scaled is False."""
    scores = Q @ np.swapaxes(K, -1, -2)  # (..., n_q, n_k)
    if scaled:
        scores = scores / math.sqrt(Q.shape[-1])
    return softmax(scores, axis=-1)


# How peaked are the rows at d_k = 16? 1,000 trials of 8 queries and keys.
rng = np.random.default_rng(0)
Q16 = rng.normal(size=(1000, 8, 16))
K16 = rng.normal(size=(1000, 8, 16))
for scaled in (False, True):
    top = attention_weights(Q16, K16, scaled=scaled).max(axis=-1)  # (1000, 8)
    print(f"scaled={scaled!s:5}  mean largest weight {top.mean():.2f}, "
          f"rows with one weight above 0.9: {np.mean(top > 0.9):.0%}")
# --8<-- [end:ex1-solution]


# --8<-- [start:ex2-starter]
def make_padding_mask(batch):
    """Boolean mask, True = real token, that broadcasts against scores
    of shape (batch, heads, n_q, n_k)."""
    real = np.array([[token != "<pad>" for token in seq] for seq in batch])
    # Your code: real has shape (batch, n_k). Is that the shape to return?
    return real
# --8<-- [end:ex2-starter]


# --8<-- [start:ex2-solution]
def make_padding_mask(batch):
    """Boolean mask, True = real token, that broadcasts against scores
    of shape (batch, heads, n_q, n_k)."""
    real = np.array([[token != "<pad>" for token in seq] for seq in batch])
    # real is (batch, n_k); broadcasting aligns the LAST axes, so give it
    # axes of size 1 for heads and queries: (batch, 1, 1, n_k).
    return real[:, None, None, :]
# --8<-- [end:ex2-solution]


# --8<-- [start:ex3-starter]
def is_permutation_equivariant(X, W_q, W_k, W_v, perm, causal=False):
    """True if attention of the permuted tokens gives the permuted outputs."""
    out = self_attention(X, W_q, W_k, W_v, causal=causal)
    out_perm = self_attention(X[perm], W_q, W_k, W_v, causal=causal)
    # Your code: compare out_perm with the right rearrangement of out.
    return bool(np.allclose(out_perm, out))
# --8<-- [end:ex3-starter]


# --8<-- [start:ex3-solution]
def is_permutation_equivariant(X, W_q, W_k, W_v, perm, causal=False):
    """True if attention of the permuted tokens gives the permuted outputs."""
    out = self_attention(X, W_q, W_k, W_v, causal=causal)
    out_perm = self_attention(X[perm], W_q, W_k, W_v, causal=causal)
    # Row i of out_perm belongs to the token that was at position perm[i].
    return bool(np.allclose(out_perm, out[perm]))
# --8<-- [end:ex3-solution]


# --8<-- [start:ex4-starter]
def multi_head(x, W_q, W_k, W_v, W_o, n_heads):
    """Multi-head self-attention of x (n, d_model). One line has a bug."""
    n, d_model = x.shape
    d_head = d_model // n_heads
    q = (x @ W_q).reshape(n, n_heads, d_head)  # (n, h, d_head)
    q = q.transpose(1, 0, 2)  # (h, n, d_head)
    k = (x @ W_k).reshape(n, n_heads, d_head)  # (n, h, d_head)
    k = k.transpose(1, 0, 2)  # (h, n, d_head)
    v = (x @ W_v).reshape(n, n_heads, d_head)  # (n, h, d_head)
    v = v.transpose(1, 0, 2)  # (h, n, d_head)
    scores = q @ k.transpose(0, 2, 1) / math.sqrt(d_model)  # (h, n, n)
    out = softmax(scores, axis=-1) @ v  # (h, n, d_head)
    out = out.transpose(1, 0, 2).reshape(n, d_model)  # (n, d_model)
    return out @ W_o
# --8<-- [end:ex4-starter]


# --8<-- [start:ex4-solution]
def multi_head(x, W_q, W_k, W_v, W_o, n_heads):
    """Multi-head self-attention of x (n, d_model)."""
    n, d_model = x.shape
    d_head = d_model // n_heads
    q = (x @ W_q).reshape(n, n_heads, d_head)  # (n, h, d_head)
    q = q.transpose(1, 0, 2)  # (h, n, d_head)
    k = (x @ W_k).reshape(n, n_heads, d_head)  # (n, h, d_head)
    k = k.transpose(1, 0, 2)  # (h, n, d_head)
    v = (x @ W_v).reshape(n, n_heads, d_head)  # (n, h, d_head)
    v = v.transpose(1, 0, 2)  # (h, n, d_head)
    # Each head compares vectors of length d_head: scale by that length.
    scores = q @ k.transpose(0, 2, 1) / math.sqrt(d_head)  # (h, n, n)
    out = softmax(scores, axis=-1) @ v  # (h, n, d_head)
    out = out.transpose(1, 0, 2).reshape(n, d_model)  # (n, d_model)
    return out @ W_o
# --8<-- [end:ex4-solution]


# Plausible wrong answers its check must reject (tests/practice/test_wrong_answers.py);
# never shown on the page.

# --8<-- [start:ex3-wrong-not-causal]
# rejected with: do not decide from `causal` alone
def is_permutation_equivariant(x, W_q, W_k, W_v, perm, causal=False):
    return not causal
# --8<-- [end:ex3-wrong-not-causal]
