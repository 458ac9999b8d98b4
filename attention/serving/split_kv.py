"""Split-KV decoding (Flash-Decoding): one query's cache cut into chunks, each attended
separately, the partial results merged with their log-sum-exps.

References: T. Dao, D. Haziza, F. Massa and G. Sizov, "Flash-Decoding for long-context
inference" (PyTorch blog, October 2023); M. Milakov and N. Gimelshein, "Online normalizer
calculation for softmax" (2018), the rescaling the merge uses.

A chunk c of the keys gives o_c = softmax(s_c) v_c and its log-sum-exp l_c = log Σ_j
exp(s_cj). The full softmax's denominator is Σ_c exp(l_c), so the full output is
Σ_c exp(l_c - L) o_c with L = log Σ_c exp(l_c): a weighted average of the chunks'
outputs. Shifting by the largest l_c keeps every exp at most 1. A chunk whose keys are
all masked has l_c = -inf and weight 0; a query with every key masked gets zeros, as
``attention`` gives.

Why: in decoding a batch has one query per sequence and head, so a kernel that gives
each (sequence, head) one processor has batch x n_heads work items; at batch 1 that
leaves most of a GPU idle while one processor walks a long cache. Chunks of the cache
are independent items, so n_chunks times as many processors work at once, and the
merge is a small second pass.
"""

# --8<-- [start:split_kv]
import numpy as np

from attention.scaled_dot_product import check_inputs, attention
from attention.softmax import logsumexp


def chunk_attention(q, k, v, mask=None):
    """One chunk: (output (..., n_q, d_v), log-sum-exp (..., n_q)) of the
    scaled scores of q (..., n_q, d) against k (..., n_c, d); mask
    (..., n_q, n_c) as in ``attention``: boolean (True = may attend) or
    floating (added to the scores). A fully masked row: 0 and -inf."""
    q, k, v, mask, scale, _ = check_inputs(q, k, v, mask,
                                            fn="chunk_attention")
    scores = (q @ np.swapaxes(k, -1, -2)) * scale  # (..., n_q, n_c)
    if mask is not None and mask.dtype == np.bool_:
        scores = np.where(mask, scores, -np.inf)  # blocked: exp gives 0
    elif mask is not None:
        scores = scores + mask  # a bias, as attention adds it
    lse = logsumexp(scores, axis=-1)  # no keys: -inf
    return attention(q, k, v, mask=mask, scale=scale), lse


def merge_chunks(outputs, lses):
    """Merge chunk results: outputs (n_chunks, ..., d_v) and lses
    (n_chunks, ...) -> (the full output (..., d_v), its lse (...))."""
    top = lses.max(axis=0)                       # (...) the largest lse
    shift = np.where(np.isfinite(top), top, 0.0)  # all chunks masked: 0
    weights = np.exp(lses - shift)               # (n_chunks, ...) <= 1
    total = weights.sum(axis=0)                  # (...)
    merged = (weights[..., None] * outputs).sum(axis=0)  # (..., d_v)
    safe = np.where(total > 0, total, 1.0)[..., None]
    with np.errstate(divide="ignore"):  # log(0) = -inf: nothing to attend
        return merged / safe, shift + np.log(total)


def split_kv_attention(q, k, v, *, chunk, mask=None):
    """attention(q, k, v, mask=mask), its keys taken chunk at a time.
    q (..., n_q, d), k (..., n_k, d), v (..., n_k, d_v), mask
    broadcastable to (..., n_q, n_k), boolean or floating as in
    ``attention``. No keys at all: zeros, as ``attention`` gives."""
    if (isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer))
            or chunk < 1):
        raise ValueError(f"split_kv_attention: chunk must be a positive "
                         f"integer, got {chunk!r}")
    q, k, v, mask, _, out_dtype = check_inputs(q, k, v, mask,
                                                fn="split_kv_attention")
    n_k = k.shape[-2]
    if mask is not None:  # a key axis of 1 broadcast: give it n_k columns
        mask = np.broadcast_to(mask, (*mask.shape[:-1], n_k))
    parts = [chunk_attention(q, k[..., s:s + chunk, :], v[..., s:s + chunk, :],
                             None if mask is None else mask[..., s:s + chunk])
             for s in range(0, max(n_k, 1), chunk)]  # n_k = 0: one empty
    outputs, lses = zip(*parts)
    merged, _ = merge_chunks(np.stack(outputs), np.stack(lses))
    return merged.astype(out_dtype, copy=False)
# --8<-- [end:split_kv]
