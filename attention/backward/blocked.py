"""The memory-efficient backward pass of FlashAttention, in NumPy.

The plain backward (``attention.backward.scaled_dot_product``) needs the
weights P, an n_q x n_k matrix, and makes two more of that size (dP and dS).
FlashAttention keeps none of them. The forward saves only its output O and one
number per query row, the log-sum-exp of that row's scores, lse = m + log(l).
From it any tile of P is rebuilt exactly, without the rest of its row:

    P_ij = exp(S_ij - lse_i)

The softmax's backward needs one more number per row, rowsum(dP ⊙ P). It is
known before any tile of dP exists, because

    rowsum(dP ⊙ P)_i = Σ_j (dO_i · V_j) P_ij = dO_i · Σ_j P_ij V_j = dO_i · O_i,

so D = rowsum(dO ⊙ O) comes from two (n_q, d_v) arrays. Then every tile is
independent: rebuild P, form dP = dO Vᵀ and dS = P ⊙ (dP - D), and add the
tile's share to dQ, dK and dV. Extra memory: a few tiles and D, whatever the
sequence length. The price is computing Q Kᵀ and the exponentials again.

The loop order is FlashAttention-2's (Dao 2023, Algorithm 2): key/value tiles
outside, so one tile's dK and dV accumulate in place (in fast memory on a GPU),
query tiles inside, adding their dQ share to dQ in memory (atomic adds on a
GPU). Threads take whole heads; heads that share a key/value head (GQA) go to
the same thread, so no two threads ever add into the same dK or dV.

References:
- T. Dao, D. Y. Fu, S. Ermon, A. Rudra and C. Ré, "FlashAttention: Fast and
  Memory-Efficient Exact Attention with IO-Awareness" (NeurIPS 2022),
  arXiv:2205.14135, Algorithm 4 (backward) and appendix B.2 (D_i = dO_i · O_i).
- T. Dao, "FlashAttention-2: Faster Attention with Better Parallelism and
  Work Partitioning" (2023), arXiv:2307.08691, section 3.1.2, Algorithm 2.
"""

# --8<-- [start:imports]
import math
import os

import numpy as np

from attention._blas_threads import thread_map
from attention.backward._shapes import (check_backward_inputs,
                                        check_tile_sizes, sum_to_shape)
from attention.blocked import BLOCK_K, BLOCK_Q
# --8<-- [end:imports]


# --8<-- [start:query_tiles]
def query_tiles(k0, k1, n_q, n_k, block_q, causal):
    """The query tiles that see key tile [k0, k1): (q0, q1, on_diagonal).

    Without a causal mask every query sees every key. With one (bottom-right
    aligned) query i sits at position n_k - n_q + i and sees keys up to there:
    queries before k0 - (n_k - n_q) see nothing of this tile and are skipped;
    a tile needs the mask only if its first query sits before the tile's
    last key.
    """
    if not causal:
        return [(q0, min(q0 + block_q, n_q), False)
                for q0 in range(0, n_q, block_q)]
    offset = n_k - n_q
    first = max(0, k0 - offset)  # the first query that sees key k0
    return [(q0, min(q0 + block_q, n_q), offset + q0 < k1 - 1)
            for q0 in range(first, n_q, block_q)]
# --8<-- [end:query_tiles]


# --8<-- [start:blocked_attention_backward]
def blocked_attention_backward(d_out, q, k, v, out, lse, *, mask=None,
                               causal=False, scale=None, block_q=BLOCK_Q,
                               block_k=BLOCK_K, workers=None):
    """(dq, dk, dv) of attention from its output and per-row log-sum-exp.

    d_out, out: (..., n_q, d_v); lse: (..., n_q), each row's log-sum-exp
    of its scaled, masked scores (-inf for a row with nothing to attend
    to), as ``blocked_attention(..., return_lse=True)`` gives it. q, k, v,
    mask, causal, scale: as in the forward; GQA's k, v may have fewer
    heads. Extra memory: a few block_q x block_k tiles per thread.
    """
    d_out, q, k, v, mask, group = check_backward_inputs(
        "blocked_attention_backward", d_out, q, k, v, mask)
    out, lse = np.asarray(out, q.dtype), np.asarray(lse, q.dtype)
    if out.shape != d_out.shape or lse.shape != d_out.shape[:-1]:
        raise ValueError(f"blocked_attention_backward: out must have shape "
                         f"{d_out.shape} and lse {d_out.shape[:-1]}, got "
                         f"{out.shape} and {lse.shape}")
    check_tile_sizes("blocked_attention_backward", block_q, block_k)
    dtype, n_q, n_k = q.dtype, q.shape[-2], k.shape[-2]
    if scale is None:  # d_k = 0: every score is 0, whatever the scale
        scale = 1.0 / math.sqrt(q.shape[-1]) if q.shape[-1] else 1.0
    scale = dtype.type(scale)  # in the inputs' dtype: float32 stays float32
    lead = d_out.shape[:-2]  # (batch, heads) of the queries

    # D = rowsum(dO ⊙ O) = rowsum(dP ⊙ P), known before any tile of P.
    big_d = np.einsum("...i,...i->...", d_out, out)  # (..., n_q)
    # A row with nothing to attend to has lse = -inf: shift by 0, P = 0.
    lse = np.where(np.isneginf(lse), dtype.type(0), lse)  # (..., n_q)

    q_shape = q.shape
    q = np.broadcast_to(q, lead + q.shape[-2:])  # (..., n_q, d_k), a view
    dq = np.zeros(q.shape, dtype)  # (..., n_q, d_k)
    dk, dv = np.zeros(k.shape, dtype), np.zeros(v.shape, dtype)
    if mask is not None:
        mask = np.broadcast_to(mask, lead + (n_q, n_k))  # a view, no copy

    def kv_index(b):  # the key/value head that query head b reads
        idx = list(b[len(lead) - (k.ndim - 2):])  # k may lack leading axes
        if group > 1:
            idx[-1] //= group
        return tuple(0 if k.shape[i] == 1 else j for i, j in enumerate(idx))

    tasks = {}  # key/value index -> the query heads that read it
    for b in np.ndindex(lead):
        tasks.setdefault(kv_index(b), []).append(b)

    def run(kv_b):
        for b in tasks[kv_b]:
            _backward_one_head(
                d_out[b], q[b], k[kv_b], v[kv_b], lse[b], big_d[b],
                None if mask is None else mask[b], dq[b], dk[kv_b], dv[kv_b],
                scale=scale, causal=causal, block_q=block_q, block_k=block_k)

    with thread_map(workers or os.cpu_count() or 1) as run_all:
        run_all(run, list(tasks))
    return sum_to_shape(dq, q_shape), dk, dv


def _backward_one_head(d_out, q, k, v, lse, big_d, mask, dq, dk, dv, *,
                       scale, causal, block_q, block_k):
    """One head's tiles; adds into dq (n_q, d_k), dk (n_k, d_k), dv."""
    n_q, n_k = q.shape[0], k.shape[0]
    offset = n_k - n_q  # query i sits at key position offset + i (causal)
    for k0 in range(0, n_k, block_k):  # key/value tiles outside
        k1 = min(k0 + block_k, n_k)
        k_tile, v_tile = k[k0:k1], v[k0:k1]  # (bk, d_k), (bk, d_v)
        tiles = query_tiles(k0, k1, n_q, n_k, block_q, causal)
        for q0, q1, on_diagonal in tiles:  # query tiles inside
            q_tile = q[q0:q1]  # (bq, d_k)
            s = (q_tile @ k_tile.T) * scale  # (bq, bk): the scores again
            if mask is not None and mask.dtype == np.bool_:
                np.copyto(s, -np.inf, where=~mask[q0:q1, k0:k1])
            elif mask is not None:  # a floating mask is added (a bias)
                s += mask[q0:q1, k0:k1]
            if on_diagonal:
                rows = offset + np.arange(q0, q1)[:, None]  # (bq, 1)
                np.copyto(s, -np.inf, where=np.arange(k0, k1) > rows)
            np.subtract(s, lse[q0:q1, None], out=s)
            p = np.exp(s, out=s)  # (bq, bk): P, exact, from one number a row

            do_tile = d_out[q0:q1]  # (bq, d_v)
            dv[k0:k1] += p.T @ do_tile  # (bk, d_v)
            dp = do_tile @ v_tile.T  # (bq, bk)
            np.subtract(dp, big_d[q0:q1, None], out=dp)
            ds = np.multiply(p, dp, out=dp)  # (bq, bk) = P ⊙ (dP - D)
            dq[q0:q1] += (ds @ k_tile) * scale  # (bq, d_k)
            dk[k0:k1] += (ds.T @ q_tile) * scale  # (bk, d_k)
# --8<-- [end:blocked_attention_backward]
