"""Practice exercises of chapter 5: starters and worked solutions, one source for the page and the notebook.

Each exercise has a `exN-starter` and a `exN-solution` section; the page includes them by
snippet, and tests/practice/test_exercises.py runs each section on its own (after the
`imports` section) through its self-check. Starter and solution define the same name on
purpose: the reader replaces the one with the other.
"""

# --8<-- [start:imports]
import math

import numpy as np

from attention.model import CONFIGS
from attention.practice.ch05 import (
    check_chunked_attention,
    check_forward_flops,
    check_merge,
    check_partial_attention,
    check_running_max_and_sum,
    check_tile_attention,
    check_tile_kind,
)
# --8<-- [end:imports]

# --8<-- [start:ex1-starter]
def running_max_and_sum(blocks):
    """One pass over the blocks of a row of scores s: (m, l), with m = max(s)
    and l = sum(exp(s - m))."""
    m, l = -math.inf, 0.0
    for block in blocks:
        pass  # Your code: update m and l from this block.
    return m, l
# --8<-- [end:ex1-starter]


# --8<-- [start:ex1-solution]
def running_max_and_sum(blocks):
    """One pass over the blocks of a row of scores s: (m, l), with m = max(s)
    and l = sum(exp(s - m))."""
    m, l = -math.inf, 0.0
    for block in blocks:
        m_new = max(m, float(np.max(block)))
        l = l * math.exp(m - m_new) + float(np.sum(np.exp(block - m_new)))
        m = m_new
    return m, l
# --8<-- [end:ex1-solution]


# --8<-- [start:ex2-starter]
def merge(o1, m1, l1, o2, m2, l2):
    """Attention over all keys from attention over two parts of them.

    o_i (..., n_q, d_v): normalised output of part i; m_i (..., n_q): each
    row's largest score in part i; l_i (..., n_q): each row's sum of
    exp(score - m_i) over part i. The leading axes are batch and heads.
    """
    # Your code: the halves do not count equally.
    return (o1 + o2) / 2
# --8<-- [end:ex2-starter]


# --8<-- [start:ex2-solution]
def merge(o1, m1, l1, o2, m2, l2):
    """Attention over all keys from attention over two parts of them.

    o_i (..., n_q, d_v): normalised output of part i; m_i (..., n_q): each
    row's largest score in part i; l_i (..., n_q): each row's sum of
    exp(score - m_i) over part i. The leading axes are batch and heads.
    """
    m = np.maximum(m1, m2)  # (..., n_q) the common maximum
    w1 = l1 * np.exp(m1 - m)  # (..., n_q) part 1's softmax mass, relative to m
    w2 = l2 * np.exp(m2 - m)  # (..., n_q)
    w1, w2 = w1[..., None], w2[..., None]  # (..., n_q, 1): one weight per row
    return (w1 * o1 + w2 * o2) / (w1 + w2)
# --8<-- [end:ex2-solution]


# --8<-- [start:ex2-wrong-smaller-maximum]
# rejected with: higher
def merge(o1, m1, l1, o2, m2, l2):
    m = np.minimum(m1, m2)  # a common shift, but the smaller one
    w1 = (l1 * np.exp(m1 - m))[..., None]
    w2 = (l2 * np.exp(m2 - m))[..., None]
    return (w1 * o1 + w2 * o2) / (w1 + w2)
# --8<-- [end:ex2-wrong-smaller-maximum]


# --8<-- [start:ex3-starter]
def tile_kind(q0, q1, k0, k1, n_q, n_k):
    """Causal mask over queries q0..q1-1, keys k0..k1-1: "skip", "full" or
    "diagonal"."""
    first, last = q0, q1 - 1  # positions of the tile's first and last query
    # Your code: is that where the queries sit when n_q != n_k?
    if k0 > last:
        return "skip"  # every key is after every query
    if k1 - 1 <= first:
        return "full"  # every query sees every key
    return "diagonal"
# --8<-- [end:ex3-starter]


# --8<-- [start:ex3-solution]
def tile_kind(q0, q1, k0, k1, n_q, n_k):
    """Causal mask over queries q0..q1-1, keys k0..k1-1: "skip", "full" or
    "diagonal"."""
    offset = n_k - n_q  # bottom-right: query i sits at position n_k - n_q + i
    first, last = offset + q0, offset + q1 - 1
    if k0 > last:
        return "skip"  # every key is after every query
    if k1 - 1 <= first:
        return "full"  # every query sees every key
    return "diagonal"
# --8<-- [end:ex3-solution]


# --8<-- [start:ex4-starter]
def tile_attention(q_tile, k, v, q0, block):
    """Causal attention of one query tile, `block` keys at a time.

    q_tile (b_q, d): the queries at positions q0 .. q0 + b_q - 1 of a sequence
    whose keys and values are k (n, d) and v (n, d_v). Query i of the tile sees
    keys 0 .. q0 + i. Returns (b_q, d_v).
    """
    b_q = q_tile.shape[0]
    m = np.full(b_q, -np.inf)  # (b_q,) running maximum of each row
    l = np.zeros(b_q)  # (b_q,) running sum of exp(s - m)
    acc = np.zeros((b_q, v.shape[1]))  # (b_q, d_v) running sum of exp(s - m) v
    # Your code: stop after the last block that the tile's last query can see.
    for k0 in range(0, k.shape[0], block):
        s = q_tile @ k[k0:k0 + block].T / math.sqrt(q_tile.shape[1])  # (b_q, b)
        # Your code: a score of -inf for the keys after each query's position.
        m_new = np.maximum(m, s.max(axis=1))  # (b_q,)
        alpha = np.exp(m - m_new)  # (b_q,)
        p = np.exp(s - m_new[:, None])  # (b_q, b_k)
        l = l * alpha + p.sum(axis=1)
        acc = acc * alpha[:, None] + p @ v[k0:k0 + block]  # (b_q, d_v)
        m = m_new
    return acc / l[:, None]
# --8<-- [end:ex4-starter]


# --8<-- [start:ex4-solution]
def tile_attention(q_tile, k, v, q0, block):
    """Causal attention of one query tile, `block` keys at a time.

    q_tile (b_q, d): the queries at positions q0 .. q0 + b_q - 1 of a sequence
    whose keys and values are k (n, d) and v (n, d_v). Query i of the tile sees
    keys 0 .. q0 + i. Returns (b_q, d_v).
    """
    b_q = q_tile.shape[0]
    positions = q0 + np.arange(b_q)  # (b_q,) where each query sits
    m = np.full(b_q, -np.inf)  # (b_q,) running maximum of each row
    l = np.zeros(b_q)  # (b_q,) running sum of exp(s - m)
    acc = np.zeros((b_q, v.shape[1]))  # (b_q, d_v) running sum of exp(s - m) v
    for k0 in range(0, positions[-1] + 1, block):  # later blocks: never seen
        keys = np.arange(k0, min(k0 + block, k.shape[0]))  # (b_k,) positions
        s = q_tile @ k[keys].T / math.sqrt(q_tile.shape[1])  # (b_q, b_k)
        s = np.where(keys[None, :] <= positions[:, None], s, -np.inf)
        m_new = np.maximum(m, s.max(axis=1))  # (b_q,) finite: key 0 is seen
        alpha = np.exp(m - m_new)  # (b_q,)
        p = np.exp(s - m_new[:, None])  # (b_q, b_k); exp(-inf) = 0
        l = l * alpha + p.sum(axis=1)
        acc = acc * alpha[:, None] + p @ v[keys]  # (b_q, d_v)
        m = m_new
    return acc / l[:, None]
# --8<-- [end:ex4-solution]


# Plausible wrong answers its check must reject (tests/practice/test_wrong_answers.py);
# never shown on the page.

# --8<-- [start:ex1-wrong-two-pass]
# rejected with: do it in one pass
def running_max_and_sum(blocks):
    m = max(float(np.max(block)) for block in blocks)  # first pass: the maximum
    l = sum(float(np.exp(block - m).sum()) for block in blocks)  # second pass: the sum
    return m, l
# --8<-- [end:ex1-wrong-two-pass]


# --8<-- [start:ex1-wrong-concatenates]
# rejected with: loop over it once
def running_max_and_sum(blocks):
    row = np.concatenate(blocks)
    m = float(row.max())
    return m, float(np.exp(row - m).sum())
# --8<-- [end:ex1-wrong-concatenates]


# --8<-- [start:ex1-wrong-keeps-the-blocks]
# rejected with: an answer that keeps blocks to read them later computes NaN
def running_max_and_sum(blocks):
    blocks = list(blocks)
    m = max(float(np.max(block)) for block in blocks)
    return m, sum(float(np.exp(block - m).sum()) for block in blocks)
# --8<-- [end:ex1-wrong-keeps-the-blocks]


# --8<-- [start:ex1-wrong-copies-the-blocks]
# rejected with: one pass keeps only m, l and the current block
def running_max_and_sum(blocks):
    row = np.concatenate([block.copy() for block in blocks])
    m = float(row.max())
    return m, float(np.exp(row - m).sum())
# --8<-- [end:ex1-wrong-copies-the-blocks]


# --8<-- [start:ex1-wrong-no-rescale]
# rejected with: multiply the sum so far by exp(m - m_new)
def running_max_and_sum(blocks):
    m, l = -math.inf, 0.0
    for block in blocks:
        m_new = max(m, float(np.max(block)))
        l = l + float(np.sum(np.exp(block - m_new)))
        m = m_new
    return m, l
# --8<-- [end:ex1-wrong-no-rescale]


# --8<-- [start:ex2-wrong-no-common-maximum]
# rejected with: with the common maximum m = max(m1, m2)
def merge(o1, m1, l1, o2, m2, l2):
    w1, w2 = (l1 * np.exp(m1))[..., None], (l2 * np.exp(m2))[..., None]
    return (w1 * o1 + w2 * o2) / (w1 + w2)
# --8<-- [end:ex2-wrong-no-common-maximum]


# --8<-- [start:ex2-wrong-average]
# rejected with: the plain average
def merge(o1, m1, l1, o2, m2, l2):
    return (o1 + o2) / 2
# --8<-- [end:ex2-wrong-average]


# --8<-- [start:ex2-wrong-2d-only]
# rejected with: on queries (2, 3, 4, 8)
def merge(o1, m1, l1, o2, m2, l2):
    m = np.maximum(m1, m2)
    w1, w2 = l1 * np.exp(m1 - m), l2 * np.exp(m2 - m)
    return (w1[:, None] * o1 + w2[:, None] * o2) / (w1 + w2)[:, None]
# --8<-- [end:ex2-wrong-2d-only]


# --8<-- [start:ex2-wrong-by-l-only]
# rejected with: relative to different maxima
def merge(o1, m1, l1, o2, m2, l2):
    w1, w2 = l1[..., None], l2[..., None]
    return (w1 * o1 + w2 * o2) / (w1 + w2)
# --8<-- [end:ex2-wrong-by-l-only]


# --8<-- [start:ex3-wrong-always-diagonal]
# rejected with: you said 'diagonal'
def tile_kind(q0, q1, k0, k1, n_q, n_k):
    return "diagonal"
# --8<-- [end:ex3-wrong-always-diagonal]


# --8<-- [start:ex3-wrong-off-by-one]
# rejected with: sits at position
def tile_kind(q0, q1, k0, k1, n_q, n_k):
    offset = n_k - n_q
    first, last = offset + q0, offset + q1 - 1
    if k0 >= last:
        return "skip"
    if k1 - 1 <= first:
        return "full"
    return "diagonal"
# --8<-- [end:ex3-wrong-off-by-one]


# --8<-- [start:ex3-wrong-top-left]
# rejected with: sits at position
def tile_kind(q0, q1, k0, k1, n_q, n_k):
    if k0 > q1 - 1:
        return "skip"
    if k1 - 1 <= q0:
        return "full"
    return "diagonal"
# --8<-- [end:ex3-wrong-top-left]


# --8<-- [start:ex4-wrong-one-shot-over-every-key]
# rejected with: Stop the loop after the last block the tile can see
def tile_attention(q_tile, k, v, q0, block):
    positions = q0 + np.arange(q_tile.shape[0])
    s = q_tile @ k.T / math.sqrt(q_tile.shape[1])
    s = np.where(np.arange(k.shape[0])[None, :] <= positions[:, None], s, -np.inf)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return p @ v / p.sum(axis=1, keepdims=True)
# --8<-- [end:ex4-wrong-one-shot-over-every-key]


# --8<-- [start:ex4-wrong-one-shot-over-the-visible-keys]
# rejected with: Go block by block with the online softmax
def tile_attention(q_tile, k, v, q0, block):
    b_q = q_tile.shape[0]
    end = q0 + b_q
    positions = q0 + np.arange(b_q)
    s = q_tile @ k[:end].T / math.sqrt(q_tile.shape[1])
    s = np.where(np.arange(end)[None, :] <= positions[:, None], s, -np.inf)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return p @ v[:end] / p.sum(axis=1, keepdims=True)
# --8<-- [end:ex4-wrong-one-shot-over-the-visible-keys]


# --8<-- [start:ex4-wrong-no-mask]
# rejected with: give them a score of -inf
def tile_attention(q_tile, k, v, q0, block):
    b_q = q_tile.shape[0]
    m, l = np.full(b_q, -np.inf), np.zeros(b_q)
    acc = np.zeros((b_q, v.shape[1]))
    for k0 in range(0, q0 + b_q, block):
        s = q_tile @ k[k0:k0 + block].T / math.sqrt(q_tile.shape[1])
        m_new = np.maximum(m, s.max(axis=1))
        alpha, p = np.exp(m - m_new), np.exp(s - m_new[:, None])
        l = l * alpha + p.sum(axis=1)
        acc = acc * alpha[:, None] + p @ v[k0:k0 + block]
        m = m_new
    return acc / l[:, None]
# --8<-- [end:ex4-wrong-no-mask]


# --8<-- [start:ex5-starter]
def partial_attention(q, k, v, mask):
    """Attention of q (..., n_q, d) over one part of the keys, k, v (...,
    n_k, d), mask (..., n_q, n_k) boolean (True = may attend), with what a
    later merge needs: (output (..., n_q, d_v), each row's log-sum-exp of
    its scaled scores (..., n_q)). A row with no allowed key: output 0,
    log-sum-exp -inf."""
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    scores = np.where(mask, scores, -np.inf)  # (..., n_q, n_k)
    # Your code: the output and each row's log-sum-exp.
    return None, None
# --8<-- [end:ex5-starter]


# --8<-- [start:ex5-solution]
def partial_attention(q, k, v, mask):
    """Attention of q (..., n_q, d) over one part of the keys, k, v (...,
    n_k, d), mask (..., n_q, n_k) boolean (True = may attend), with what a
    later merge needs: (output (..., n_q, d_v), each row's log-sum-exp of
    its scaled scores (..., n_q)). A row with no allowed key: output 0,
    log-sum-exp -inf."""
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    scores = np.where(mask, scores, -np.inf)  # (..., n_q, n_k)
    m = np.max(scores, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)  # an empty row: any shift
    p = np.exp(scores - m)  # <= 1, 0 where blocked
    l = np.sum(p, axis=-1, keepdims=True)
    out = (p @ v) / np.where(l > 0, l, 1.0)  # an empty row stays 0
    with np.errstate(divide="ignore"):  # log(0) = -inf: no key
        lse = (m + np.log(l))[..., 0]
    return out, lse
# --8<-- [end:ex5-solution]

# --8<-- [start:ex5-wrong-unshifted]
# rejected with: overflowed
def partial_attention(q, k, v, mask):
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    scores = np.where(mask, scores, -np.inf)  # (..., n_q, n_k)
    e = np.exp(scores)  # exp(1000) is inf
    l = e.sum(axis=-1, keepdims=True)
    out = (e @ v) / np.where(l > 0, l, 1.0)
    with np.errstate(divide="ignore"):
        return out, np.log(l)[..., 0]
# --8<-- [end:ex5-wrong-unshifted]

# --8<-- [start:ex5-wrong-nan-rows]
# rejected with: in a row with no allowed key
def partial_attention(q, k, v, mask):
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    scores = np.where(mask, scores, -np.inf)  # (..., n_q, n_k)
    m = np.max(scores, axis=-1, keepdims=True)  # -inf for an empty row
    p = np.exp(scores - m)  # -inf - -inf: nan
    l = np.sum(p, axis=-1, keepdims=True)
    return (p @ v) / l, (m + np.log(l))[..., 0]
# --8<-- [end:ex5-wrong-nan-rows]

# --8<-- [start:ex5-wrong-max-as-lse]
# rejected with: largest score
def partial_attention(q, k, v, mask):
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    scores = np.where(mask, scores, -np.inf)  # (..., n_q, n_k)
    m = np.max(scores, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)  # an empty row: any shift
    p = np.exp(scores - m)  # <= 1, 0 where blocked
    l = np.sum(p, axis=-1, keepdims=True)
    out = (p @ v) / np.where(l > 0, l, 1.0)  # an empty row stays 0
    with np.errstate(divide="ignore"):  # log(0) = -inf: no key
        lse = np.max(scores, axis=-1)  # the largest score only
    return out, lse
# --8<-- [end:ex5-wrong-max-as-lse]

# --8<-- [start:ex5-wrong-unscaled-lse]
# rejected with: scaled scores
def partial_attention(q, k, v, mask):
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    scores = np.where(mask, scores, -np.inf)  # (..., n_q, n_k)
    m = np.max(scores, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)  # an empty row: any shift
    p = np.exp(scores - m)  # <= 1, 0 where blocked
    l = np.sum(p, axis=-1, keepdims=True)
    out = (p @ v) / np.where(l > 0, l, 1.0)  # an empty row stays 0
    raw = np.where(mask, q @ np.swapaxes(k, -1, -2), -np.inf)  # not scaled
    top = np.max(raw, axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        lse = (top + np.log(np.sum(np.exp(raw - top), axis=-1, keepdims=True)))[..., 0]
    return out, lse
# --8<-- [end:ex5-wrong-unscaled-lse]


# --8<-- [start:ex6-starter]
def chunked_attention(q, k, v, chunk):
    """Causal attention (bottom-right aligned), `chunk` queries at a time,
    so that only one chunk's scores exist at once."""
    n_q, n_k = q.shape[0], k.shape[0]
    # Your code: this forms every score at once.
    s = q @ k.T / math.sqrt(q.shape[1])  # (n_q, n_k)
    s = np.where(np.tril(np.ones((n_q, n_k), bool), k=n_k - n_q), s, -np.inf)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return p @ v / p.sum(axis=1, keepdims=True)
# --8<-- [end:ex6-starter]


# --8<-- [start:ex6-solution]
def chunked_attention(q, k, v, chunk):
    """Causal attention (bottom-right aligned), `chunk` queries at a time,
    so that only one chunk's scores exist at once."""
    n_q, n_k = q.shape[0], k.shape[0]
    out = np.empty((n_q, v.shape[1]))
    for i0 in range(0, n_q, chunk):
        i1 = min(i0 + chunk, n_q)
        positions = np.arange(i0, i1) + n_k - n_q  # (c,) query positions
        s = q[i0:i1] @ k.T / math.sqrt(q.shape[1])  # (c, n_k): one chunk
        s = np.where(np.arange(n_k) <= positions[:, None], s, -np.inf)
        p = np.exp(s - s.max(axis=1, keepdims=True))
        out[i0:i1] = p @ v / p.sum(axis=1, keepdims=True)
    return out
# --8<-- [end:ex6-solution]


# --8<-- [start:ex6-wrong-all-at-once]
# rejected with: Compute the scores of one chunk of queries at a time
def chunked_attention(q, k, v, chunk):
    n_q, n_k = q.shape[0], k.shape[0]
    s = q @ k.T / math.sqrt(q.shape[1])
    s = np.where(np.tril(np.ones((n_q, n_k), bool), k=n_k - n_q), s, -np.inf)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return p @ v / p.sum(axis=1, keepdims=True)
# --8<-- [end:ex6-wrong-all-at-once]


# --8<-- [start:ex6-wrong-positions-in-chunk]
# rejected with: on 7 queries and 7 keys in chunks of 3
def chunked_attention(q, k, v, chunk):
    n_q, n_k = q.shape[0], k.shape[0]
    out = np.empty((n_q, v.shape[1]))
    for i0 in range(0, n_q, chunk):
        i1 = min(i0 + chunk, n_q)
        s = q[i0:i1] @ k.T / math.sqrt(q.shape[1])
        s = np.where(np.arange(n_k) <= np.arange(i1 - i0)[:, None], s, -np.inf)
        p = np.exp(s - s.max(axis=1, keepdims=True))
        out[i0:i1] = p @ v / p.sum(axis=1, keepdims=True)
    return out
# --8<-- [end:ex6-wrong-positions-in-chunk]


# --8<-- [start:ex6-wrong-top-left]
# rejected with: on 6 queries and 9 keys in chunks of 5
def chunked_attention(q, k, v, chunk):
    n_q, n_k = q.shape[0], k.shape[0]
    out = np.empty((n_q, v.shape[1]))
    for i0 in range(0, n_q, chunk):
        i1 = min(i0 + chunk, n_q)
        s = q[i0:i1] @ k.T / math.sqrt(q.shape[1])
        s = np.where(np.arange(n_k) <= np.arange(i0, i1)[:, None], s, -np.inf)
        p = np.exp(s - s.max(axis=1, keepdims=True))
        out[i0:i1] = p @ v / p.sum(axis=1, keepdims=True)
    return out
# --8<-- [end:ex6-wrong-top-left]


# --8<-- [start:ex6-wrong-first-key-shift]
# rejected with: spread over thousands
def chunked_attention(q, k, v, chunk):
    n_q, n_k = q.shape[0], k.shape[0]
    out = np.empty((n_q, v.shape[1]))
    for i0 in range(0, n_q, chunk):
        i1 = min(i0 + chunk, n_q)
        positions = np.arange(i0, i1) + n_k - n_q
        s = q[i0:i1] @ k.T / math.sqrt(q.shape[1])
        s = np.where(np.arange(n_k) <= positions[:, None], s, -np.inf)
        p = np.exp(s - s[:, :1])  # key 0 is always visible: shift by its score
        out[i0:i1] = p @ v / p.sum(axis=1, keepdims=True)
    return out
# --8<-- [end:ex6-wrong-first-key-shift]


# --8<-- [start:ex6-wrong-drops-the-last-chunk]
# rejected with: Not yet
def chunked_attention(q, k, v, chunk):
    n_q, n_k = q.shape[0], k.shape[0]
    out = np.zeros((n_q, v.shape[1]))
    for i0 in range(0, n_q - chunk + 1, chunk):  # only whole chunks
        i1 = i0 + chunk
        positions = np.arange(i0, i1) + n_k - n_q
        s = q[i0:i1] @ k.T / math.sqrt(q.shape[1])
        s = np.where(np.arange(n_k) <= positions[:, None], s, -np.inf)
        p = np.exp(s - s.max(axis=1, keepdims=True))
        out[i0:i1] = p @ v / p.sum(axis=1, keepdims=True)
    return out
# --8<-- [end:ex6-wrong-drops-the-last-chunk]


# --8<-- [start:ex7-starter]
def forward_flops(config, n):
    """FLOPs of forward(params, config, ids) on one sequence of n tokens of
    a Llama config: matrix products only, 2 per multiply-add, every query
    scored against all n keys."""
    d_model, d_head = config.d_model, config.d_head
    d_kv = config.n_kv_heads * d_head  # GQA: fewer key and value heads
    projections = 2 * d_model * (d_model + d_kv)  # W_q, W_o; W_k, W_v
    feed_forward = 3 * d_model * config.d_ff  # SwiGLU: gate, up and down
    # Your code: this is one layer's weights, for one token.
    return 2 * (projections + feed_forward)
# --8<-- [end:ex7-starter]


# --8<-- [start:ex7-solution]
def forward_flops(config, n):
    """FLOPs of forward(params, config, ids) on one sequence of n tokens of
    a Llama config: matrix products only, 2 per multiply-add, every query
    scored against all n keys."""
    d_model, d_head = config.d_model, config.d_head
    d_kv = config.n_kv_heads * d_head  # GQA: fewer key and value heads
    projections = 2 * d_model * (d_model + d_kv)  # W_q, W_o; W_k, W_v
    feed_forward = 3 * d_model * config.d_ff  # SwiGLU: gate, up and down
    weights = 2 * n * (projections + feed_forward)  # every token, every weight
    # q kᵀ and weights @ v: n x n x d_head multiply-adds each, per head.
    scores_and_sum = 2 * 2 * n * n * d_head * config.n_heads
    lm_head = 2 * n * d_model * config.vocab_size  # tied or not: a product
    return config.n_layers * (weights + scores_and_sum) + lm_head


print(f"Llama 3 8B, 8,192 tokens: "
      f"{forward_flops(CONFIGS['llama-3-8b'], 8192) / 1e12:.1f} TFLOP")
# --8<-- [end:ex7-solution]


# --8<-- [start:ex7-wrong-causal-half]
# rejected with: half the n² work
def forward_flops(config, n):
    d, dh = config.d_model, config.d_head
    weights = 2 * n * (2 * d * d + 2 * d * config.n_kv_heads * dh + 3 * d * config.d_ff)
    attn = 2 * n * n * dh * config.n_heads
    return config.n_layers * (weights + attn) + 2 * n * d * config.vocab_size
# --8<-- [end:ex7-wrong-causal-half]


# --8<-- [start:ex7-wrong-tied-head-free]
# rejected with: a tied head still multiplies
def forward_flops(config, n):
    d, dh = config.d_model, config.d_head
    weights = 2 * n * (2 * d * d + 2 * d * config.n_kv_heads * dh + 3 * d * config.d_ff)
    attn = 4 * n * n * dh * config.n_heads
    head = 0 if config.tie_embeddings else 2 * n * d * config.vocab_size
    return config.n_layers * (weights + attn) + head
# --8<-- [end:ex7-wrong-tied-head-free]


# --8<-- [start:ex7-wrong-no-gqa]
# rejected with: W_k and W_v have n_kv_heads heads
def forward_flops(config, n):
    d, dh = config.d_model, config.d_head
    weights = 2 * n * (4 * d * d + 3 * d * config.d_ff)
    attn = 4 * n * n * dh * config.n_heads
    return config.n_layers * (weights + attn) + 2 * n * d * config.vocab_size
# --8<-- [end:ex7-wrong-no-gqa]


# --8<-- [start:ex7-wrong-no-attention]
# rejected with: the n² part is missing
def forward_flops(config, n):
    d, dh = config.d_model, config.d_head
    weights = 2 * n * (2 * d * d + 2 * d * config.n_kv_heads * dh + 3 * d * config.d_ff)
    return config.n_layers * weights + 2 * n * d * config.vocab_size
# --8<-- [end:ex7-wrong-no-attention]


# --8<-- [start:ex4-wrong-one-shift-per-tile]
# rejected with: Not yet
def tile_attention(q_tile, k, v, q0, block):
    """Causal attention of one query tile, `block` keys at a time.

    q_tile (b_q, d): the queries at positions q0 .. q0 + b_q - 1 of a sequence
    whose keys and values are k (n, d) and v (n, d_v). Query i of the tile sees
    keys 0 .. q0 + i. Returns (b_q, d_v).
    """
    b_q = q_tile.shape[0]
    positions = q0 + np.arange(b_q)  # (b_q,) where each query sits
    m = np.full(b_q, -np.inf)  # (b_q,) running maximum of each row
    l = np.zeros(b_q)  # (b_q,) running sum of exp(s - m)
    acc = np.zeros((b_q, v.shape[1]))  # (b_q, d_v) running sum of exp(s - m) v
    for k0 in range(0, positions[-1] + 1, block):  # later blocks: never seen
        keys = np.arange(k0, min(k0 + block, k.shape[0]))  # (b_k,) positions
        s = q_tile @ k[keys].T / math.sqrt(q_tile.shape[1])  # (b_q, b_k)
        s = np.where(keys[None, :] <= positions[:, None], s, -np.inf)
        m_new = np.maximum(m, s.max())  # (b_q,) finite: key 0 is seen
        alpha = np.exp(m - m_new)  # (b_q,)
        p = np.exp(s - m_new[:, None])  # (b_q, b_k); exp(-inf) = 0
        l = l * alpha + p.sum(axis=1)
        acc = acc * alpha[:, None] + p @ v[keys]  # (b_q, d_v)
        m = m_new
    return acc / l[:, None]
# --8<-- [end:ex4-wrong-one-shift-per-tile]
