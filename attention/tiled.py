"""Tiled attention: the blocked (FlashAttention-style) algorithm at its plainest.

The queries are cut into tiles of ``block_q`` rows and the keys and values into tiles
of ``block_k`` rows. Each query tile walks over the key tiles with the online softmax:
per query row a running maximum ``m``, a running sum ``l`` of ``exp(score - m)`` and a
running sum ``acc`` of ``exp(score - m) * value``; when a tile raises the maximum, the
old sums are multiplied by ``exp(m_old - m_new)``. ``acc / l`` is then exactly the
softmax-weighted average of the values. With a causal mask a query tile stops at the
key tile that holds its last query's position: the tiles after it are never computed.

One loop, no threads, no tricks: chapter 5 teaches it, and ``attention/blocked.py`` is
the same algorithm tuned for speed (its tests compare the two).

References:
- M. Milakov and N. Gimelshein, "Online normalizer calculation for softmax" (2018),
  arXiv:1805.02867.
- T. Dao, D. Y. Fu, S. Ermon, A. Rudra and C. Re, "FlashAttention: Fast and
  Memory-Efficient Exact Attention with IO-Awareness" (NeurIPS 2022),
  arXiv:2205.14135, Algorithm 1.
"""

# --8<-- [start:tiled_attention]
import numpy as np

from attention.scaled_dot_product import check_inputs

TILE = 512  # rows per query tile and per key tile: 512 x 512 float32 is 1 MiB


def tiled_attention(q, k, v, *, causal=False, scale=None,
                    block_q=TILE, block_k=TILE):
    """softmax(q kᵀ · scale) v, one (block_q, block_k) tile of scores at a time.

    q (..., n_q, d), k (..., n_k, d), v (..., n_k, d_v), as for ``attention``;
    ``causal`` is aligned bottom-right (query i sits at position n_k - n_q + i).
    A row with no key to attend to gives zeros.
    """
    q, k, v, _, scale, out_dtype = check_inputs(q, k, v, None, scale,
                                                 fn="tiled_attention")
    for name, size in (("block_q", block_q), ("block_k", block_k)):
        if not isinstance(size, (int, np.integer)) or size < 1:
            raise ValueError(f"tiled_attention: {name} must be a positive "
                             f"integer, got {size!r}")
    n_q, n_k = q.shape[-2], k.shape[-2]
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    out = np.empty(batch + (n_q, v.shape[-1]), dtype=out_dtype)
    for q0 in range(0, n_q, block_q):
        q_tile = q[..., q0:q0 + block_q, :] * scale  # (..., bq, d)
        bq = q_tile.shape[-2]
        pos = n_k - n_q + q0 + np.arange(bq)  # (bq,) each query's position
        k_end = min(n_k, pos[-1] + 1) if causal else n_k  # later keys: unseen
        m = np.full(batch + (bq, 1), -np.inf, q.dtype)  # running maximum
        l = np.zeros(batch + (bq, 1), q.dtype)  # running sum of exp(s - m)
        acc = np.zeros(batch + (bq, v.shape[-1]), q.dtype)  # (..., bq, d_v)
        for k0 in range(0, k_end, block_k):
            k1 = min(k0 + block_k, k_end)
            s = q_tile @ k[..., k0:k1, :].swapaxes(-1, -2)  # (..., bq, bk)
            if causal and k1 - 1 > pos[0]:  # the diagonal crosses this tile
                s = np.where(np.arange(k0, k1) <= pos[:, None], s, -np.inf)
            m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
            shift = np.where(m_new == -np.inf, 0, m_new)  # no -inf - -inf
            p = np.exp(s - shift)  # (..., bq, bk)
            alpha = np.exp(m - shift)  # (..., bq, 1) old sums onto m_new
            l = l * alpha + p.sum(axis=-1, keepdims=True)
            acc = acc * alpha + p @ v[..., k0:k1, :]  # (..., bq, d_v)
            m = m_new
        out[..., q0:q0 + bq, :] = acc / np.where(l == 0, 1, l)
    return out
# --8<-- [end:tiled_attention]
