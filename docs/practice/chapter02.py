# %% [markdown]
# # Practice: self-attention from scratch
#
# Four exercises on [chapter 2](../../chapters/02-self-attention/). Each cell below holds
# a starter: a function with a gap or a bug. Fill it in, run the cell, then run the
# self-check under it: it prints **✓ Correct** with what your answer shows, or
# **✗ Not yet** and what is wrong. A worked solution is hidden under each exercise; try
# first.
#
# Run the notebook anywhere: the first cell installs the course's package (NumPy only)
# when it is missing.

# %%
import importlib.util
import subprocess
import sys

if importlib.util.find_spec("attention") is None:  # not installed yet: install it
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet",
                           "attention-from-scratch @ git+https://github.com/attention-from-scratch/attention-from-scratch"])

# %% snippet="exercises/chapter02.py:imports"
import math

import numpy as np

from attention import self_attention, softmax
from attention.practice import (check_attention_weights, check_multi_head_scale,
                                check_padding_mask, check_permutation_test)


# %% [markdown]
# ## Exercise 1: how peaked do the rows get without scaling?
#
# `attention_weights(Q, K, scaled)` should return softmax(Q Kᵀ / √d_k), row by row, and
# softmax(Q Kᵀ) when `scaled` is False. The starter never divides. Add the scaling, then
# use your function at d_k = 16: how much of each row goes to its largest weight, with
# and without the division?

# %% snippet="exercises/chapter02.py:ex1-starter"
def attention_weights(Q, K, scaled=True):
    """softmax(Q Kᵀ / √d_k), row by row; softmax(Q Kᵀ) if scaled is False."""
    scores = Q @ np.swapaxes(K, -1, -2)  # (..., n_q, n_k)
    # Your code: divide the scores by √d_k when `scaled` is True.
    return softmax(scores, axis=-1)


# %%
check_attention_weights(attention_weights)


# %% [markdown] solution="exercises/chapter02.py:ex1-solution"
# <details><summary>Worked solution</summary>
#
# ```python
# def attention_weights(Q, K, scaled=True):
#     """softmax(Q Kᵀ / √d_k), row by row; softmax(Q Kᵀ) if scaled is False."""
#     scores = Q @ np.swapaxes(K, -1, -2)  # (..., n_q, n_k)
#     if scaled:
#         scores = scores / math.sqrt(Q.shape[-1])
#     return softmax(scores, axis=-1)
#
#
# # How peaked are the rows at d_k = 16? 1,000 trials of 8 queries and keys.
# rng = np.random.default_rng(0)
# Q16 = rng.normal(size=(1000, 8, 16))
# K16 = rng.normal(size=(1000, 8, 16))
# for scaled in (False, True):
#     top = attention_weights(Q16, K16, scaled=scaled).max(axis=-1)  # (1000, 8)
#     print(f"scaled={scaled!s:5}  mean largest weight {top.mean():.2f}, "
#           f"rows with one weight above 0.9: {np.mean(top > 0.9):.0%}")
# ```
#
# </details>

# %% [markdown]
# ## Exercise 2: a padding mask
#
# A batch of sentences of different lengths is padded to one length with `"<pad>"`
# tokens. Write `make_padding_mask(batch)`: a boolean mask, True where a token is real
# (True means "may attend", as in PyTorch's `scaled_dot_product_attention`; its
# `nn.MultiheadAttention` and `nn.Transformer` use the opposite, True = blocked), shaped
# to broadcast against scores of shape (batch, heads, n_q, n_k), so that no query
# attends to a pad. The starter already finds the pads, but returns them with the shape
# (batch, n_k): run the check, read what it says, and fix the shape.

# %% snippet="exercises/chapter02.py:ex2-starter"
def make_padding_mask(batch):
    """Boolean mask, True = real token, that broadcasts against scores
    of shape (batch, heads, n_q, n_k)."""
    real = np.array([[token != "<pad>" for token in seq] for seq in batch])
    # Your code: real has shape (batch, n_k). Is that the shape to return?
    return real


# %%
check_padding_mask(make_padding_mask)


# %% [markdown] solution="exercises/chapter02.py:ex2-solution"
# <details><summary>Worked solution</summary>
#
# ```python
# def make_padding_mask(batch):
#     """Boolean mask, True = real token, that broadcasts against scores
#     of shape (batch, heads, n_q, n_k)."""
#     real = np.array([[token != "<pad>" for token in seq] for seq in batch])
#     # real is (batch, n_k); broadcasting aligns the LAST axes, so give it
#     # axes of size 1 for heads and queries: (batch, 1, 1, n_k).
#     return real[:, None, None, :]
# ```
#
# </details>

# %% [markdown]
# ## Exercise 3: attention does not know the order of its tokens
#
# Without a mask, self-attention is permutation-equivariant: shuffle the input tokens and
# the outputs come out shuffled the same way ("dog bites man" and "man bites dog" give
# the same output vectors in a different order). That is why transformers must add
# position information to the tokens
# ([chapter 3](../../chapters/ch03-transformer-block/)). Finish
# `is_permutation_equivariant`, which tests exactly that. The check expects True without
# a mask, and, as a control, False with the causal mask, where each token's view depends
# on its position.

# %% snippet="exercises/chapter02.py:ex3-starter"
def is_permutation_equivariant(X, W_q, W_k, W_v, perm, causal=False):
    """True if attention of the permuted tokens gives the permuted outputs."""
    out = self_attention(X, W_q, W_k, W_v, causal=causal)
    out_perm = self_attention(X[perm], W_q, W_k, W_v, causal=causal)
    # Your code: compare out_perm with the right rearrangement of out.
    return bool(np.allclose(out_perm, out))


# %%
check_permutation_test(is_permutation_equivariant)


# %% [markdown] solution="exercises/chapter02.py:ex3-solution"
# <details><summary>Worked solution</summary>
#
# ```python
# def is_permutation_equivariant(X, W_q, W_k, W_v, perm, causal=False):
#     """True if attention of the permuted tokens gives the permuted outputs."""
#     out = self_attention(X, W_q, W_k, W_v, causal=causal)
#     out_perm = self_attention(X[perm], W_q, W_k, W_v, causal=causal)
#     # Row i of out_perm belongs to the token that was at position perm[i].
#     return bool(np.allclose(out_perm, out[perm]))
# ```
#
# </details>

# %% [markdown]
# ## Exercise 4: find the bug
#
# This multi-head attention runs, returns the right shape, and matches the package's
# `multi_head_attention` with one head, but not with four. One line is wrong. Find it
# and fix it.

# %% snippet="exercises/chapter02.py:ex4-starter"
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


# %%
check_multi_head_scale(multi_head)

# %% [markdown] solution="exercises/chapter02.py:ex4-solution"
# <details><summary>Worked solution</summary>
#
# ```python
# def multi_head(x, W_q, W_k, W_v, W_o, n_heads):
#     """Multi-head self-attention of x (n, d_model)."""
#     n, d_model = x.shape
#     d_head = d_model // n_heads
#     q = (x @ W_q).reshape(n, n_heads, d_head)  # (n, h, d_head)
#     q = q.transpose(1, 0, 2)  # (h, n, d_head)
#     k = (x @ W_k).reshape(n, n_heads, d_head)  # (n, h, d_head)
#     k = k.transpose(1, 0, 2)  # (h, n, d_head)
#     v = (x @ W_v).reshape(n, n_heads, d_head)  # (n, h, d_head)
#     v = v.transpose(1, 0, 2)  # (h, n, d_head)
#     # Each head compares vectors of length d_head: scale by that length.
#     scores = q @ k.transpose(0, 2, 1) / math.sqrt(d_head)  # (h, n, n)
#     out = softmax(scores, axis=-1) @ v  # (h, n, d_head)
#     out = out.transpose(1, 0, 2).reshape(n, d_model)  # (n, d_model)
#     return out @ W_o
# ```
#
# </details>
