# %% [markdown]
# # Practice: attention at scale
#
# Three exercises on [chapter 5](../../chapters/05-attention-at-scale/): the online
# softmax that lets attention visit keys one block at a time, merging attention computed
# over two halves of the keys, and the causal tiles a blocked kernel can skip. Each cell
# below holds a starter with a gap or a bug. Fill it in, run it, then run the self-check
# under it: it prints **✓ Correct** with what your answer shows, or **✗ Not yet** and what
# is wrong. A worked solution is hidden under each exercise; try first.
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

# %% snippet="exercises/chapter05.py:imports"
import math

import numpy as np

from attention.practice import check_merge, check_running_max_and_sum, check_tile_kind


# %% [markdown]
# ## Exercise 1: the running maximum and sum
#
# `running_max_and_sum(blocks)` makes one pass over the blocks of a row of scores and
# returns the row's maximum m and l, the sum of exp(s - m) over every score s. When a new
# block raises the maximum, the sum collected so far was taken relative to the old one.
# Correct it before adding the new block's terms.

# %% snippet="exercises/chapter05.py:ex1-starter"
def running_max_and_sum(blocks):
    """One pass over blocks of a row of scores: (m, l), m = max, l = sum of exp(score - m)."""
    m, l = -math.inf, 0.0
    for block in blocks:
        m_new = max(m, float(np.max(block)))
        # Your code: l was summed relative to m; move it onto m_new before adding.
        l = l + float(np.sum(np.exp(block - m_new)))
        m = m_new
    return m, l


# %%
check_running_max_and_sum(running_max_and_sum)


# %% [markdown] solution="exercises/chapter05.py:ex1-solution"
# <details><summary>Worked solution</summary>
#
# ```python
# def running_max_and_sum(blocks):
#     """One pass over blocks of a row of scores: (m, l), m = max, l = sum of exp(score - m)."""
#     m, l = -math.inf, 0.0
#     for block in blocks:
#         m_new = max(m, float(np.max(block)))
#         l = l * math.exp(m - m_new) + float(np.sum(np.exp(block - m_new)))
#         m = m_new
#     return m, l
# ```
#
# </details>

# %% [markdown]
# ## Exercise 2: merge two halves
#
# Attention over 12 keys was computed in two halves of 6 keys; each half returned its
# normalised output, its row maxima and its row sums. Complete `merge` so that it returns
# attention over all 12 keys without looking at the scores again. The starter's plain
# average treats the halves as equals: they are not.

# %% snippet="exercises/chapter05.py:ex2-starter"
def merge(o1, m1, l1, o2, m2, l2):
    """Attention over all keys from attention over two halves of them.

    o_i (n_q, d_v): normalised output of half i; m_i (n_q,): each row's largest score in
    half i; l_i (n_q,): each row's sum of exp(score - m_i) over half i.
    """
    # Your code: the halves do not count equally.
    return (o1 + o2) / 2


# %%
check_merge(merge)


# %% [markdown] solution="exercises/chapter05.py:ex2-solution"
# <details><summary>Worked solution</summary>
#
# ```python
# def merge(o1, m1, l1, o2, m2, l2):
#     """Attention over all keys from attention over two halves of them.
#
#     o_i (n_q, d_v): normalised output of half i; m_i (n_q,): each row's largest score in
#     half i; l_i (n_q,): each row's sum of exp(score - m_i) over half i.
#     """
#     m = np.maximum(m1, m2)  # (n_q,) the common maximum
#     w1 = l1 * np.exp(m1 - m)  # (n_q,) half 1's softmax mass, relative to m
#     w2 = l2 * np.exp(m2 - m)  # (n_q,)
#     return (w1[:, None] * o1 + w2[:, None] * o2) / (w1 + w2)[:, None]
# ```
#
# </details>

# %% [markdown]
# ## Exercise 3: which tiles can a causal kernel skip?
#
# `tile_kind(q0, q1, k0, k1, n_q, n_k)` says whether the tile of queries q0..q1-1 and keys
# k0..k1-1 is skipped, computed without a mask ("full"), or crossed by the diagonal, for
# the bottom-right causal mask of chapter 2: query i sits at position n_k - n_q + i. The
# starter is right only when n_q = n_k.

# %% snippet="exercises/chapter05.py:ex3-starter"
def tile_kind(q0, q1, k0, k1, n_q, n_k):
    """Causal mask over queries q0..q1-1 and keys k0..k1-1: "skip", "full" or "diagonal"."""
    first, last = q0, q1 - 1  # positions of the tile's first and last query
    # Your code: is that where the queries sit when n_q != n_k?
    if k0 > last:
        return "skip"  # every key is after every query
    if k1 - 1 <= first:
        return "full"  # every query sees every key
    return "diagonal"


# %%
check_tile_kind(tile_kind)

# %% [markdown] solution="exercises/chapter05.py:ex3-solution"
# <details><summary>Worked solution</summary>
#
# ```python
# def tile_kind(q0, q1, k0, k1, n_q, n_k):
#     """Causal mask over queries q0..q1-1 and keys k0..k1-1: "skip", "full" or "diagonal"."""
#     offset = n_k - n_q  # bottom-right: query i sits at position n_k - n_q + i
#     first, last = offset + q0, offset + q1 - 1
#     if k0 > last:
#         return "skip"  # every key is after every query
#     if k1 - 1 <= first:
#         return "full"  # every query sees every key
#     return "diagonal"
# ```
#
# </details>
