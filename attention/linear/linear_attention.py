"""Causal linear attention in three equal forms: parallel, recurrent and chunked.

With a feature map phi in place of exp(q . k) (``feature_maps``), query i's output is

    o_i = sum_{j <= i} (phi(q_i) . phi(k_j)) v_j  =  phi(q_i) S_i,
    S_i = sum_{j <= i} phi(k_j)^T v_j             (a d_k x d_v state)

(Katharopoulos et al., "Transformers are RNNs", ICML 2020, sections 3.2 and 3.4). The
product (Q K^T) V is Q (K^T V): the same numbers summed in another order. So the same
output can be computed three ways:

- parallel: the masked n x n matrix (Q K^T) * M times V, quadratic in n;
- recurrent: S_i = S_{i-1} + k_i^T v_i, then o_i = q_i S_i: one token at a time, a state
  of fixed size, linear in n;
- chunked: quadratic inside chunks of C tokens, the recurrence between chunks (the state
  carried from one chunk to the next): about n (C (d_k + d_v) + 2 d_k d_v) multiply-adds,
  linear in n for a fixed C, and most of them in matrix products of C rows.

Every function here takes the features already mapped (q and k are phi(q) and phi(k)).
The normaliser sum_{j <= i} phi(q_i) . phi(k_j) of the paper is the same sum with a value
of 1: ``normalize=True`` appends a column of ones to v, computes as without, and divides
by that last column, so the state of the recurrent and chunked forms is then
(d_k, d_v + 1), its last column z = sum_j phi(k_j).

Shapes: q, k (..., n, d_k), v (..., n, d_v), the leading axes equal (batch, heads).
"""

# --8<-- [start:imports]
import numpy as np

from attention.scaled_dot_product import as_array
# --8<-- [end:imports]


# --8<-- [start:checks]
def check_qkv(fn, q, k, v):
    """q, k, v as arrays of one floating dtype (at least float32), or a
    ValueError naming the argument and the shapes."""
    # an array subclass (chapter 5's Counted) stays itself: it is checked only
    q, k, v = (a if isinstance(a, np.ndarray) and a.dtype.kind in "fiub"
               else as_array(fn, name, a)
               for name, a in (("q", q), ("k", k), ("v", v)))
    for name, a in (("q", q), ("k", k), ("v", v)):
        if a.ndim < 2:
            raise ValueError(f"{fn}: {name} must have shape (..., n, d), got "
                             f"shape {a.shape}")
    if q.shape != k.shape:
        raise ValueError(f"{fn}: q and k must have the same shape (..., n, "
                         f"d_k), got q {q.shape} and k {k.shape}")
    if v.shape[:-1] != k.shape[:-1]:
        raise ValueError(f"{fn}: v must have shape (..., n, d_v) with the "
                         f"leading axes and n of k, got k {k.shape} and v "
                         f"{v.shape}")
    dtype = np.result_type(q, k, v, np.float32)
    return q.astype(dtype, copy=False), k.astype(dtype, copy=False), \
        v.astype(dtype, copy=False)


def check_state(fn, state, shape, dtype):
    """A zero state of ``shape``, or the given one checked against it."""
    if state is None:
        return np.zeros(shape, dtype=dtype)
    state = as_array(fn, "initial_state", state)
    if state.shape != tuple(shape):
        raise ValueError(f"{fn}: initial_state must have shape {tuple(shape)} "
                         f"(..., d_k, d_v), got {state.shape}")
    return state.astype(dtype)  # a copy: the caller's state is never changed


def check_chunk_size(fn, chunk_size):
    if isinstance(chunk_size, bool) or not isinstance(
            chunk_size, (int, np.integer)) or chunk_size < 1:
        raise ValueError(f"{fn}: chunk_size must be an integer >= 1, got "
                         f"{chunk_size!r}")
    return int(chunk_size)
# --8<-- [end:checks]


# --8<-- [start:normaliser]
def _with_ones(v):
    """v with a column of ones appended: its output column is the normaliser."""
    ones = np.ones(v.shape[:-1] + (1,), dtype=v.dtype)
    return np.concatenate([v, ones], axis=-1)         # (..., n, d_v + 1)


def _normalised(out):
    """The value columns divided by the last (normaliser) column."""
    return out[..., :-1] / out[..., -1:]
# --8<-- [end:normaliser]


# --8<-- [start:parallel]
def linear_attention_parallel(q, k, v, *, normalize=True):
    """Causal linear attention as one masked n x n product.

    q, k: features phi(q), phi(k) (..., n, d_k); v: (..., n, d_v).
    Returns (..., n, d_v): row i is sum_{j <= i} (q_i . k_j) v_j, divided
    by sum_{j <= i} q_i . k_j when normalize. Memory and work grow as n^2.
    """
    q, k, v = check_qkv("linear_attention_parallel", q, k, v)
    if normalize:
        v = _with_ones(v)
    weights = np.tril(q @ np.swapaxes(k, -1, -2))     # (..., n, n), j <= i
    out = weights @ v                                 # (..., n, d_v)
    return _normalised(out) if normalize else out
# --8<-- [end:parallel]


# --8<-- [start:recurrent]
def linear_attention_recurrent(q, k, v, *, normalize=True, initial_state=None):
    """Causal linear attention one token at a time, from a d_k x d_v state.

    q, k, v as for ``linear_attention_parallel``; initial_state: the state
    S of the tokens before (..., d_k, d_v), or (..., d_k, d_v + 1) with
    normalize, zero if None. Returns (out (..., n, d_v), the final state).
    """
    fn = "linear_attention_recurrent"
    q, k, v = check_qkv(fn, q, k, v)
    if normalize:
        v = _with_ones(v)
    *lead, n, d_k = k.shape
    S = check_state(fn, initial_state, (*lead, d_k, v.shape[-1]), v.dtype)
    out = np.empty(v.shape, dtype=v.dtype)            # (..., n, d_v)
    for t in range(n):
        # S <- S + k_t^T v_t: an outer product (..., d_k, 1) @ (..., 1, d_v)
        S = S + k[..., t, :, None] @ v[..., t, None, :]
        out[..., t, :] = (q[..., t, None, :] @ S)[..., 0, :]  # q_t S
    return (_normalised(out) if normalize else out), S
# --8<-- [end:recurrent]


# --8<-- [start:chunked]
def linear_attention_chunked(q, k, v, *, chunk_size, normalize=True,
                             initial_state=None):
    """Causal linear attention in chunks: quadratic inside, recurrent between.

    q, k, v, initial_state as for ``linear_attention_recurrent``;
    chunk_size: C >= 1 tokens per chunk (the last one padded with zeros,
    which add nothing to the state). Returns (out, the final state).
    """
    fn = "linear_attention_chunked"
    q, k, v = check_qkv(fn, q, k, v)
    C = check_chunk_size(fn, chunk_size)
    if normalize:
        v = _with_ones(v)
    *lead, n, d_k = k.shape
    d_v = v.shape[-1]
    S = check_state(fn, initial_state, (*lead, d_k, d_v), v.dtype)
    if n % C:  # zeros to a whole number of chunks
        pad = [(0, 0)] * len(lead) + [(0, -n % C), (0, 0)]
        q, k, v = (np.pad(a, pad) for a in (q, k, v))  # (..., n + pad, d)
    chunks = q.shape[-2] // C
    q, k, v = (a.reshape(*lead, chunks, C, a.shape[-1])
               for a in (q, k, v))                    # (..., chunks, C, d)
    # Inside each chunk, all chunks at once: the masked C x C product.
    inside = np.tril(q @ np.swapaxes(k, -1, -2)) @ v  # (..., chunks, C, d_v)
    out = np.empty(inside.shape, dtype=v.dtype)
    for c in range(chunks):
        # what the chunks before left in S, then this chunk's own keys
        out[..., c, :, :] = inside[..., c, :, :] + q[..., c, :, :] @ S
        S = S + np.swapaxes(k[..., c, :, :], -1, -2) @ v[..., c, :, :]
    out = out.reshape(*lead, chunks * C, d_v)[..., :n, :]  # (..., n, d_v)
    return (_normalised(out) if normalize else out), S
# --8<-- [end:chunked]
