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

from attention.backward._shapes import (check_backward_inputs, check_weights,
                                        split_groups, sum_to_shape)
from attention.backward.softmax import softmax_backward
from attention.blocks import dropped
from attention.scaled_dot_product import attention
# --8<-- [end:imports]


# --8<-- [start:attention_backward]
def attention_backward(d_out, q, k, v, *, mask=None, causal=False,
                       scale=None, weights=None, dropout=None):
    """(dq, dk, dv) of o = attention(q, k, v, mask=, causal=, scale=).

    d_out (..., n_q, d_v) is ∂L/∂o; q (..., n_q, d_k), k (..., n_k, d_k),
    v (..., n_k, d_v); mask, causal (bottom-right) and scale as in the
    forward. ``weights``: the forward's P if it was kept; otherwise the
    forward recomputes it. dropout: the mask the forward applied to P
    (``attention.blocks.attend``). Returns arrays shaped like q, k and v.
    """
    d_out, q, k, v, mask, group = check_backward_inputs(
        "attention_backward", d_out, q, k, v, mask)
    shapes = q.shape, k.shape, v.shape
    if scale is None:  # a Python float: keeps float32; d_k = 0: scores 0
        scale = 1.0 / math.sqrt(q.shape[-1]) if q.shape[-1] else 1.0
    check_weights("attention_backward", weights, d_out, k)
    q, d_out, k, v, mask = split_groups(group, q, d_out, k, v, mask)
    if weights is None:  # recompute P with the forward itself
        _, p = attention(q, k, v, mask=mask, causal=causal, scale=scale,
                         return_weights=True)
    else:  # the kept P, with GQA's query heads split into groups
        p = np.reshape(weights, d_out.shape[:-1] + (k.shape[-2],))

    # dV = Pᵀ dO and dP = dO Vᵀ; with dropout, O = (P ⊙ M) V, so both
    # see the dropped-out weights P ⊙ M
    drop = None if dropout is None else np.reshape(dropout, p.shape)
    dv = np.swapaxes(dropped(p, drop), -1, -2) @ d_out  # (..., n_k, d_v)
    dp = dropped(d_out @ np.swapaxes(v, -1, -2), drop)  # (..., n_q, n_k)
    ds = softmax_backward(dp, p)  # (..., n_q, n_k); 0 wherever P is 0
    dq = (ds @ k) * scale  # (..., n_q, d_k) = dS K · scale
    dk = (np.swapaxes(ds, -1, -2) @ q) * scale  # (..., n_k, d_k)

    # A broadcast input (a shared head, GQA's groups) sums its copies' grads.
    dq, dk, dv = (sum_to_shape(g, a.shape).reshape(shape)
                  for g, a, shape in zip((dq, dk, dv), (q, k, v), shapes))
    return dq, dk, dv
# --8<-- [end:attention_backward]
