"""Practice exercises of chapter 3: starters and worked solutions, one source for the page
and the notebook.

Each exercise has an `exN-starter` and an `exN-solution` section; the page includes them
by snippet, and the practice tests run each section on its own (after the `imports`
section) through its self-check. Starter and solution define the same name on purpose:
the reader replaces the one with the other. Sections `exN-wrong-<what>` are plausible
wrong answers the check must reject (never shown on a page).
"""

# --8<-- [start:imports]
import math

import numpy as np

from attention.model import CONFIGS
from attention.practice.ch03 import (
    check_gelu_tanh,
    check_layer_norm,
    check_llama_count,
    check_rms_norm,
    check_rope,
    check_rope_interleaved,
    check_sinusoidal,
    check_swiglu_fused,
)
# --8<-- [end:imports]

# --8<-- [start:ex1-starter]
def rms_norm(x, weight, eps=1e-6):
    """x / sqrt(mean(x²) + eps) * weight over the last axis."""
    # Your code: nothing is normalised yet.
    return x * weight
# --8<-- [end:ex1-starter]


# --8<-- [start:ex1-solution]
def rms_norm(x, weight, eps=1e-6):
    """x / sqrt(mean(x²) + eps) * weight over the last axis."""
    mean_square = np.mean(x * x, axis=-1, keepdims=True)  # (..., 1)
    return x / np.sqrt(mean_square + eps) * weight  # eps inside the root
# --8<-- [end:ex1-solution]


# --8<-- [start:ex2-starter]
def rope(x, positions, base=10000.0):
    """Rotate x (..., n, d_head) by RoPE: pair k = features k, k + d_head/2."""
    half = x.shape[-1] // 2
    inv_freq = base ** (-np.arange(half) * 2 / x.shape[-1])  # (half,) θ_k
    angles = np.asarray(positions)[:, None] * inv_freq  # (n, half)
    a, b = x[..., :half], x[..., half:]  # (..., n, half) each
    # Your code: rotate each pair (a, b) by its angle.
    return np.concatenate([a, b], axis=-1)
# --8<-- [end:ex2-starter]


# --8<-- [start:ex2-solution]
def rope(x, positions, base=10000.0):
    """Rotate x (..., n, d_head) by RoPE: pair k = features k, k + d_head/2."""
    half = x.shape[-1] // 2
    inv_freq = base ** (-np.arange(half) * 2 / x.shape[-1])  # (half,) θ_k
    angles = np.asarray(positions)[:, None] * inv_freq  # (n, half)
    cos = np.cos(angles).astype(x.dtype)  # float32 in, float32 out
    sin = np.sin(angles).astype(x.dtype)
    a, b = x[..., :half], x[..., half:]  # (..., n, half) each
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)
# --8<-- [end:ex2-solution]


# --8<-- [start:ex3-starter]
def count_llama(config):
    """Parameters of a Llama model (RMSNorm, GQA, SwiGLU, no biases)."""
    d = config.d_model
    embeddings = config.vocab_size * d
    # Your code: attention, MLP and norms of every block, the final norm,
    # and the LM head unless config.tie_embeddings.
    return embeddings
# --8<-- [end:ex3-starter]


# --8<-- [start:ex3-solution]
def count_llama(config):
    """Parameters of a Llama model (RMSNorm, GQA, SwiGLU, no biases)."""
    d = config.d_model
    embeddings = config.vocab_size * d
    d_kv = config.n_kv_heads * config.d_head      # width of W_k and W_v
    attention = 2 * d * d + 2 * d * d_kv          # W_q, W_o; W_k, W_v
    swiglu = 3 * d * config.d_ff                  # W_gate, W_up, W_down
    norms = 2 * d                                 # two RMSNorm gains
    head = 0 if config.tie_embeddings else config.vocab_size * d
    total = embeddings + config.n_layers * (attention + swiglu + norms)
    return total + d + head                       # + the final norm


print(f"Llama 3 70B: {count_llama(CONFIGS['llama-3-70b']):,} parameters")
# --8<-- [end:ex3-solution]


# --8<-- [start:ex4-starter]
def layer_norm(x, weight, bias, eps=1e-5):
    """LayerNorm over the last axis, as nn.LayerNorm. Two bugs: find them."""
    mean = x.mean(axis=-1, keepdims=True)
    std = x.std(axis=-1, ddof=1, keepdims=True)
    return (x - mean) / (std + eps) * weight + bias
# --8<-- [end:ex4-starter]


# --8<-- [start:ex4-solution]
def layer_norm(x, weight, bias, eps=1e-5):
    """LayerNorm over the last axis, as nn.LayerNorm."""
    mean = x.mean(axis=-1, keepdims=True)  # (..., 1)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)  # divided by d
    return (x - mean) / np.sqrt(var + eps) * weight + bias  # eps inside
# --8<-- [end:ex4-solution]


# --8<-- [start:ex5-starter]
def gelu_tanh(x):
    """0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))): GPT-2's GELU."""
    # Your code: this is the exact GELU, x Φ(x), not GPT-2's.
    from math import erf
    return 0.5 * x * (1 + np.vectorize(erf)(x / math.sqrt(2)))
# --8<-- [end:ex5-starter]


# --8<-- [start:ex5-solution]
def gelu_tanh(x):
    """0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))): GPT-2's GELU."""
    inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1 + np.tanh(inner))
# --8<-- [end:ex5-solution]


# --8<-- [start:ex6-starter]
def swiglu_fused(x, W_gate_up, W_down):
    """Llama's MLP with the gate and up projections stored as one matrix,
    as Phi-3 stores them: W_gate_up (d_model, 2 d_ff), the gate's d_ff
    columns first, then the up projection's; W_down (d_ff, d_model)."""
    # Your code: this is a two-matrix MLP with a ReLU.
    d_ff = W_down.shape[0]
    return np.maximum(x @ W_gate_up[:, :d_ff], 0) @ W_down
# --8<-- [end:ex6-starter]


# --8<-- [start:ex6-solution]
def swiglu_fused(x, W_gate_up, W_down):
    """Llama's MLP with the gate and up projections stored as one matrix,
    as Phi-3 stores them: W_gate_up (d_model, 2 d_ff), the gate's d_ff
    columns first, then the up projection's; W_down (d_ff, d_model)."""
    gate, up = np.split(x @ W_gate_up, 2, axis=-1)  # (..., d_ff) each
    silu = gate / (1 + np.exp(-gate))  # z σ(z)
    return (silu * up) @ W_down  # (..., d_model)
# --8<-- [end:ex6-solution]


# --8<-- [start:ex7-starter]
def sinusoidal(n, d_model, base=10000.0):
    """(n, d_model): feature 2i of position p is sin(p w_i), feature 2i + 1
    is cos(p w_i), with w_i = base^(-2i / d_model)."""
    p = np.arange(n)[:, None]  # (n, 1)
    w = base ** (-np.arange(0, d_model, 2) / d_model)  # (d_model/2,)
    # Your code: the sines and cosines are not where they belong.
    return np.concatenate([np.sin(p * w), np.cos(p * w)], axis=-1)
# --8<-- [end:ex7-starter]


# --8<-- [start:ex7-solution]
def sinusoidal(n, d_model, base=10000.0):
    """(n, d_model): feature 2i of position p is sin(p w_i), feature 2i + 1
    is cos(p w_i), with w_i = base^(-2i / d_model)."""
    p = np.arange(n)[:, None]  # (n, 1)
    w = base ** (-np.arange(0, d_model, 2) / d_model)  # (d_model/2,)
    pe = np.empty((n, d_model))
    pe[:, 0::2] = np.sin(p * w)  # even features
    pe[:, 1::2] = np.cos(p * w)  # odd features
    return pe
# --8<-- [end:ex7-solution]


# Plausible wrong answers its check must reject; never shown on the page.

# --8<-- [start:ex1-wrong-no-eps]
# rejected with: eps is missing
def rms_norm(x, weight, eps=1e-6):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True)) * weight
# --8<-- [end:ex1-wrong-no-eps]


# --8<-- [start:ex1-wrong-eps-outside-sqrt]
# rejected with: not added after it
def rms_norm(x, weight, eps=1e-6):
    return x / (np.sqrt(np.mean(x * x, axis=-1, keepdims=True)) + eps) * weight
# --8<-- [end:ex1-wrong-eps-outside-sqrt]


# --8<-- [start:ex1-wrong-axis-1]
# rejected with: on x (2, 4, 6)
def rms_norm(x, weight, eps=1e-6):
    return x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + eps) * weight
# --8<-- [end:ex1-wrong-axis-1]


# --8<-- [start:ex1-wrong-fixed-eps]
# rejected with: on x
def rms_norm(x, weight, eps=1e-6):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-6) * weight
# --8<-- [end:ex1-wrong-fixed-eps]


# --8<-- [start:ex1-wrong-in-place]
# rejected with: changed its input x in place
def rms_norm(x, weight, eps=1e-6):
    x /= np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    x *= weight
    return x
# --8<-- [end:ex1-wrong-in-place]


# --8<-- [start:ex1-wrong-centred]
# rejected with: that is LayerNorm
def rms_norm(x, weight, eps=1e-6):
    x = x - x.mean(axis=-1, keepdims=True)
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight
# --8<-- [end:ex1-wrong-centred]


# --8<-- [start:ex2-wrong-interleaved]
# rejected with: that is the interleaved layout
def rope(x, positions, base=10000.0):
    half = x.shape[-1] // 2
    angles = np.asarray(positions)[:, None] * base ** (-np.arange(half) * 2 / x.shape[-1])
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = a * np.cos(angles) - b * np.sin(angles)
    out[..., 1::2] = a * np.sin(angles) + b * np.cos(angles)
    return out
# --8<-- [end:ex2-wrong-interleaved]


# --8<-- [start:ex2-wrong-ignores-base]
# rejected with: ignore the base you are given
def rope(x, positions, base=10000.0):
    half = x.shape[-1] // 2
    angles = np.asarray(positions)[:, None] * 10000.0 ** (-np.arange(half) * 2 / x.shape[-1])
    a, b = x[..., :half], x[..., half:]
    c, s = np.cos(angles), np.sin(angles)
    return np.concatenate([a * c - b * s, a * s + b * c], axis=-1)
# --8<-- [end:ex2-wrong-ignores-base]


# --8<-- [start:ex2-wrong-direction]
# rejected with: the wrong way
def rope(x, positions, base=10000.0):
    half = x.shape[-1] // 2
    angles = np.asarray(positions)[:, None] * base ** (-np.arange(half) * 2 / x.shape[-1])
    a, b = x[..., :half], x[..., half:]
    c, s = np.cos(angles), np.sin(angles)
    return np.concatenate([a * c + b * s, -a * s + b * c], axis=-1)
# --8<-- [end:ex2-wrong-direction]


# --8<-- [start:ex2-wrong-positions-from-zero]
# rejected with: the positions start at 0
def rope(x, positions, base=10000.0):
    half = x.shape[-1] // 2
    angles = np.arange(x.shape[-2])[:, None] * base ** (-np.arange(half) * 2 / x.shape[-1])
    a, b = x[..., :half], x[..., half:]
    c, s = np.cos(angles), np.sin(angles)
    return np.concatenate([a * c - b * s, a * s + b * c], axis=-1)
# --8<-- [end:ex2-wrong-positions-from-zero]


# --8<-- [start:ex3-wrong-no-gqa]
# rejected with: not d_model × d_model
def count_llama(config):
    d, L = config.d_model, config.n_layers
    block = 4 * d * d + 3 * d * config.d_ff + 2 * d
    head = 0 if config.tie_embeddings else config.vocab_size * d
    return config.vocab_size * d + L * block + d + head
# --8<-- [end:ex3-wrong-no-gqa]


# --8<-- [start:ex3-wrong-tied-head-counted]
# rejected with: count it once
def count_llama(config):
    d, L = config.d_model, config.n_layers
    d_kv = config.n_kv_heads * config.d_head
    block = 2 * d * d + 2 * d * d_kv + 3 * d * config.d_ff + 2 * d
    return 2 * config.vocab_size * d + L * block + d
# --8<-- [end:ex3-wrong-tied-head-counted]


# --8<-- [start:ex3-wrong-no-norms]
# rejected with: RMSNorm gains are parameters too
def count_llama(config):
    d, L = config.d_model, config.n_layers
    d_kv = config.n_kv_heads * config.d_head
    block = 2 * d * d + 2 * d * d_kv + 3 * d * config.d_ff
    head = 0 if config.tie_embeddings else config.vocab_size * d
    return config.vocab_size * d + L * block + head
# --8<-- [end:ex3-wrong-no-norms]


# --8<-- [start:ex3-wrong-two-mlp-matrices]
# rejected with: three matrices
def count_llama(config):
    d, L = config.d_model, config.n_layers
    d_kv = config.n_kv_heads * config.d_head
    block = 2 * d * d + 2 * d * d_kv + 2 * d * config.d_ff + 2 * d
    head = 0 if config.tie_embeddings else config.vocab_size * d
    return config.vocab_size * d + L * block + d + head
# --8<-- [end:ex3-wrong-two-mlp-matrices]


# --8<-- [start:ex4-wrong-bessel-only-fixed]
# rejected with: Bessel's correction
def layer_norm(x, weight, bias, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=-1, ddof=1, keepdims=True) + eps) * weight + bias
# --8<-- [end:ex4-wrong-bessel-only-fixed]


# --8<-- [start:ex4-wrong-eps-outside]
# rejected with: it belongs inside the square root
def layer_norm(x, weight, bias, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    return (x - mean) / (x.std(axis=-1, keepdims=True) + eps) * weight + bias
# --8<-- [end:ex4-wrong-eps-outside]


# --8<-- [start:ex4-wrong-no-bias]
# rejected with: on x
def layer_norm(x, weight, bias, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=-1, keepdims=True) + eps) * weight
# --8<-- [end:ex4-wrong-no-bias]


# --8<-- [start:ex5-wrong-exact]
# rejected with: that is the exact GELU
def gelu_tanh(x):
    from math import erf
    return 0.5 * x * (1 + np.vectorize(erf)(x / math.sqrt(2)))
# --8<-- [end:ex5-wrong-exact]


# --8<-- [start:ex5-wrong-no-cubic]
# rejected with: the cubic term
def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * x))
# --8<-- [end:ex5-wrong-no-cubic]


# --8<-- [start:ex5-wrong-sigmoid]
# rejected with: sigmoid approximation
def gelu_tanh(x):
    return x / (1 + np.exp(-1.702 * x))
# --8<-- [end:ex5-wrong-sigmoid]


# --8<-- [start:ex6-wrong-swapped]
# rejected with: the gate and the up projection are swapped
def swiglu_fused(x, W_gate_up, W_down):
    up, gate = np.split(x @ W_gate_up, 2, axis=-1)  # (..., d_ff) each
    silu = gate / (1 + np.exp(-gate))  # z σ(z)
    return (silu * up) @ W_down  # (..., d_model)
# --8<-- [end:ex6-wrong-swapped]


# --8<-- [start:ex6-wrong-interleaved]
# rejected with: interleaved
def swiglu_fused(x, W_gate_up, W_down):
    z = x @ W_gate_up
    gate, up = z[..., 0::2], z[..., 1::2]  # even and odd columns
    return (gate / (1 + np.exp(-gate)) * up) @ W_down
# --8<-- [end:ex6-wrong-interleaved]


# --8<-- [start:ex6-wrong-silu-of-product]
# rejected with: silu applies to the gate
def swiglu_fused(x, W_gate_up, W_down):
    gate, up = np.split(x @ W_gate_up, 2, axis=-1)
    z = gate * up
    return (z / (1 + np.exp(-z))) @ W_down
# --8<-- [end:ex6-wrong-silu-of-product]


# --8<-- [start:ex6-wrong-sigmoid-gate]
# rejected with: z σ(z)
def swiglu_fused(x, W_gate_up, W_down):
    gate, up = np.split(x @ W_gate_up, 2, axis=-1)
    return (1 / (1 + np.exp(-gate)) * up) @ W_down  # σ(z), not z σ(z)
# --8<-- [end:ex6-wrong-sigmoid-gate]


# --8<-- [start:ex7-wrong-halves]
# rejected with: all the sines come first
def sinusoidal(n, d_model, base=10000.0):
    p = np.arange(n)[:, None]
    w = base ** (-np.arange(0, d_model, 2) / d_model)
    return np.concatenate([np.sin(p * w), np.cos(p * w)], axis=-1)
# --8<-- [end:ex7-wrong-halves]


# --8<-- [start:ex7-wrong-fixed-base]
# rejected with: ignore the base you are given
def sinusoidal(n, d_model, base=10000.0):
    p = np.arange(n)[:, None]
    w = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
    pe = np.empty((n, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(p * w), np.cos(p * w)
    return pe
# --8<-- [end:ex7-wrong-fixed-base]


# --8<-- [start:ex7-wrong-frequency-per-feature]
# rejected with: on n = 6, d_model = 8
def sinusoidal(n, d_model, base=10000.0):
    p = np.arange(n)[:, None]
    w = base ** (-np.arange(d_model) / d_model)
    pe = p * w
    pe[:, 0::2], pe[:, 1::2] = np.sin(pe[:, 0::2]), np.cos(pe[:, 1::2])
    return pe
# --8<-- [end:ex7-wrong-frequency-per-feature]


# --8<-- [start:ex8-starter]
def rope_interleaved(x, positions, base=10000.0):
    """Rotate x (..., n, d_head) by RoPE for a checkpoint in the interleaved
    layout (GPT-J, Meta's Llama): pair k = features 2k, 2k + 1.
    It rotates the wrong pairs: find and fix that."""
    half = x.shape[-1] // 2
    inv_freq = base ** (-np.arange(half) * 2 / x.shape[-1])  # (half,) θ_k
    angles = np.asarray(positions)[:, None] * inv_freq  # (n, half)
    cos = np.cos(angles).astype(x.dtype)  # float32 in, float32 out
    sin = np.sin(angles).astype(x.dtype)
    a, b = x[..., :half], x[..., half:]  # (..., n, half) each
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)
# --8<-- [end:ex8-starter]


# --8<-- [start:ex8-solution]
def rope_interleaved(x, positions, base=10000.0):
    """Rotate x (..., n, d_head) by RoPE for a checkpoint in the interleaved
    layout (GPT-J, Meta's Llama): pair k = features 2k, 2k + 1."""
    half = x.shape[-1] // 2
    inv_freq = base ** (-np.arange(half) * 2 / x.shape[-1])  # (half,) θ_k
    angles = np.asarray(positions)[:, None] * inv_freq  # (n, half)
    cos = np.cos(angles).astype(x.dtype)  # float32 in, float32 out
    sin = np.sin(angles).astype(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]  # (..., n, half): features 2k, 2k + 1
    out = np.empty_like(x)  # (..., n, d_head)
    out[..., 0::2] = a * cos - b * sin  # each rotated pair back in place
    out[..., 1::2] = a * sin + b * cos
    return out
# --8<-- [end:ex8-solution]


# --8<-- [start:ex8-wrong-fixed-base]
# rejected with: ignore the base you are given
def rope_interleaved(x, positions, base=10000.0):
    half = x.shape[-1] // 2
    angles = np.asarray(positions)[:, None] * 10000.0 ** (-np.arange(half) * 2 / x.shape[-1])
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = a * cos - b * sin, a * sin + b * cos
    return out
# --8<-- [end:ex8-wrong-fixed-base]


# --8<-- [start:ex8-wrong-written-back-as-halves]
# rejected with: wrote them back as halves
def rope_interleaved(x, positions, base=10000.0):
    half = x.shape[-1] // 2
    angles = np.asarray(positions)[:, None] * base ** (-np.arange(half) * 2 / x.shape[-1])
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)
# --8<-- [end:ex8-wrong-written-back-as-halves]


# --8<-- [start:ex8-wrong-stacked-the-wrong-way]
# rejected with: wrote them back as halves
def rope_interleaved(x, positions, base=10000.0):
    half = x.shape[-1] // 2
    angles = np.asarray(positions)[:, None] * base ** (-np.arange(half) * 2 / x.shape[-1])
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    rotated = np.stack([a * cos - b * sin, a * sin + b * cos], axis=-2)  # (..., 2, half)
    return rotated.reshape(x.shape)
# --8<-- [end:ex8-wrong-stacked-the-wrong-way]


# --8<-- [start:ex8-wrong-angle-per-feature]
# rejected with: on x (5, 8) in float64
def rope_interleaved(x, positions, base=10000.0):
    d = x.shape[-1]
    angles = np.asarray(positions)[:, None] * base ** (-np.arange(d) / d)  # (n, d)
    cos, sin = np.cos(angles[:, 0::2]), np.sin(angles[:, 1::2])
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = a * cos - b * sin, a * sin + b * cos
    return out
# --8<-- [end:ex8-wrong-angle-per-feature]


# --8<-- [start:ex1-wrong-other-default-eps]
# rejected with: left to its default
def rms_norm(x, weight, eps=1e-5):
    """x / sqrt(mean(x²) + eps) * weight over the last axis."""
    mean_square = np.mean(x * x, axis=-1, keepdims=True)  # (..., 1)
    return x / np.sqrt(mean_square + eps) * weight  # eps inside the root
# --8<-- [end:ex1-wrong-other-default-eps]


# --8<-- [start:ex4-wrong-other-default-eps]
# rejected with: left to its default
def layer_norm(x, weight, bias, eps=1e-6):
    """LayerNorm over the last axis, as nn.LayerNorm."""
    mean = x.mean(axis=-1, keepdims=True)  # (..., 1)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)  # divided by d
    return (x - mean) / np.sqrt(var + eps) * weight + bias  # eps inside
# --8<-- [end:ex4-wrong-other-default-eps]


# --8<-- [start:ex2-wrong-llama3-default-base]
# rejected with: left to its default
def rope(x, positions, base=500000.0):
    """Rotate x (..., n, d_head) by RoPE: pair k = features k, k + d_head/2."""
    half = x.shape[-1] // 2
    inv_freq = base ** (-np.arange(half) * 2 / x.shape[-1])  # (half,) θ_k
    angles = np.asarray(positions)[:, None] * inv_freq  # (n, half)
    cos = np.cos(angles).astype(x.dtype)  # float32 in, float32 out
    sin = np.sin(angles).astype(x.dtype)
    a, b = x[..., :half], x[..., half:]  # (..., n, half) each
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)
# --8<-- [end:ex2-wrong-llama3-default-base]


# --8<-- [start:ex8-wrong-llama3-default-base]
# rejected with: left to its default
def rope_interleaved(x, positions, base=500000.0):
    """Rotate x (..., n, d_head) by RoPE for a checkpoint in the interleaved
    layout (GPT-J, Meta's Llama): pair k = features 2k, 2k + 1."""
    half = x.shape[-1] // 2
    inv_freq = base ** (-np.arange(half) * 2 / x.shape[-1])  # (half,) θ_k
    angles = np.asarray(positions)[:, None] * inv_freq  # (n, half)
    cos = np.cos(angles).astype(x.dtype)  # float32 in, float32 out
    sin = np.sin(angles).astype(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]  # (..., n, half): features 2k, 2k + 1
    out = np.empty_like(x)  # (..., n, d_head)
    out[..., 0::2] = a * cos - b * sin  # each rotated pair back in place
    out[..., 1::2] = a * sin + b * cos
    return out
# --8<-- [end:ex8-wrong-llama3-default-base]


# --8<-- [start:ex7-wrong-other-default-base]
# rejected with: left to its default
def sinusoidal(n, d_model, base=1000.0):
    """(n, d_model): feature 2i of position p is sin(p w_i), feature 2i + 1
    is cos(p w_i), with w_i = base^(-2i / d_model)."""
    p = np.arange(n)[:, None]  # (n, 1)
    w = base ** (-np.arange(0, d_model, 2) / d_model)  # (d_model/2,)
    pe = np.empty((n, d_model))
    pe[:, 0::2] = np.sin(p * w)  # even features
    pe[:, 1::2] = np.cos(p * w)  # odd features
    return pe
# --8<-- [end:ex7-wrong-other-default-base]


# --8<-- [start:ex1-wrong-uninitialised]
# rejected with: Not yet
def rms_norm(x, weight, eps=1e-6):
    return np.empty_like(x)  # whatever memory held last
# --8<-- [end:ex1-wrong-uninitialised]


# --8<-- [start:ex5-wrong-uninitialised]
# rejected with: Not yet
def gelu_tanh(x):
    return np.empty_like(x)  # whatever memory held last
# --8<-- [end:ex5-wrong-uninitialised]
