"""Scaled dot-product attention: softmax(Q Kᵀ / √d_k) V.

Reference: Vaswani et al., "Attention Is All You Need" (2017), section 3.2.1. The
interface follows ``torch.nn.functional.scaled_dot_product_attention``: any leading batch
and head dimensions, query and key lengths that may differ, a boolean mask in which
True means "may attend" or a floating mask that is added to the scores, and ``scale=``.
Dropout on the weights (SDPA's ``dropout_p``) is a training-time regulariser and is not
part of this package.
"""

# --8<-- [start:imports]
import math
import numbers

import numpy as np

from attention.masks import causal_mask
from attention.softmax import softmax
# --8<-- [end:imports]


# --8<-- [start:checks]
_KINDS = {"c": "complex", "U": "string", "S": "string", "O": "object",
          "V": "structured", "M": "datetime", "m": "timedelta"}


def as_array(fn, name, a):
    """``a`` as an array of real numbers, or a TypeError naming it."""
    try:
        a = np.asarray(a)
    except ValueError as error:  # e.g. a ragged nested list
        raise ValueError(f"{fn}: {name} is not an array: {error}") from None
    if a.dtype.kind in _KINDS:
        raise TypeError(
            f"{fn}: {name} must hold real numbers, got a "
            f"{_KINDS[a.dtype.kind]} array (dtype {a.dtype})"
        )
    return a


def check_inputs(q, k, v, mask, scale=None, fn="attention"):
    """Check and convert the inputs; clear errors on bad shapes or dtypes.

    Returns q, k, v in the dtype to compute in, the mask (boolean, or
    floating in that dtype), the scale as a Python float, and the dtype of
    the output. Integer inputs compute in float64; float16 inputs compute
    in float32 (a float16 sum of more than 65,504 ones overflows) and give
    a float16 output.
    """
    q, k, v = (as_array(fn, n, a) for n, a in (("q", q), ("k", k), ("v", v)))
    for name, a in (("q", q), ("k", k), ("v", v)):
        if a.ndim < 2:
            raise ValueError(
                f"{fn}: {name} must have at least 2 dims (..., n, d), "
                f"got shape {a.shape}"
            )
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"{fn}: q and k must share their last dim d_k, "
            f"got q {q.shape} and k {k.shape}"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"{fn}: k and v must hold the same number of keys n_k, "
            f"got k {k.shape} and v {v.shape}"
        )
    try:
        lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(
            f"{fn}: leading (batch/head) dims do not broadcast: "
            f"q {q.shape}, k {k.shape}, v {v.shape}"
        ) from None
    out_dtype = np.result_type(q, k, v)
    if not np.issubdtype(out_dtype, np.floating):
        out_dtype = np.dtype(np.float64)  # integers, booleans: float64
    dtype = np.promote_types(out_dtype, np.float32)  # float16 -> float32
    if mask is not None:
        mask = as_array(fn, "mask", mask)
        floating = np.issubdtype(mask.dtype, np.floating)
        if mask.dtype != np.bool_ and not floating:
            raise TypeError(
                f"{fn}: mask must be boolean (True = may attend) or floating "
                f"(added to the scores), got dtype {mask.dtype}"
            )
        if floating:
            mask = mask.astype(dtype, copy=False)
        scores_shape = (*lead, q.shape[-2], k.shape[-2])
        try:
            fits = np.broadcast_shapes(mask.shape, scores_shape) == scores_shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(
                f"{fn}: mask of shape {mask.shape} does not broadcast to the "
                f"scores' shape {scores_shape} (..., n_q, n_k)"
            )
    if scale is None:
        d_k = q.shape[-1]
        # With d_k = 0 every score is 0, whatever the scale (PyTorch agrees).
        scale = 1.0 / math.sqrt(d_k) if d_k else 1.0
    elif isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise TypeError(f"{fn}: scale must be a real number, got {scale!r}")
    elif not math.isfinite(scale):
        raise ValueError(f"{fn}: scale must be finite, got {scale!r}")
    q, k, v = (a.astype(dtype, copy=False) for a in (q, k, v))
    return q, k, v, mask, float(scale), out_dtype
# --8<-- [end:checks]


# --8<-- [start:attention]
def attention(q, k, v, *, mask=None, causal=False, scale=None,
              return_weights=False):
    """Scaled dot-product attention over the last two axes.

    q: (..., n_q, d_k)   k: (..., n_k, d_k)   v: (..., n_k, d_v)
    The leading dims (batch, heads, ...) broadcast against each other.
    mask, broadcastable to (..., n_q, n_k): boolean, True = query may attend
    to key; or floating, added to the scores (-inf blocks a key): a
    position bias such as ALiBi.
    causal: also apply ``causal_mask(n_q, n_k)`` (bottom-right aligned),
    ANDed with a boolean mask.
    scale: multiplies q kᵀ; default 1 / √d_k.
    Returns the output (..., n_q, d_v), or (output, weights).

    A query row with no allowed key (or no key at all) gets all-zero
    weights and an all-zero output, as PyTorch's SDPA gives (no NaN).
    The inputs' dtype is kept: float32 in, float32 out. float16 inputs
    are computed in float32 and the result rounded back to float16.
    """
    q, k, v, mask, scale, out_dtype = check_inputs(q, k, v, mask, scale)
    n_q, n_k = q.shape[-2], k.shape[-2]

    # A Python float scale: float32 inputs stay float32.
    scores = (q @ np.swapaxes(k, -1, -2)) * scale  # (..., n_q, n_k)
    masked = mask is not None or causal
    if mask is not None and mask.dtype != np.bool_:
        scores = scores + mask  # an additive mask (bias): -inf blocks a key
        mask = None
    if causal:
        allowed = causal_mask(n_q, n_k)  # (n_q, n_k)
        mask = allowed if mask is None else (mask & allowed)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)  # blocked: exp gives 0

    if n_k == 0:  # no keys at all: nothing to attend to
        weights = np.zeros_like(scores)  # (..., n_q, 0)
    elif not masked:
        weights = softmax(scores, axis=-1)  # (..., n_q, n_k)
    else:
        # A row with nothing allowed is all -inf, and softmax would give
        # 0/0 = NaN: score it 0 instead, then zero its weights.
        row_max = scores.max(axis=-1, keepdims=True)  # (..., n_q, 1)
        nothing = row_max == -np.inf
        if nothing.any():  # (a causal mask alone never empties a row)
            scores = np.where(nothing, 0.0, scores)
        weights = softmax(scores, axis=-1)
        if nothing.any():
            weights = np.where(nothing, 0.0, weights)  # (..., n_q, n_k)

    output = weights @ v  # (..., n_q, d_v)
    output = output.astype(out_dtype, copy=False)
    weights = weights.astype(out_dtype, copy=False)
    return (output, weights) if return_weights else output
# --8<-- [end:attention]
