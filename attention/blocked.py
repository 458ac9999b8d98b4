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

Two tricks make the tile loop shorter than the textbook one, and keep it exact:

- Two passes done by the matrix products: with a column of ones next to the keys and
  the values (staged once per call), [q, -shift] @ [k, 1]ᵀ is (score - shift), and
  p @ [v, 1] holds p @ v and, in its last column, the row sums of p.
- Rescaling only when needed: once every row has seen a score, a tile is computed
  against the running maximum without looking for its own maximum, and masked keys are
  zeroed after the exponential by a multiplication. Only if a score rose far above the
  running maximum (a row sum of p above 2^24) is the query tile redone the careful way.
  Without a mask, even the first key tile skips the careful step: each row's shift
  starts at its highest score over the first few keys, which every row sees.

And one that makes the exponentials cheaper where it can: the scores may be kept in
base 2. Multiplying q by scale · log2(e) once per tile gives s · log2(e), and
2^(s · log2(e)) = e^s, so ``np.exp2`` can replace ``np.exp``: the same numbers up to
rounding (that of the one product scale · log2(e), and exp2's own in place of exp's,
both within a few units in the last place). Which is faster depends on the machine:
NumPy vectorises float32 ``exp2`` only with AVX-512 (through Intel's SVML), where it
takes about half of ``exp``'s time, but ``exp`` with AVX2 too, where ``exp2`` takes
over twice as long. So each process times the two once per dtype and keeps the faster
(``_exponential``).

References:
- M. Milakov and N. Gimelshein, "Online normalizer calculation for softmax" (2018),
  arXiv:1805.02867: the running maximum and rescaled running sum.
- M. N. Rabe and C. Staats, "Self-attention Does Not Need O(n^2) Memory" (2021),
  arXiv:2112.05682: attention over key chunks with the same rescaling.
- T. Dao, D. Y. Fu, S. Ermon, A. Rudra and C. Re, "FlashAttention: Fast and
  Memory-Efficient Exact Attention with IO-Awareness" (NeurIPS 2022), arXiv:2205.14135:
  query and key/value tiles sized to fast memory, Algorithm 1.
"""

# --8<-- [start:imports]
import functools
import math
import os
import time

import numpy as np

from attention._blas_threads import thread_map
from attention.scaled_dot_product import check_inputs

BLOCK_Q = 1024  # query rows per tile (fewer if threads would go idle)
BLOCK_K = 256  # key rows per tile: a 1024 x 256 float32 score tile is 1 MiB
LARGEST_SUM = 2.0**24  # a query tile whose p sum to more is redone carefully
LOG2_E = 1 / math.log(2)  # scores times this are in base 2: 2^(s log2 e) = e^s
FIRST_KEYS = 32  # keys whose scores give each row its first shift
# --8<-- [end:imports]


# --8<-- [start:blocked_attention]
def blocked_attention(q, k, v, *, mask=None, causal=False, scale=None,
                      return_lse=False, block_q=None, block_k=BLOCK_K,
                      workers=None):
    """Exact softmax(q kᵀ · scale + mask) v, tile by tile (online softmax).

    Same interface and result as the plain ``attention``: q (..., n_q, d),
    k (..., n_k, d), v (..., n_k, d_v); leading dimensions broadcast.
    ``mask``, broadcastable to (..., n_q, n_k), is boolean (True = may
    attend) or floating (added to the scores, -inf blocks). ``causal`` is
    bottom-right aligned: query i sits at position n_k - n_q + i and sees
    keys up to there; it is ANDed with a boolean mask. ``scale`` defaults to
    1/√d. A row with no allowed key gives zeros. The output (..., n_q, d_v)
    has the inputs' floating dtype; float16 inputs are computed in float32.
    Dropout is not part of this package.

    With ``return_lse`` also returns the log-sum-exp of each row's scaled,
    masked scores, (..., n_q), in the dtype computed in (-inf for a row with
    nothing to attend to): what a backward pass needs to rebuild the weights.

    Extra memory: one copy of k and v (each with a column of ones) and a few
    ``block_q x block_k`` tiles per thread; never n_q x n_k. ``workers``
    threads (default: one per CPU) share the query tiles. ``block_q``
    defaults to BLOCK_Q rows, halved (down to 256) while that would leave
    a thread fewer than two query tiles.
    """
    q, k, v, mask, scale, out_dtype = check_inputs(
        q, k, v, mask, scale, fn="blocked_attention")  # the plain checks
    sizes = (("block_q", BLOCK_Q if block_q is None else block_q),
             ("block_k", block_k))
    for name, size in sizes:
        if (isinstance(size, bool) or not isinstance(size, (int, np.integer))
                or size < 1):
            raise ValueError(f"blocked_attention: {name} must be a positive "
                             f"integer, got {size!r}")
    dtype = q.dtype  # float32 for float16 inputs
    n_q, n_k = q.shape[-2], k.shape[-2]
    mask_batch = () if mask is None else mask.shape[:-2]
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2],
                                mask_batch)
    workers = workers or os.cpu_count() or 1
    # Broadcast views: no copies, even when one k head serves many q heads.
    q = np.broadcast_to(q, batch + q.shape[-2:])  # (..., n_q, d)
    if mask is not None:
        mask = np.broadcast_to(mask, batch + (n_q, n_k))  # (..., n_q, n_k)
    out = np.empty(batch + (n_q, v.shape[-1]), dtype=out_dtype)
    lse = np.empty(batch + (n_q,), dtype=dtype) if return_lse else None
    if block_q is None:  # large tiles cost less each; keep every thread busy
        block_q, n_batch = BLOCK_Q, math.prod(batch)
        while block_q > 256 and n_batch * -(-n_q // block_q) < 2 * workers:
            block_q //= 2  # each thread gets at least two query tiles

    # One task per (batch index, query tile). With a causal mask the later
    # query tiles see more keys; handing those out first balances the threads.
    tasks = [(b, q0) for b in np.ndindex(batch)
             for q0 in range(0, n_q, block_q)]
    if causal:
        tasks.sort(key=lambda task: -task[1])

    def run(task):  # k_ext, v_ext: staged below, before any task runs
        b, q0 = task
        rows = slice(q0, min(q0 + block_q, n_q))
        # A first try that overflows is redone; it need not warn.
        with np.errstate(over="ignore", invalid="ignore"):
            _attend_query_tile(
                q[b][rows], k_ext[b], v_ext[b],
                None if mask is None else mask[b][rows],
                out[b][rows], None if lse is None else lse[b][rows],
                scale=scale,
                # absolute position of the tile's first query (bottom-right)
                first_pos=n_k - n_q + q0 if causal else None,
                block_k=block_k, exponential=exponential,
            )

    exponential = _exponential(dtype)  # timed once per process, not in a thread
    with thread_map(workers) as run_all:  # one pool for the whole call
        k_ext, v_ext = _stage(k, v, run_all, workers)  # [k, 1], [v, 1]
        k_ext = np.broadcast_to(k_ext, batch + k_ext.shape[-2:])  # views
        v_ext = np.broadcast_to(v_ext, batch + v_ext.shape[-2:])
        run_all(run, tasks)
    return (out, lse) if return_lse else out


def _stage(k, v, run_all, workers):
    """[k, 1] (..., n_k, d + 1) and [v, 1] (..., n_k, d_v + 1): one copy each.

    ``workers`` threads (``run_all``) copy a range of keys each, every head.
    """
    staged = [np.empty(x.shape[:-1] + (x.shape[-1] + 1,), dtype=x.dtype)
              for x in (k, v)]

    def copy(keys):  # a slice of key positions
        for x, x_ext in zip((k, v), staged):
            x_ext[..., keys, :-1] = x[..., keys, :]  # (..., n, d)
            x_ext[..., keys, -1] = 1

    n_k = k.shape[-2]
    step = -(-n_k // workers) or 1  # keys per thread, rounded up
    run_all(copy, [slice(k0, k0 + step) for k0 in range(0, n_k, step)])
    return staged
# --8<-- [end:blocked_attention]


# --8<-- [start:key_tiles]
def key_tiles(first_pos, bq, n_k, block_k):
    """The key tiles one query tile visits, as (k0, k1, on_diagonal) triples.

    Without a causal mask (``first_pos`` None) that is every key tile. With
    one, the query tile holds positions first_pos .. first_pos + bq - 1: key
    tiles starting at or after first_pos + bq lie entirely above the diagonal
    and are skipped; a tile needs the causal mask only if it reaches past
    first_pos, the first row's last key.
    """
    if first_pos is None:
        return [(k0, min(k0 + block_k, n_k), False)
                for k0 in range(0, n_k, block_k)]
    k_end = max(0, min(n_k, first_pos + bq))  # keys at k_end and after: unseen
    tiles = []
    for k0 in range(0, k_end, block_k):
        k1 = min(k0 + block_k, k_end)
        tiles.append((k0, k1, k1 - 1 > first_pos))  # (start, end, on_diagonal)
    return tiles
# --8<-- [end:key_tiles]


# --8<-- [start:attend_query_tile]
def _attend_query_tile(q_tile, k_ext, v_ext, mask_tile, out_tile, lse_tile, *,
                       scale, first_pos, block_k, exponential,
                       always_careful=False):
    """Online softmax over the key tiles for one query tile, into ``out_tile``.

    q_tile (bq, d), k_ext (n_k, d + 1), v_ext (n_k, d_v + 1), mask_tile
    (bq, n_k) or None, out_tile (bq, d_v), lse_tile (bq,) or None.
    ``first_pos``: the causal position of query row 0, or None (no causal).
    ``exponential``: (exp, unit), from ``_exponential``. Scores, shifts and
    ``m`` are in units of ``unit`` (base 2: log2 e) until the end; ``exp``
    takes them back: exp(x) = e^(x / unit).
    """
    dtype = q_tile.dtype
    exp, unit = exponential  # np.exp2 and log2 e, or np.exp and 1
    (bq, d), n_k, d_v = q_tile.shape, v_ext.shape[0], out_tile.shape[1]
    q_ext = np.empty((bq, d + 1), dtype=dtype)  # [q * scale * unit, -shift]
    np.multiply(q_tile, scale * unit, out=q_ext[:, :d])  # once per tile
    neg_shift = q_ext[:, d]  # (bq,) a view: minus each row's shift, 0 to start
    neg_shift[:] = 0
    s_buf = np.empty((bq, min(block_k, n_k)), dtype=dtype)  # one tile, reused
    pv = np.empty((bq, d_v + 1), dtype=dtype)  # one tile's [p @ v, sum of p]
    acc = np.zeros((bq, d_v + 1), dtype=dtype)  # running [sum p * v, sum p]
    m = np.full(bq, -np.inf, dtype=dtype)  # (bq,) the shift: running max
    floating = mask_tile is not None and mask_tile.dtype != bool
    bias = mask_tile if floating else None  # an additive mask, or None
    started = False  # has every row a finite shift m?
    if mask_tile is None and not always_careful:
        started = _first_shift(q_ext, k_ext, m, first_pos)

    for k0, k1, on_diagonal in key_tiles(first_pos, bq, n_k, block_k):
        # On the diagonal, the first r0 rows see none of these keys: skip them.
        r0 = max(0, k0 - first_pos) if on_diagonal else 0
        rows = slice(r0, bq)
        s = s_buf[rows, : k1 - k0]  # (rows, bk) view into the reused buffer
        keep = None  # (rows, bk) True where the key is allowed; None: all are
        if bias is None and mask_tile is not None:
            keep = mask_tile[rows, k0:k1]

        np.matmul(q_ext[rows], k_ext[k0:k1].T, out=s)  # score - shift
        if bias is not None:
            # an additive mask (-inf blocks), in the scores' unit
            s += bias[rows, k0:k1] if unit == 1 else bias[rows, k0:k1] * unit
        if on_diagonal:  # keys past a query's position get -inf; rows from
            band = min(bq, k1 - 1 - first_pos) - r0  # r0 + band on see all
            s[:band] += _causal_bias(first_pos + r0 - k0, band, k1 - k0, dtype)
        careful = always_careful or not started
        if careful:  # the online-softmax step: move onto the new max
            if keep is not None:
                np.copyto(s, -np.inf, where=~keep)
            m_new = np.maximum(m[rows], s.max(axis=1) - neg_shift[rows])
            # A row with no score yet keeps shift 0: no -inf - (-inf).
            shift = np.where(m_new == -np.inf, dtype.type(0), m_new)
            s -= (shift + neg_shift[rows])[:, None]  # score - new shift
            acc[rows] *= exp(m[rows] - shift)[:, None]  # onto new shift
            m[rows], neg_shift[rows] = m_new, -shift
            started = bool(np.isfinite(m).all())
        exp(s, out=s)  # p = e^(score - shift), in place
        if keep is not None and not careful:
            s *= keep  # blocked keys get exactly 0
        np.matmul(s, v_ext[k0:k1], out=pv[rows])  # [p @ v, sum of p]
        acc[rows] += pv[rows]

    l = acc[:, d_v]  # (bq,) sum of p
    # Without looking for each tile's max, a score far above the running max
    # gives a huge p (or inf * 0 = nan): then the whole tile is redone.
    if not always_careful and not l.max() <= LARGEST_SUM:
        return _attend_query_tile(q_tile, k_ext, v_ext, mask_tile, out_tile,
                                  lse_tile, scale=scale, first_pos=first_pos,
                                  block_k=block_k, exponential=exponential,
                                  always_careful=True)
    # Rows that saw no allowed key have l = 0 and acc = 0: their output is 0.
    np.divide(acc[:, :d_v], np.where(l == 0, dtype.type(1), l)[:, None],
              out=out_tile)
    if lse_tile is not None:
        with np.errstate(divide="ignore"):  # log(0) = -inf: nothing seen
            np.add(m * (1 / unit), np.log(l), out=lse_tile)  # (bq,) base e


@functools.lru_cache(maxsize=None)
def _exponential(dtype):
    """(np.exp2, log2 e) if NumPy's exp2 is clearly faster, else (np.exp, 1).

    Timed once per process and dtype (best of five on 16,384 numbers like
    score - shift): about a millisecond.
    """
    x = np.linspace(-30, 0, 1 << 14, dtype=dtype)
    out = np.empty_like(x)

    def best_time(fn):
        times = []
        for _ in range(5):
            start = time.perf_counter()
            fn(x, out=out)
            times.append(time.perf_counter() - start)
        return min(times)

    if best_time(np.exp2) < 0.8 * best_time(np.exp):
        return np.exp2, LOG2_E
    return np.exp, 1.0


def _first_shift(q_ext, k_ext, m, first_pos):
    """Set each row's shift m to its highest score over the first few keys.

    Those keys (FIRST_KEYS, fewer if the causal mask hides them from row 0)
    are seen by every row, so the shift is a score of the row: no p
    underflows to a sum of 0, and the first key tile needs no careful step.
    Writes m (bq,) and q_ext's last column (-m); returns whether every row
    got a finite shift (not with inf or nan in q or k: then nothing is set).
    """
    n_k = k_ext.shape[0]
    n = min(FIRST_KEYS, n_k, n_k if first_pos is None else first_pos + 1)
    if n < 1:
        return False
    scores = k_ext[:n] @ q_ext.T  # (n, bq): the last column of q_ext is 0
    np.max(scores, axis=0, out=m)
    if not np.isfinite(m).all():
        m[:] = -np.inf
        return False
    q_ext[:, -1] = -m  # [q, -shift] @ [k, 1]ᵀ = score - shift
    return True


@functools.lru_cache(maxsize=32)
def _causal_bias(offset, bq, bk, dtype):
    """(bq, bk): 0 where query i may see key j (j - i <= offset), else -inf."""
    keep = np.arange(bk) - np.arange(bq)[:, None] <= offset
    bias = np.where(keep, dtype.type(0), dtype.type(-np.inf))
    bias.flags.writeable = False  # shared between calls and threads
    return bias
# --8<-- [end:attend_query_tile]
