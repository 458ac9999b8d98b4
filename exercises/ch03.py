"""Practice exercises of chapter 3: starters and worked solutions, one source for the page
and the notebook.

Each exercise has an `exN-starter` and an `exN-solution` section; the page includes them
by snippet, and the practice tests run each section on its own (after the `imports`
section) through its self-check. Starter and solution define the same name on purpose:
the reader replaces the one with the other.
"""

# --8<-- [start:imports]
import math

import numpy as np

from attention.blocks import attention_layer
from attention.feed_forward import mlp
from attention.model import CONFIGS
from attention.norms import layer_norm
from attention.practice.ch03 import (check_block, check_llama_count,
                                     check_rms_norm, check_rotate_pair)
# --8<-- [end:imports]


# --8<-- [start:ex1-starter]
def rms_norm_from_formula(x, weight, eps=1e-6):
    """x / sqrt(mean of x² over the last axis + eps) * weight."""
    # Your code: divide each token (row) by its root mean square.
    return x * weight
# --8<-- [end:ex1-starter]


# --8<-- [start:ex1-solution]
def rms_norm_from_formula(x, weight, eps=1e-6):
    """x / sqrt(mean of x² over the last axis + eps) * weight."""
    mean_square = (x**2).mean(axis=-1, keepdims=True)  # (..., 1)
    return x / np.sqrt(mean_square + eps) * weight
# --8<-- [end:ex1-solution]


# --8<-- [start:ex2-starter]
def rotate_pair(a, b, position, i, d_head, base=10000.0):
    """RoPE for one pair (a, b): pair i of a token at `position`.

    Rotate by the angle position * theta_i, theta_i = base ** (-2i / d_head).
    Return (a', b').
    """
    # Your code: the angle, then the 2-D rotation of (a, b).
    return a, b
# --8<-- [end:ex2-starter]


# --8<-- [start:ex2-solution]
def rotate_pair(a, b, position, i, d_head, base=10000.0):
    """RoPE for one pair (a, b): pair i of a token at `position`.

    Rotate by the angle position * theta_i, theta_i = base ** (-2i / d_head).
    Return (a', b').
    """
    angle = position * base ** (-2 * i / d_head)
    cos, sin = math.cos(angle), math.sin(angle)
    return a * cos - b * sin, a * sin + b * cos
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
def block(x, p, n_heads):
    """GPT-2's pre-LN block: x + attn(LN(x)), then x + mlp(LN(x))."""
    h = layer_norm(x, p["norm1.weight"], p["norm1.bias"])
    x = h + attention_layer(h, p, n_heads=n_heads)  # causal by default
    h = layer_norm(x, p["norm2.weight"], p["norm2.bias"])
    return x + mlp(h, p["mlp.W_in"], p["mlp.b_in"], p["mlp.W_out"],
                   p["mlp.b_out"], activation="gelu_tanh")
# --8<-- [end:ex4-starter]


# --8<-- [start:ex4-solution]
def block(x, p, n_heads):
    """GPT-2's pre-LN block: x + attn(LN(x)), then x + mlp(LN(x))."""
    h = layer_norm(x, p["norm1.weight"], p["norm1.bias"])
    x = x + attention_layer(h, p, n_heads=n_heads)  # causal by default
    h = layer_norm(x, p["norm2.weight"], p["norm2.bias"])
    return x + mlp(h, p["mlp.W_in"], p["mlp.b_in"], p["mlp.W_out"],
                   p["mlp.b_out"], activation="gelu_tanh")
# --8<-- [end:ex4-solution]


# Plausible wrong answers: each check must reject them and say what is wrong.

# --8<-- [start:ex1-wrong-no-eps]
# rejected with: eps is missing
def rms_norm_from_formula(x, weight, eps=1e-6):
    return x / np.sqrt((x**2).mean(axis=-1, keepdims=True)) * weight
# --8<-- [end:ex1-wrong-no-eps]


# --8<-- [start:ex1-wrong-eps-outside-sqrt]
# rejected with: inside the square root
def rms_norm_from_formula(x, weight, eps=1e-6):
    return x / (np.sqrt((x**2).mean(axis=-1, keepdims=True)) + eps) * weight
# --8<-- [end:ex1-wrong-eps-outside-sqrt]


# --8<-- [start:ex1-wrong-no-gain]
# rejected with: gain is missing
def rms_norm_from_formula(x, weight, eps=1e-6):
    return x / np.sqrt((x**2).mean(axis=-1, keepdims=True) + eps)
# --8<-- [end:ex1-wrong-no-gain]


# --8<-- [start:ex1-wrong-centred]
# rejected with: that is LayerNorm
def rms_norm_from_formula(x, weight, eps=1e-6):
    c = x - x.mean(axis=-1, keepdims=True)
    return c / np.sqrt((c**2).mean(axis=-1, keepdims=True) + eps) * weight
# --8<-- [end:ex1-wrong-centred]


# --8<-- [start:ex1-wrong-over-tokens]
# rejected with: the last axis
def rms_norm_from_formula(x, weight, eps=1e-6):
    return x / np.sqrt((x**2).mean(axis=0, keepdims=True) + eps) * weight
# --8<-- [end:ex1-wrong-over-tokens]


# --8<-- [start:ex2-wrong-direction]
# rejected with: wrong way
def rotate_pair(a, b, position, i, d_head, base=10000.0):
    t = position * base ** (-2 * i / d_head)
    return a * math.cos(t) + b * math.sin(t), -a * math.sin(t) + b * math.cos(t)
# --8<-- [end:ex2-wrong-direction]


# --8<-- [start:ex2-wrong-missing-two]
# rejected with: you used base^(-i/d_head)
def rotate_pair(a, b, position, i, d_head, base=10000.0):
    t = position * base ** (-i / d_head)
    return a * math.cos(t) - b * math.sin(t), a * math.sin(t) + b * math.cos(t)
# --8<-- [end:ex2-wrong-missing-two]


# --8<-- [start:ex2-wrong-positive-exponent]
# rejected with: the exponent is negative
def rotate_pair(a, b, position, i, d_head, base=10000.0):
    t = position * base ** (2 * i / d_head)
    return a * math.cos(t) - b * math.sin(t), a * math.sin(t) + b * math.cos(t)
# --8<-- [end:ex2-wrong-positive-exponent]


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


# --8<-- [start:ex4-wrong-post-ln]
# rejected with: that is a post-LN block
def block(x, p, n_heads):
    x = layer_norm(x + attention_layer(x, p, n_heads=n_heads),
                   p["norm1.weight"], p["norm1.bias"])
    return layer_norm(x + mlp(x, p["mlp.W_in"], p["mlp.b_in"], p["mlp.W_out"],
                              p["mlp.b_out"], activation="gelu_tanh"),
                      p["norm2.weight"], p["norm2.bias"])
# --8<-- [end:ex4-wrong-post-ln]


# --8<-- [start:ex4-wrong-not-causal]
# rejected with: must be causal
def block(x, p, n_heads):
    h = layer_norm(x, p["norm1.weight"], p["norm1.bias"])
    x = x + attention_layer(h, p, n_heads=n_heads, causal=False)
    h = layer_norm(x, p["norm2.weight"], p["norm2.bias"])
    return x + mlp(h, p["mlp.W_in"], p["mlp.b_in"], p["mlp.W_out"],
                   p["mlp.b_out"], activation="gelu_tanh")
# --8<-- [end:ex4-wrong-not-causal]


# --8<-- [start:ex4-wrong-no-mlp-residual]
# rejected with: the MLP's residual is missing
def block(x, p, n_heads):
    h = layer_norm(x, p["norm1.weight"], p["norm1.bias"])
    x = x + attention_layer(h, p, n_heads=n_heads)
    h = layer_norm(x, p["norm2.weight"], p["norm2.bias"])
    return mlp(h, p["mlp.W_in"], p["mlp.b_in"], p["mlp.W_out"], p["mlp.b_out"],
               activation="gelu_tanh")
# --8<-- [end:ex4-wrong-no-mlp-residual]
