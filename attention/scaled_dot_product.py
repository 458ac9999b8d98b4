"""Scaled dot-product attention: softmax(Q Kᵀ / √d_k) V.

Reference: Vaswani et al., "Attention Is All You Need" (2017), section 3.2.1. The
interface follows ``torch.nn.functional.scaled_dot_product_attention``: any leading batch
and head dimensions, query and key lengths that may differ, and a boolean mask in which
True means "may attend".
"""

# --8<-- [start:imports]
import math

import numpy as np

from attention.masks import causal_mask
from attention.softmax import softmax
# --8<-- [end:imports]


# --8<-- [start:checks]
def _check_inputs(q, k, v, mask):
    """Turn q, k, v into arrays of one floating dtype; raise clear errors on bad shapes."""
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    for name, a in (("q", q), ("k", k), ("v", v)):
        if a.ndim < 2:
            raise ValueError(f"attention: {name} must have at least 2 dims (..., n, d), got shape {a.shape}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"attention: q and k must share their last dim d_k, got q {q.shape} and k {k.shape}"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"attention: k and v must hold the same number of keys n_k, got k {k.shape} and v {v.shape}"
        )
    try:
        lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(
            f"attention: leading (batch/head) dims do not broadcast: q {q.shape}, k {k.shape}, v {v.shape}"
        ) from None
    dtype = np.result_type(q, k, v)
    if not np.issubdtype(dtype, np.floating):
        dtype = np.float64  # integer inputs: compute in float64
    if mask is not None:
        mask = np.asarray(mask)
        if mask.dtype != np.bool_:
            raise TypeError(
                f"attention: mask must be boolean (True = may attend), got dtype {mask.dtype}"
            )
        scores_shape = (*lead, q.shape[-2], k.shape[-2])
        try:
            fits = np.broadcast_shapes(mask.shape, scores_shape) == scores_shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(
                f"attention: mask of shape {mask.shape} does not broadcast to the scores' "
                f"shape {scores_shape} (..., n_q, n_k)"
            )
    return q.astype(dtype, copy=False), k.astype(dtype, copy=False), v.astype(dtype, copy=False), mask
# --8<-- [end:checks]


# --8<-- [start:attention]
def attention(q, k, v, mask=None, *, causal=False, return_weights=False):
    """Scaled dot-product attention over the last two axes.

    q: (..., n_q, d_k)   k: (..., n_k, d_k)   v: (..., n_k, d_v)
    The leading dims (batch, heads, ...) broadcast against each other.
    mask: boolean, broadcastable to (..., n_q, n_k); True = query may attend to key.
    causal: also apply ``causal_mask(n_q, n_k)`` (bottom-right aligned), ANDed with mask.
    Returns the output (..., n_q, d_v), or (output, weights) if ``return_weights``.

    A query row with no allowed key gets all-zero weights and an all-zero output,
    as PyTorch's scaled_dot_product_attention does for a boolean mask (no NaN).
    The dtype of the inputs is kept: float32 in, float32 out.
    """
    q, k, v, mask = _check_inputs(q, k, v, mask)
    n_q, d_k = q.shape[-2:]
    n_k = k.shape[-2]

    scale = 1.0 / math.sqrt(d_k)  # a Python float: float32 inputs stay float32
    scores = (q @ np.swapaxes(k, -1, -2)) * scale  # (..., n_q, n_k)

    if causal:
        causal_allowed = causal_mask(n_q, n_k)  # (n_q, n_k)
        mask = causal_allowed if mask is None else (mask & causal_allowed)
    if mask is None:
        weights = softmax(scores, axis=-1)  # (..., n_q, n_k)
    else:
        mask = np.broadcast_to(mask, scores.shape)  # (..., n_q, n_k)
        any_allowed = mask.any(axis=-1, keepdims=True)  # (..., n_q, 1)
        # Blocked keys get -inf, so exp gives exactly 0. A row with nothing allowed
        # would be all -inf and softmax would give 0/0 = NaN: score it 0 instead,
        # then zero its weights below.
        scores = np.where(mask, scores, -np.inf)
        scores = np.where(any_allowed, scores, 0.0)
        weights = softmax(scores, axis=-1)
        weights = np.where(any_allowed, weights, 0.0)  # (..., n_q, n_k)

    output = weights @ v  # (..., n_q, d_v)
    return (output, weights) if return_weights else output
# --8<-- [end:attention]
