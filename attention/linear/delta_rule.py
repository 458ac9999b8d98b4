"""The delta rule and the gated delta rule, one token at a time.

Linear attention only adds to its state, S <- S + k^T v: a key written twice piles up two
values, and nothing is ever forgotten. DeltaNet (Schlag, Irie and Schmidhuber, "Linear
Transformers Are Secretly Fast Weight Programmers", ICML 2021; Yang et al., "Parallelizing
Linear Transformers with the Delta Rule over Sequence Length", NeurIPS 2024) writes only
the error of what the state already recalls for the key:

    S <- S + beta k^T (v - k S),

one step of gradient descent, with learning rate beta, on the regression loss
|k S - v|^2 / 2. Gated DeltaNet (Yang, Kautz and Hatamizadeh, "Gated Delta Networks:
Improving Mamba2 with Delta Rule", ICLR 2025) first decays the state by a = exp(g), g <= 0:

    S <- a S + beta k^T (v - a k S).

This is the linear-attention layer of Qwen3-Next. Row vectors throughout (k is 1 x d_k,
S is d_k x d_v, the output is q S), so S is the transpose of the papers' column form.

``gated_delta_rule`` has the contract of the course's tests against Hugging Face's
``torch_recurrent_gated_delta_rule`` and ``torch_chunk_gated_delta_rule``, in the course's
(..., heads, n, d) layout: the queries scaled by 1/sqrt(d_k) inside, as there;
``chunk_size=None`` runs this recurrence, a number the chunked form of ``chunked``.
"""

# --8<-- [start:imports]
import math

import numpy as np

from attention.linear.chunked import chunked_gated_delta_rule
from attention.linear.feature_maps import l2_normalize
from attention.linear.linear_attention import (check_chunk_size, check_qkv,
                                               check_state)
from attention.scaled_dot_product import as_array
# --8<-- [end:imports]


# --8<-- [start:step]
def delta_rule_step(S, k, v, beta, g=0.0):
    """One token of the gated delta rule: S <- a S + beta k^T (v - a k S).

    S: (..., d_k, d_v); k: (..., d_k); v: (..., d_v); beta and g: numbers
    or (...,), a = exp(g) the decay (g = 0: DeltaNet's plain rule). Returns
    the new state; the value written is beta times what a S got wrong.
    """
    a = np.exp(np.asarray(g, dtype=S.dtype))
    S = a[..., None, None] * S                         # decay: a S
    recalled = (k[..., None, :] @ S)[..., 0, :]        # k (a S): (..., d_v)
    error = v - recalled
    write = k[..., :, None] @ error[..., None, :]  # k^T error (..., d_k, d_v)
    return S + np.asarray(beta, dtype=S.dtype)[..., None, None] * write
# --8<-- [end:step]


# --8<-- [start:recurrent]
def recurrent_gated_delta_rule(q, k, v, g, beta, S):
    """The recurrence over n tokens: out_t = q_t S_t after step t.

    q, k: (..., n, d_k); v: (..., n, d_v); g, beta: (..., n); S: the state
    before the first token (..., d_k, d_v). Returns (out, final state).
    """
    out = np.empty(v.shape, dtype=S.dtype)             # (..., n, d_v)
    for t in range(k.shape[-2]):
        S = delta_rule_step(S, k[..., t, :], v[..., t, :], beta[..., t],
                            g[..., t])
        out[..., t, :] = (q[..., t, None, :] @ S)[..., 0, :]  # q_t S_t
    return out, S
# --8<-- [end:recurrent]


# --8<-- [start:checks]
def _check_gates(fn, g, beta, lead_n, dtype):
    """g (log decay) and beta checked against (..., heads, n)."""
    checked = []
    for name, a in (("g", g), ("beta", beta)):
        a = as_array(fn, name, a)
        if a.shape != lead_n:
            raise ValueError(f"{fn}: {name} must have shape (..., heads, n) "
                             f"= {lead_n}, one per token of k, got {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{fn}: {name} must be finite, got a NaN or inf")
        checked.append(a.astype(dtype, copy=False))
    g, beta = checked
    if np.any(g > 0):
        raise ValueError(f"{fn}: g is the log of the decay and must be <= 0 "
                         f"(a decay of at most 1), got a largest g of "
                         f"{float(g.max()):.3g}")
    if np.any((beta < 0) | (beta > 1)):
        raise ValueError(f"{fn}: beta is a sigmoid output in Gated DeltaNet "
                         f"and must lie in [0, 1], got values from "
                         f"{float(beta.min()):.3g} to {float(beta.max()):.3g}")
    return g, beta
# --8<-- [end:checks]


# --8<-- [start:gated_delta_rule]
def gated_delta_rule(q, k, v, g, beta, *, chunk_size=None, initial_state=None,
                     qk_l2norm=False):
    """Gated DeltaNet's token mixer over a sequence, as Qwen3-Next runs it.

    q, k: (..., heads, n, d_k); v: (..., heads, n, d_v); g (the log of the
    decay, <= 0) and beta (in [0, 1]): (..., heads, n). initial_state: the
    state before the first token, (..., heads, d_k, d_v), zero if None.
    qk_l2norm: normalise q and k to unit length first. The queries are then
    scaled by 1/sqrt(d_k). chunk_size None runs the recurrence, an integer
    C the chunked form (equal up to rounding). Returns (out (..., heads, n,
    d_v), final state (..., heads, d_k, d_v)).
    """
    fn = "gated_delta_rule"
    q, k, v = check_qkv(fn, q, k, v)
    if q.ndim < 3:
        raise ValueError(f"{fn}: q must have shape (..., heads, n, d_k), got "
                         f"{q.shape}")
    g, beta = _check_gates(fn, g, beta, k.shape[:-1], v.dtype)
    *lead, n, d_k = k.shape
    S = check_state(fn, initial_state, (*lead, d_k, v.shape[-1]), v.dtype)
    if qk_l2norm:
        q, k = l2_normalize(q), l2_normalize(k)
    q = q * (1 / math.sqrt(d_k))  # a Python float keeps q's dtype
    if chunk_size is None:
        return recurrent_gated_delta_rule(q, k, v, g, beta, S)
    C = check_chunk_size(fn, chunk_size)
    return chunked_gated_delta_rule(q, k, v, g, beta, S, C)
# --8<-- [end:gated_delta_rule]
