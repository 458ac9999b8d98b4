"""Linear attention that forgets: S_t = a_t S_{t-1} + k_t^T v_t, with a_t = exp(g_t).

The additive state of ``linear_attention`` keeps every pair it was given, at full
weight, forever. A decay a_t in (0, 1] fades what is there before each write: RetNet
(Sun et al., "Retentive Network", 2023, section 2.1) fixes one a per head; Gated Linear
Attention (Yang et al., ICML 2024) learns a per token and channel, of which this is the
scalar case; Mamba-2 (Dao and Gu, ICML 2024, section 3) learns one scalar a per token
and head, which is this rule. Unrolled, with G_i = g_1 + ... + g_i,

    o_i = q_i S_i = sum_{j <= i} exp(G_i - G_j) (q_i . k_j) v_j,

so the parallel form is (Q K^T masked by D) V with D[i, j] = exp(G_i - G_j) for j <= i
(``chunked.chunk_decays`` over the whole sequence), the recurrent form is the line above,
and the chunked form is the parallel one inside chunks of C tokens with the state handed
from chunk to chunk, decayed by exp(gamma) within it. There is no normaliser: these
models, like Gated DeltaNet, normalise the output instead.

Shapes: q, k (..., n, d_k); v (..., n, d_v); g (..., n), each g <= 0.
"""

# --8<-- [start:decayed]
import numpy as np

from attention.linear.chunked import chunk_decays
from attention.linear.linear_attention import (check_chunk_size, check_qkv,
                                               check_state)
from attention.scaled_dot_product import as_array


def _check_log_decay(fn, g, lead_n, dtype):
    g = as_array(fn, "g", g)
    if g.shape != lead_n:
        raise ValueError(f"{fn}: g must have shape (..., n) = {lead_n}, one "
                         f"per token of k, got {g.shape}")
    if not np.all(np.isfinite(g)) or np.any(g > 0):
        raise ValueError(f"{fn}: g is the log of the decay and must be "
                         f"finite and <= 0, got a largest g of "
                         f"{float(np.max(g)):.3g}")
    return g.astype(dtype, copy=False)


def decayed_recurrent(q, k, v, g, *, initial_state=None):
    """S_t = exp(g_t) S_{t-1} + k_t^T v_t, then out_t = q_t S_t.
    Returns (out (..., n, d_v), the final state (..., d_k, d_v))."""
    fn = "decayed_recurrent"
    q, k, v = check_qkv(fn, q, k, v)
    g = _check_log_decay(fn, g, k.shape[:-1], v.dtype)
    *lead, n, d_k = k.shape
    S = check_state(fn, initial_state, (*lead, d_k, v.shape[-1]), v.dtype)
    out = np.empty(v.shape, dtype=v.dtype)             # (..., n, d_v)
    for t in range(n):
        write = k[..., t, :, None] @ v[..., t, None, :]  # (..., d_k, d_v)
        S = np.exp(g[..., t, None, None]) * S + write
        out[..., t, :] = (q[..., t, None, :] @ S)[..., 0, :]  # q_t S_t
    return out, S


def decayed_chunked(q, k, v, g, *, chunk_size, initial_state=None):
    """The same in chunks of C tokens: inside a chunk the masked product
    with decays D; between chunks the state, faded by exp(gamma)."""
    fn = "decayed_chunked"
    q, k, v = check_qkv(fn, q, k, v)
    g = _check_log_decay(fn, g, k.shape[:-1], v.dtype)
    C = check_chunk_size(fn, chunk_size)
    *lead, n, d_k = k.shape
    S = check_state(fn, initial_state, (*lead, d_k, v.shape[-1]), v.dtype)
    if n % C:  # pad: zero keys add nothing, g = 0 fades nothing
        pad = [(0, 0)] * len(lead) + [(0, -n % C)]
        q, k, v = (np.pad(a, pad + [(0, 0)]) for a in (q, k, v))
        g = np.pad(g, pad)
    m = k.shape[-2] // C
    q, k, v = (a.reshape(*lead, m, C, a.shape[-1]) for a in (q, k, v))
    # gamma (..., m, C): log decay from each chunk's start; D (..., m, C, C)
    gamma, D = chunk_decays(g.reshape(*lead, m, C))
    inside = (D * (q @ np.swapaxes(k, -1, -2))) @ v    # (..., m, C, d_v)
    out = np.empty(inside.shape, dtype=v.dtype)
    for c in range(m):
        fade = np.exp(gamma[..., c, :, None])          # (..., C, 1)
        out[..., c, :, :] = inside[..., c, :, :] + fade * (q[..., c, :, :] @ S)
        last = gamma[..., c, -1:]                      # (..., 1)
        to_end = np.exp(last - gamma[..., c, :])[..., :, None]  # (..., C, 1)
        S = (np.exp(last)[..., None] * S
             + np.swapaxes(to_end * k[..., c, :, :], -1, -2) @ v[..., c, :, :])
    return out.reshape(*lead, m * C, -1)[..., :n, :], S
# --8<-- [end:decayed]
