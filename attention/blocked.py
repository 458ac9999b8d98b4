"""Blocked attention: exact attention without ever holding the n x n score matrix.

Plain attention builds all ``n_q x n_k`` scores, softmaxes them, and multiplies by the
values: memory grows with the square of the sequence length. Here the queries are cut
into tiles of ``block_q`` rows and the keys and values into tiles of ``block_k`` rows.
For one query tile we visit the key tiles one after another and keep, per query row,
three running quantities (the *online softmax*):

- ``m``, the largest score seen so far,
- ``l``, the sum of ``exp(score - m)`` over the keys seen so far,
- ``acc``, the sum of ``exp(score - m) * value`` over the keys seen so far.

When a new key tile raises the maximum from ``m`` to ``m_new``, everything summed so far
was computed relative to the old maximum; multiplying ``l`` and ``acc`` by
``exp(m - m_new)`` moves them onto the new one. After the last tile ``acc / l`` is
exactly the softmax-weighted average of the values: the same result as plain attention,
up to floating-point rounding, with extra memory of a few tiles instead of ``n_q x n_k``.

With a causal mask, key tiles that lie entirely above the diagonal contribute nothing:
we never compute them, which halves the work for long sequences. Tiles entirely below
the diagonal need no mask at all; only the tiles that the diagonal crosses are masked.

Query tiles are independent of each other, so a thread pool works on several at once.
NumPy releases the GIL inside matrix products and inside ufuncs such as ``np.exp`` on
large arrays, so the threads really run in parallel: this matters because NumPy's
elementwise functions use one core each, while the matrix products use them all.

References:
- M. Milakov and N. Gimelshein, "Online normalizer calculation for softmax" (2018),
  arXiv:1805.02867: the running maximum and rescaled running sum.
- M. N. Rabe and C. Staats, "Self-attention Does Not Need O(n^2) Memory" (2021),
  arXiv:2112.05682: attention over key chunks with the same rescaling.
- T. Dao, D. Y. Fu, S. Ermon, A. Rudra and C. Re, "FlashAttention: Fast and
  Memory-Efficient Exact Attention with IO-Awareness" (NeurIPS 2022), arXiv:2205.14135:
  query and key/value tiles sized to fast memory, Algorithm 1.
"""

# --8<-- [start:blocked]
import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from attention._blas_threads import single_threaded_blas
from attention.scaled_dot_product import _check_inputs

BLOCK_Q = 256  # query rows per tile
BLOCK_K = 512  # key rows per tile: a 256 x 512 float32 score tile is 512 KiB


def blocked_attention(q, k, v, *, mask=None, causal=False, scale=None,
                      return_lse=False, block_q=BLOCK_Q, block_k=BLOCK_K,
                      workers=None):
    """Exact softmax(q kᵀ · scale + mask) v, tile by tile, with the online softmax.

    Same interface and result as the plain ``attention``: q (..., n_q, d),
    k (..., n_k, d), v (..., n_k, d_v); leading dimensions broadcast. ``mask``,
    broadcastable to (..., n_q, n_k), is boolean (True = may attend) or floating
    (added to the scores, -inf blocks). ``causal`` is bottom-right aligned: query
    i sits at position n_k - n_q + i and sees keys up to there; it is ANDed with
    a boolean mask. ``scale`` defaults to 1/√d. A row with no allowed key gives
    zeros. The output (..., n_q, d_v) has the inputs' floating dtype; float16
    inputs are computed in float32. Dropout is not part of this package.

    With ``return_lse`` also returns the log-sum-exp of each row's scaled, masked
    scores, (..., n_q), in the dtype computed in (-inf for a row with nothing to
    attend to): all a backward pass needs to rebuild the softmax weights.

    Extra memory is a few ``block_q x block_k`` tiles per worker thread, whatever
    the sequence length. ``workers`` threads (default: one per CPU) share the query
    tiles.
    """
    q, k, v, mask, scale, out_dtype = _check_inputs(
        q, k, v, mask, scale, fn="blocked_attention")  # the plain checks
    for name, size in (("block_q", block_q), ("block_k", block_k)):
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise ValueError(f"blocked_attention: {name} must be a positive integer, got {size!r}")
    dtype = q.dtype  # float32 for float16 inputs
    n_q, d = q.shape[-2:]
    n_k, d_v = v.shape[-2:]
    mask_batch = () if mask is None else mask.shape[:-2]
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2], mask_batch)

    # Broadcast views: no copies, even when e.g. k has one head shared by all queries.
    q = np.broadcast_to(q, batch + (n_q, d))  # (..., n_q, d)
    k = np.broadcast_to(k, batch + (n_k, d))  # (..., n_k, d)
    v = np.broadcast_to(v, batch + (n_k, d_v))  # (..., n_k, d_v)
    if mask is not None:
        mask = np.broadcast_to(mask, batch + (n_q, n_k))  # (..., n_q, n_k)
    out = np.empty(batch + (n_q, d_v), dtype=out_dtype)  # (..., n_q, d_v)
    lse = np.empty(batch + (n_q,), dtype=dtype) if return_lse else None  # (..., n_q)

    # The scale in the inputs' dtype: a float32 array times a float64 NumPy scalar
    # would become float64 (np.sqrt(64) is one).
    scale = dtype.type(scale)

    # One task per (batch index, query tile). With a causal mask the later query
    # tiles see more keys; handing those out first balances the threads.
    tasks = [(b, q0) for b in np.ndindex(batch) for q0 in range(0, n_q, block_q)]
    if causal:
        tasks.sort(key=lambda task: -task[1])

    def run(task):
        b, q0 = task
        q1 = min(q0 + block_q, n_q)
        _attend_query_tile(
            q[b][q0:q1], k[b], v[b],
            None if mask is None else mask[b][q0:q1],
            out[b][q0:q1],
            None if lse is None else lse[b][q0:q1],
            scale=scale,
            # absolute position of the tile's first query (bottom-right alignment)
            first_pos=n_k - n_q + q0 if causal else None,
            block_k=block_k,
        )

    workers = min(workers or os.cpu_count() or 1, len(tasks))
    if workers <= 1:
        for task in tasks:
            run(task)
    else:
        # Our threads already use every core: BLAS inside them gets one thread each.
        with single_threaded_blas(), ThreadPoolExecutor(max_workers=workers) as pool:
            for _ in pool.map(run, tasks):
                pass  # results are written into `out`; this re-raises any error
    return (out, lse) if return_lse else out


def key_tiles(first_pos, bq, n_k, block_k):
    """The key tiles one query tile visits, as (k0, k1, on_diagonal) triples.

    Without a causal mask (``first_pos`` None) that is every key tile. With one, the
    query tile holds positions first_pos .. first_pos + bq - 1: key tiles starting at
    or after first_pos + bq lie entirely above the diagonal and are skipped; a tile
    needs the causal mask only if it reaches past first_pos, the first row's last key.
    """
    if first_pos is None:
        return [(k0, min(k0 + block_k, n_k), False) for k0 in range(0, n_k, block_k)]
    k_end = max(0, min(n_k, first_pos + bq))  # keys at k_end and after: never seen
    return [(k0, min(k0 + block_k, k_end), min(k0 + block_k, k_end) - 1 > first_pos)
            for k0 in range(0, k_end, block_k)]


def _attend_query_tile(q_tile, k, v, mask_tile, out_tile, lse_tile, *, scale,
                       first_pos, block_k):
    """Online softmax over the key tiles for one query tile; writes into ``out_tile``.

    q_tile (bq, d), k (n_k, d), v (n_k, d_v), mask_tile (bq, n_k) or None,
    out_tile (bq, d_v), lse_tile (bq,) or None. ``first_pos`` is the causal
    position of query row 0, or None when there is no causal mask.
    """
    dtype = q_tile.dtype
    bq, n_k = q_tile.shape[0], k.shape[0]
    qs = q_tile * scale  # (bq, d): scale once here, not every score tile

    m = np.full(bq, -np.inf, dtype=dtype)  # (bq,) running max of the scores
    l = np.zeros(bq, dtype=dtype)  # (bq,) running sum of exp(score - m)
    acc = np.zeros(out_tile.shape, dtype=dtype)  # (bq, d_v) running sum of exp(...) * v
    s_buf = np.empty((bq, min(block_k, n_k)), dtype=dtype)  # one tile's scores
    pv_buf = np.empty(out_tile.shape, dtype=dtype)  # (bq, d_v) one tile's p @ v

    if first_pos is not None:
        rows = first_pos + np.arange(bq)[:, None]  # (bq, 1) absolute query positions

    for k0, k1, on_diagonal in key_tiles(first_pos, bq, n_k, block_k):
        s = s_buf[:, : k1 - k0]  # (bq, bk) view into the reused buffer
        np.matmul(qs, k[k0:k1].T, out=s)  # (bq, d) @ (d, bk) -> (bq, bk)

        if mask_tile is not None and mask_tile.dtype == np.bool_:
            np.copyto(s, -np.inf, where=~mask_tile[:, k0:k1])
        elif mask_tile is not None:
            s += mask_tile[:, k0:k1]  # an additive mask (bias): -inf blocks
        if on_diagonal:
            # The diagonal crosses this tile: hide keys after each query's position.
            cols = np.arange(k0, k1)  # (bk,) absolute key positions
            np.copyto(s, -np.inf, where=cols > rows)  # (bq, bk) broadcast compare

        m_new = np.maximum(m, s.max(axis=1))  # (bq,)
        # A row whose keys are all masked so far has m_new = -inf; shifting by 0
        # instead keeps exp(-inf - shift) = 0 and avoids -inf - (-inf) = nan.
        shift = np.where(m_new == -np.inf, dtype.type(0), m_new)  # (bq,)
        np.subtract(s, shift[:, None], out=s)
        np.exp(s, out=s)  # s now holds p = exp(score - shift), in place

        alpha = np.exp(m - shift)  # (bq,) moves old sums onto the new max
        l *= alpha
        l += s.sum(axis=1)
        acc *= alpha[:, None]
        np.matmul(s, v[k0:k1], out=pv_buf)  # (bq, bk) @ (bk, d_v) -> (bq, d_v)
        acc += pv_buf
        m = m_new

    # Rows that saw no allowed key have l = 0 and acc = 0: their output is zeros.
    np.divide(acc, np.where(l == 0, dtype.type(1), l)[:, None], out=out_tile)
    if lse_tile is not None:
        with np.errstate(divide="ignore"):  # log(0) = -inf: nothing to attend to
            np.add(m, np.log(l), out=lse_tile)  # (bq,) log-sum-exp of the scores
# --8<-- [end:blocked]
