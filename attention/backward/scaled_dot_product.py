"""Attention's backward pass by hand: dQ, dK and dV from dO.

The forward pass, for one head (Vaswani et al. 2017, section 3.2.1):

    S = Q Kᵀ · scale     (n_q, n_k)  the scores, scale = 1/√d_k by default
    P = softmax(S)       (n_q, n_k)  row by row; blocked entries: P = 0
    O = P V              (n_q, d_v)

Going backwards with the chain rule, given dO = ∂L/∂O:

    dV = Pᵀ dO                        from O = P V
    dP = dO Vᵀ                        from O = P V
    dS = P ⊙ (dP - rowsum(dP ⊙ P))    the softmax's vector-Jacobian product
    dQ = dS K · scale                 from S = Q Kᵀ · scale
    dK = dSᵀ Q · scale

A blocked entry has P = 0, so its dS is 0: it passes no gradient to its query
or key. The only n_q x n_k arrays are P, dP and dS; the backward needs P, so a
training step must keep it from the forward or recompute it
(``attention.backward.blocked`` does the latter, tile by tile).

Leading (batch, head) axes broadcast as in the forward, and the gradient of an
input that was broadcast is summed over the axes it was broadcast along.
Grouped-query attention: q (..., n_heads, n_q, d) with k, v (..., n_kv_heads,
n_k, d), n_heads a multiple of n_kv_heads; query head i uses key/value head
i // (n_heads // n_kv_heads), as PyTorch's ``scaled_dot_product_attention(...,
enable_gqa=True)`` does. Each shared key/value head then receives the sum of
the gradients of its group of query heads.
"""

# --8<-- [start:imports]
import math

import numpy as np

from attention.backward.softmax import softmax_backward
from attention.scaled_dot_product import attention
# --8<-- [end:imports]


def sum_to_shape(grad, shape):
    """Sum ``grad`` over the axes along which an input of ``shape`` was
    broadcast: every copy's gradient flows back to the one original."""
    extra = grad.ndim - len(shape)
    if extra:  # leading axes the input did not have
        grad = grad.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, size in enumerate(shape)
                 if size == 1 and grad.shape[i] != 1)
    return grad.sum(axis=axes, keepdims=True) if axes else grad


def gqa_group(q_shape, kv_shape):
    """Query heads per key/value head (1 when the head axes broadcast)."""
    if len(q_shape) < 3 or len(kv_shape) < 3:
        return 1
    h, h_kv = q_shape[-3], kv_shape[-3]
    if h == h_kv or h_kv in (0, 1):
        return 1
    if h % h_kv:
        raise ValueError(
            f"attention backward: q has {h} heads and k, v have {h_kv}; "
            f"grouped-query attention needs a multiple (q {q_shape}, "
            f"k {kv_shape})")
    return h // h_kv


def check_backward_inputs(fn, d_out, q, k, v, mask):
    """Arrays of one floating dtype, the GQA group size; clear errors."""
    d_out, q, k, v = (np.asarray(a) for a in (d_out, q, k, v))
    for name, a in (("q", q), ("k", k), ("v", v)):
        if a.ndim < 2:
            raise ValueError(f"{fn}: {name} must have at least 2 dims "
                             f"(..., n, d), got shape {a.shape}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"{fn}: q and k must share their last dim d_k, "
                         f"got q {q.shape} and k {k.shape}")
    if k.shape[-2] != v.shape[-2] or k.shape[:-2] != v.shape[:-2]:
        raise ValueError(f"{fn}: k and v must hold the same keys, got "
                         f"k {k.shape} and v {v.shape}")
    group = gqa_group(q.shape, k.shape)
    kv_lead = k.shape[:-2]
    if group > 1:  # k's head axis counts as q's for broadcasting
        kv_lead = kv_lead[:-1] + (q.shape[-3],)
    try:
        lead = np.broadcast_shapes(q.shape[:-2], kv_lead)
    except ValueError:
        raise ValueError(f"{fn}: leading (batch/head) dims do not "
                         f"broadcast: q {q.shape}, k {k.shape}") from None
    out_shape = lead + (q.shape[-2], v.shape[-1])
    if d_out.shape != out_shape:
        raise ValueError(f"{fn}: d_out must have the output's shape "
                         f"{out_shape}, got {d_out.shape}")
    dtype = np.result_type(d_out, q, k, v)
    if not np.issubdtype(dtype, np.floating):
        raise TypeError(f"{fn}: inputs must be floating point, got {dtype}")
    if mask is not None:
        mask = np.asarray(mask)
        if mask.dtype != np.bool_ and not np.issubdtype(mask.dtype,
                                                         np.floating):
            raise TypeError(f"{fn}: mask must be boolean (True = may "
                            f"attend) or floating (added to the scores), "
                            f"got dtype {mask.dtype}")
        scores_shape = lead + (q.shape[-2], k.shape[-2])
        try:
            fits = np.broadcast_shapes(mask.shape, scores_shape) == scores_shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"{fn}: mask of shape {mask.shape} does not "
                             f"broadcast to the scores' shape {scores_shape}")
    d_out, q, k, v = (a.astype(dtype, copy=False) for a in (d_out, q, k, v))
    return d_out, q, k, v, mask, group


def split_groups(group, q, d_out, k, v, mask):
    """GQA as broadcasting: query heads (..., h_kv, g, n, d) against
    k, v (..., h_kv, 1, n, d)."""
    if group == 1:
        return q, d_out, k, v, mask
    *lead, h, n_q, d = q.shape
    q = q.reshape(*lead, h // group, group, n_q, d)  # (..., h_kv, g, n_q, d)
    d_out = d_out.reshape(*d_out.shape[:-3], h // group, group, n_q,
                          d_out.shape[-1])  # (..., h_kv, g, n_q, d_v)
    k, v = k[..., None, :, :], v[..., None, :, :]  # (..., h_kv, 1, n_k, d)
    if mask is not None and mask.ndim >= 3:
        if mask.shape[-3] == h:  # one mask per query head
            mask = mask.reshape(*mask.shape[:-3], h // group, group,
                                *mask.shape[-2:])  # (..., h_kv, g, n_q, n_k)
        else:  # one mask for every head
            mask = mask[..., None, :, :]  # (..., 1, 1, n_q, n_k)
    return q, d_out, k, v, mask


# --8<-- [start:attention_backward]
def attention_backward(d_out, q, k, v, *, mask=None, causal=False,
                       scale=None, weights=None):
    """(dq, dk, dv) of o = attention(q, k, v, mask=, causal=, scale=).

    d_out (..., n_q, d_v) is ∂L/∂o; q (..., n_q, d_k), k (..., n_k, d_k),
    v (..., n_k, d_v); mask, causal (bottom-right) and scale as in the
    forward. ``weights``: the forward's P if it was kept; otherwise the
    forward recomputes it. Returns arrays shaped like q, k and v.
    """
    d_out, q, k, v, mask, group = check_backward_inputs(
        "attention_backward", d_out, q, k, v, mask)
    shapes = q.shape, k.shape, v.shape
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])  # a Python float: keeps float32
    q, d_out, k, v, mask = split_groups(group, q, d_out, k, v, mask)
    if weights is None:  # recompute P with the forward itself
        _, p = attention(q, k, v, mask=mask, causal=causal, scale=scale,
                         return_weights=True)
    else:  # the kept P, with GQA's query heads split into groups
        p = np.reshape(weights, d_out.shape[:-1] + (k.shape[-2],))

    dv = np.swapaxes(p, -1, -2) @ d_out  # (..., n_k, d_v) = Pᵀ dO
    dp = d_out @ np.swapaxes(v, -1, -2)  # (..., n_q, n_k) = dO Vᵀ
    ds = softmax_backward(dp, p)  # (..., n_q, n_k); 0 wherever P is 0
    dq = (ds @ k) * scale  # (..., n_q, d_k) = dS K · scale
    dk = (np.swapaxes(ds, -1, -2) @ q) * scale  # (..., n_k, d_k)

    # A broadcast input (a shared head, GQA's groups) sums its copies' grads.
    dq, dk, dv = (sum_to_shape(g, a.shape).reshape(shape)
                  for g, a, shape in zip((dq, dk, dv), (q, k, v), shapes))
    return dq, dk, dv
# --8<-- [end:attention_backward]
