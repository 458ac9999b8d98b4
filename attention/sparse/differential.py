"""Differential attention: the difference of two softmax maps, to cancel attention noise.

Ye et al., "Differential Transformer" (2024), section 2.1; Hugging Face's
``DiffLlamaAttention``. One head pair has two queries and two keys of d features each
and one value of 2d features:

    DiffAttn(X) = (softmax(Q1 K1ᵀ / √d) - λ softmax(Q2 K2ᵀ / √d)) V

Both maps put weight on the same irrelevant keys (the "attention noise"); the
difference cancels it, as a differential amplifier cancels common-mode noise. λ is
learned through a re-parameterisation that keeps it near a depth-dependent start,

    λ = exp(λ_q1 · λ_k1) - exp(λ_q2 · λ_k2) + λ_init,
    λ_init = 0.8 - 0.6 exp(-0.3 l)   (layer l = 0, 1, ...),

with λ_q1, λ_k1, λ_q2, λ_k2 vectors of d numbers shared by a layer's heads. Each pair's
2d-wide output is RMS-normalised on its own (the paper's GroupNorm, no gain) and scaled
by (1 - λ_init), which sets the output's scale back to that of ordinary attention at
λ = λ_init.

Hugging Face lays the pairs over Llama's projections: with H query heads and G
key/value heads, head i (i < H/2) gives pair i's first map and head i + H/2 its second;
value heads g and g + G/2, side by side, are the 2d-wide value. So the layer is Llama's
``attention_layer`` with another ``attend``: attention over the paired values, then
the difference of the two halves of the heads, normalised. Its KV cache holds what
Llama's holds.
"""

# --8<-- [start:imports]
import math

import numpy as np

from attention.blocks import attend, attention_layer
from attention.norms import rms_norm
from attention.scaled_dot_product import attention
# --8<-- [end:imports]


# --8<-- [start:simple]
def differential_attention(q1, k1, q2, k2, v, lam, *, causal=True,
                           scale=None):
    """One head pair: (softmax(q1 k1ᵀ s) - λ softmax(q2 k2ᵀ s)) v.

    q1, q2: (..., n_q, d); k1, k2: (..., n_k, d); v: (..., n_k, d_v), the
    pair's value (2d wide in the paper); lam: λ, a number. scale: s, None
    for 1/√d. Returns (output (..., n_q, d_v), the two maps (..., n_q, n_k)).
    """
    _, a1 = attention(q1, k1, v, causal=causal, scale=scale,
                      return_weights=True)              # (..., n_q, n_k)
    _, a2 = attention(q2, k2, v, causal=causal, scale=scale,
                      return_weights=True)              # (..., n_q, n_k)
    return (a1 - lam * a2) @ v, (a1, a2)
# --8<-- [end:simple]


# --8<-- [start:lambda]
def lambda_init(layer):
    """λ's starting value in layer ``layer`` (0 first): 0.8 - 0.6 e^(-0.3 l).

    0.2 in the first layer, rising towards 0.8 with depth."""
    if (isinstance(layer, bool) or not isinstance(layer, (int, np.integer))
            or layer < 0):
        raise ValueError(f"lambda_init: layer must be a non-negative "
                         f"integer, got {layer!r}")
    return 0.8 - 0.6 * math.exp(-0.3 * layer)


def differential_lambda(p, layer):
    """λ = exp(λ_q1 · λ_k1) - exp(λ_q2 · λ_k2) + λ_init(layer).

    p: the layer's parameters, attn.lambda_q1, attn.lambda_k1,
    attn.lambda_q2, attn.lambda_k2, each (d_head,). Exponentials of dot
    products keep each term positive and let λ move either way from
    λ_init, whatever the sign of a single weight."""
    q1, k1, q2, k2 = (np.asarray(p[f"attn.lambda_{x}"])
                      for x in ("q1", "k1", "q2", "k2"))
    if not q1.ndim == 1 or not q1.shape == k1.shape == q2.shape == k2.shape:
        raise ValueError(f"differential_lambda: attn.lambda_q1, _k1, _q2, "
                         f"_k2 must be vectors of one length (d_head,), got "
                         f"{q1.shape}, {k1.shape}, {q2.shape}, {k2.shape}")
    return (np.exp(q1 @ k1) - np.exp(q2 @ k2)) + lambda_init(layer)
# --8<-- [end:lambda]


# --8<-- [start:layer]
def paired_values(k, v):
    """What the heads read: the keys as they are, and value heads g and
    g + G/2 side by side as pair g's 2d-wide value, for either half of
    the heads. k, v: (batch, G, n, d) -> k, (batch, G, n, 2d)."""
    half = v.shape[-3] // 2
    pairs = np.concatenate([v[..., :half, :, :], v[..., half:, :, :]],
                           axis=-1)                     # (batch, G/2, n, 2d)
    return k, np.concatenate([pairs, pairs], axis=-3)   # (batch, G, n, 2d)


def differential_heads(out, lam, layer, eps):
    """The two halves of the heads -> each pair's normalised difference.

    out: (batch, H, n, 2d), head i's output over the paired values.
    Returns (batch, H/2, n, 2d): (1 - λ_init) RMSNorm(out_i - λ out_i+H/2).
    """
    half = out.shape[-3] // 2
    diff = out[..., :half, :, :] - lam * out[..., half:, :, :]
    gain = np.ones(diff.shape[-1])  # the paper's GroupNorm has no gain
    return (1 - lambda_init(layer)) * rms_norm(diff, gain, eps=eps)


def differential_mixer(h, p, config, positions, *, layer, trace=None,
                       attend_fn=None, dropout=None):
    """Differential attention as a block's token mixer (DiffLlama).

    h: (batch, n, d_model) -> (batch, n, d_model). Llama's attention layer
    (projections, RoPE, the cache in attend_fn, W_o) around another attend:
    every head over the paired values, then ``differential_heads``. The
    merged pairs, H/2 of 2d features, are as wide as H heads of d.
    """
    if dropout is not None:
        raise ValueError("differential_mixer: dropout on the attention "
                         "weights is not defined for differential attention "
                         "(Hugging Face refuses it too); pass dropout=None")
    lam = differential_lambda(p, layer)

    def attend_pairs(q, k, v, sinks, **score):
        if attend_fn is None:
            out, weights = attend(q, k, v, expand=paired_values, **score)
        else:
            out, weights = attend_fn(q, k, v, sinks, expand=paired_values,
                                     **score)
        return differential_heads(out, lam, layer, config.norm_eps), weights

    return attention_layer(
        h, p, n_heads=config.n_heads, n_kv_heads=config.n_kv_heads,
        positions=positions, rope_base=config.rope_base,
        rope_layout=config.rope_layout, rope_scaling=config.rope_scaling,
        trace=trace, attend_fn=attend_pairs, scale=config.attn_scale)
# --8<-- [end:layer]
