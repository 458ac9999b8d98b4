"""Kimi Delta Attention (KDA): the gated delta rule with a decay per key channel.

Kimi Team, "Kimi Linear: An Expressive, Efficient Attention Architecture" (2025), section
3; Hugging Face's ``KimiLinearDeltaAttention``. Gated DeltaNet (chapter 10) decays the
whole d_k x d_v state of a head by one number a_t = exp(g_t) per token. KDA gives every
key channel its own decay, a vector exp(g_t) of d_k numbers in (0, 1]:

    S <- diag(exp(g_t)) S,   u_t = beta_t (v_t - k_t S),   S <- S + k_t^T u_t,
    out_t = q_t S.

Row i of S is what key channel i has stored; each row fades at its own rate, so a head
can keep some features for long and refresh others every few tokens (Gated DeltaNet is
the case where all of g_t's entries are equal).

The chunked form is chapter 10's UT transform with the scalar decay e^{gamma_i - gamma_j}
replaced by a per-channel one. With Gamma_i = g_1 + ... + g_i (d_k numbers) from the
chunk's start, and S_0 the state before it,

    u_i + sum_{j<i} beta_i (k_i * e^{Gamma_i - Gamma_j}) . k_j u_j
        = beta_i v_i - beta_i (k_i * e^{Gamma_i}) S_0,
    out_i = (q_i * e^{Gamma_i}) S_0 + sum_{j<=i} (q_i * e^{Gamma_i - Gamma_j}) . k_j u_j,
    S_C = diag(e^{Gamma_C}) S_0 + sum_j (k_j * e^{Gamma_C - Gamma_j})^T u_j,

(* multiplies channel by channel). Every exponent is <= 0 (Gamma falls, j <= i), so no
factor overflows; the C x C x d_k decays are the price of the channels' own rates.
"""

# --8<-- [start:imports]
import math
from dataclasses import dataclass

import numpy as np

from attention.feed_forward import silu
from attention.linear.chunked import solve_unit_lower
from attention.linear.conv import causal_conv1d
from attention.linear.feature_maps import l2_normalize
from attention.linear.gated_deltanet import DeltaNetState, sigmoid
from attention.linear.linear_attention import (check_chunk_size, check_qkv,
                                               check_state)
from attention.multi_head import split_heads
from attention.norms import rms_norm
# --8<-- [end:imports]


# --8<-- [start:step]
def kda_step(S, q, k, v, g, beta):
    """One token of KDA. S: (..., d_k, d_v); q, k, g: (..., d_k), g the log
    decay of each key channel (<= 0); v: (..., d_v); beta: (...,).
    Returns (out (..., d_v), the new state)."""
    S = np.exp(g)[..., :, None] * S                   # row i fades by e^{g_i}
    recalled = (k[..., None, :] @ S)[..., 0, :]        # k S: (..., d_v)
    u = np.asarray(beta)[..., None] * (v - recalled)   # the value written
    S = S + k[..., :, None] * u[..., None, :]          # + k^T u
    return (q[..., None, :] @ S)[..., 0, :], S
# --8<-- [end:step]


# --8<-- [start:recurrent]
def kda_recurrent(q, k, v, g, beta, S):
    """KDA over n tokens, one at a time. q (already scaled), k, g: (...,
    n, d_k); v: (..., n, d_v); beta: (..., n); S: (..., d_k, d_v).
    Returns (out (..., n, d_v), final state)."""
    out = np.empty(v.shape, dtype=S.dtype)
    for t in range(k.shape[-2]):
        out[..., t, :], S = kda_step(S, q[..., t, :], k[..., t, :],
                                     v[..., t, :], g[..., t, :],
                                     beta[..., t])
    return out, S
# --8<-- [end:recurrent]


# --8<-- [start:chunked]
def kda_chunk(q, k, v, g, beta, S):
    """One chunk of C tokens from the state S before it (shapes as for
    kda_recurrent with n = C). Returns (out, the state after it)."""
    Gamma = np.cumsum(g, axis=-2)                      # (..., C, d_k)
    diff = Gamma[..., :, None, :] - Gamma[..., None, :, :]  # (.., C, C, d_k)
    # e^{Gamma_i - Gamma_j} for j <= i; above the diagonal (j > i, where the
    # exponent is > 0 and could overflow) min gives 1, and tril drops it
    decay = np.exp(np.minimum(diff, 0))
    kk = np.einsum("...ic,...ijc,...jc->...ij", k, decay, k)
    A = np.tril(beta[..., :, None] * kk, -1)           # strictly below
    rhs = np.concatenate([beta[..., None] * v,
                          beta[..., None] * k * np.exp(Gamma)], axis=-1)
    X = solve_unit_lower(A, rhs)                       # (I + A)^-1 rhs
    d_v = v.shape[-1]
    u = X[..., :d_v] - X[..., d_v:] @ S                # the values written
    qk = np.tril(np.einsum("...ic,...ijc,...jc->...ij", q, decay, k))
    out = (q * np.exp(Gamma)) @ S + qk @ u
    to_end = k * np.exp(Gamma[..., -1:, :] - Gamma)    # k_j e^{G_C - G_j}
    S = (np.exp(Gamma[..., -1, :])[..., :, None] * S
         + np.swapaxes(to_end, -1, -2) @ u)
    return out, S


def kda_chunked(q, k, v, g, beta, S, chunk_size):
    """KDA over n tokens in chunks of chunk_size (the last one shorter):
    the same outputs and state as kda_recurrent, up to rounding."""
    out = np.empty(v.shape, dtype=S.dtype)
    for s in range(0, k.shape[-2], chunk_size):
        part = slice(s, s + chunk_size)
        out[..., part, :], S = kda_chunk(
            q[..., part, :], k[..., part, :], v[..., part, :],
            g[..., part, :], beta[..., part], S)
    return out, S
# --8<-- [end:chunked]


# --8<-- [start:kda]
def kimi_delta_attention(q, k, v, g, beta, *, chunk_size=None,
                         initial_state=None, qk_l2norm=True):
    """KDA as Kimi Linear runs it. q, k, g: (..., heads, n, d_k); v: (...,
    heads, n, d_v); beta: (..., heads, n) in [0, 1]; g <= 0 (the log decay
    of each channel). q and k made unit length (qk_l2norm), q scaled by
    1/sqrt(d_k). chunk_size None: the recurrence; C: chunks of C tokens.
    Returns (out (..., heads, n, d_v), final state (..., heads, d_k, d_v)).
    """
    fn = "kimi_delta_attention"
    q, k, v = check_qkv(fn, q, k, v)
    g, beta = np.asarray(g, dtype=v.dtype), np.asarray(beta, dtype=v.dtype)
    if g.shape != k.shape or beta.shape != k.shape[:-1]:
        raise ValueError(f"{fn}: g must have k's shape {k.shape} (a decay "
                         f"per key channel) and beta {k.shape[:-1]}, got g "
                         f"{g.shape} and beta {beta.shape}")
    if np.any(g > 0) or np.any((beta < 0) | (beta > 1)):
        raise ValueError(f"{fn}: g is a log decay (<= 0) and beta a "
                         f"sigmoid (in [0, 1]); got g up to {g.max():.3g}, "
                         f"beta in [{beta.min():.3g}, {beta.max():.3g}]")
    *lead, n, d_k = k.shape
    S = check_state(fn, initial_state, (*lead, d_k, v.shape[-1]), v.dtype)
    if qk_l2norm:
        q, k = l2_normalize(q), l2_normalize(k)
    q = q * (1 / math.sqrt(d_k))
    if chunk_size is None:
        return kda_recurrent(q, k, v, g, beta, S)
    return kda_chunked(q, k, v, g, beta, S, check_chunk_size(fn, chunk_size))
# --8<-- [end:kda]


# --8<-- [start:layer]
@dataclass(frozen=True)
class KDAConfig:
    """The sizes of one KDA layer (Hugging Face's names after #)."""
    d_model: int               # hidden_size
    n_heads: int               # linear_num_heads
    d_head: int                # linear_head_dim: d_k = d_v
    conv_kernel: int = 4       # linear_conv_kernel_dim
    norm_eps: float = 1e-5     # rms_norm_eps, of the gated output norm
    chunk_size: int = 16       # the chunked form for more than one token
    #                            (16: faster than 64 here, kda-chunked.json)

    def __post_init__(self):
        for name in ("d_model", "n_heads", "d_head", "conv_kernel",
                     "chunk_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) \
                    or value < 1:
                raise ValueError(f"KDAConfig: {name} must be an integer "
                                 f">= 1, got {value!r}")

    @property
    def conv_channels(self) -> int:
        """Channels of the short convolution: q, k and v side by side."""
        return 3 * self.n_heads * self.d_head


def kimi_softplus(x):
    """softplus as Kimi Linear writes it: x itself above 20 (where the
    exact log(1 + e^x) is larger by under 2.1e-9)."""
    return np.where(x > 20.0, x, np.logaddexp(0.0, np.minimum(x, 20.0)))


def kda_layer(x, p, config, state=None):
    """One KDA layer over n new tokens after the state's tokens.

    x: (batch, n, d_model); p: W_q, W_k, W_v, conv, W_fa, W_fb, dt_bias,
    A_log (heads,), W_b, W_ga, W_gb, norm.weight, W_o; state: a DeltaNetState or
    None. Returns (y (batch, n, d_model), the new state).
    """
    c = config
    x = np.asarray(x)
    if x.ndim != 3 or x.shape[-1] != c.d_model:
        raise ValueError(f"kda_layer: x must have shape (batch, n, "
                         f"d_model={c.d_model}), got {x.shape}")
    batch, n, _ = x.shape
    qkv = np.concatenate([x @ p["W_q"], x @ p["W_k"], x @ p["W_v"]], axis=-1)
    qkv, conv_state = causal_conv1d(
        qkv, p["conv"], state=None if state is None else state.conv)
    q, k, v = (split_heads(a, c.n_heads)               # (batch, H, n, d)
               for a in np.split(silu(qkv), 3, axis=-1))
    # the forget gate: a low-rank projection, a decay per channel
    f = (x @ p["W_fa"]) @ p["W_fb"] + p["dt_bias"]     # (batch, n, H * d)
    g = -np.exp(p["A_log"])[:, None] * kimi_softplus(
        f.reshape(batch, n, c.n_heads, c.d_head))      # (batch, n, H, d)
    g = np.moveaxis(g, 1, 2)                           # (batch, H, n, d)
    beta = np.swapaxes(sigmoid(x @ p["W_b"]), -1, -2)  # (batch, H, n)
    out, S = kimi_delta_attention(
        q, k, v, g, beta, chunk_size=None if n == 1 else c.chunk_size,
        initial_state=None if state is None else state.recurrent)
    out = np.swapaxes(out, 1, 2)                       # (batch, n, H, d)
    gate = ((x @ p["W_ga"]) @ p["W_gb"]).reshape(out.shape)
    out = rms_norm(out, p["norm.weight"], eps=c.norm_eps) * sigmoid(gate)
    y = out.reshape(batch, n, -1) @ p["W_o"]
    return y, DeltaNetState(conv_state, S)
# --8<-- [end:layer]


def kda_shapes(c):
    """A KDA layer's parameters (short names, as kda_layer reads them)."""
    d, hd = c.d_model, c.n_heads * c.d_head
    return {"W_q": (d, hd), "W_k": (d, hd), "W_v": (d, hd),
            "conv": (c.conv_channels, c.conv_kernel),
            "W_fa": (d, c.d_head), "W_fb": (c.d_head, hd), "dt_bias": (hd,),
            "A_log": (c.n_heads,), "W_b": (d, c.n_heads),
            "W_ga": (d, c.d_head), "W_gb": (c.d_head, hd),
            "norm.weight": (c.d_head,), "W_o": (hd, d)}


# --8<-- [start:read]
def params_from_hf(state_dict, config):
    """Our KDA weights from a KimiLinearDeltaAttention's state dict (name ->
    NumPy array): nn.Linear weights transposed."""
    sd = {name: np.asarray(a) for name, a in state_dict.items()}
    T = {"W_q": "q_proj", "W_k": "k_proj", "W_v": "v_proj",
         "W_fa": "forget_gate.f_a_proj", "W_fb": "forget_gate.f_b_proj",
         "W_b": "b_proj", "W_ga": "g_a_proj", "W_gb": "g_b_proj",
         "W_o": "o_proj"}
    return {ours: sd[f"{hf}.weight"].T for ours, hf in T.items()} | {
        "conv": sd["conv1d.weight"][:, 0, :],          # (channels, K)
        "dt_bias": sd["forget_gate.dt_bias"],
        "A_log": sd["forget_gate.A_log"].reshape(config.n_heads),
        "norm.weight": sd["o_norm.weight"]}
# --8<-- [end:read]
