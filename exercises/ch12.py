"""Practice exercises of chapter 12: starters, worked solutions and plausible wrong answers.

Each exercise has an `exN-starter` and an `exN-solution` section (the page includes them
by snippet) and `exN-wrong-<what>` sections that its self-check must reject (never shown;
tests/practice/test_wrong_answers.py runs them). Starter and solution define the same
name on purpose: the reader replaces the one with the other.
"""

# --8<-- [start:imports]
import math

import numpy as np

from attention.practice.ch12 import (check_differential_pair,
                                     check_mixture_layers)
# --8<-- [end:imports]

# --8<-- [start:ex5-starter]
def differential_pair(a1, a2, v, lambdas, layer, eps=1e-5):
    """One head pair of differential attention, from its two softmax maps.

    a1, a2: (..., n_q, n_k), the two maps; v: (..., n_k, 2d), the pair's
    value; lambdas: (4, d), the layer's vectors λ_q1, λ_k1, λ_q2, λ_k2;
    layer: its index, 0 first. Returns (..., n_q, 2d):
    (1 - λ_init) RMSNorm((a1 - λ a2) v), the norm with no gain.
    """
    # Your code: this λ is the starting value alone, and nothing is normed.
    lam = 0.8 - 0.6 * math.exp(-0.3 * layer)
    return (a1 - lam * a2) @ v
# --8<-- [end:ex5-starter]


# --8<-- [start:ex5-solution]
def differential_pair(a1, a2, v, lambdas, layer, eps=1e-5):
    """One head pair of differential attention, from its two softmax maps.

    a1, a2: (..., n_q, n_k), the two maps; v: (..., n_k, 2d), the pair's
    value; lambdas: (4, d), the layer's vectors λ_q1, λ_k1, λ_q2, λ_k2;
    layer: its index, 0 first. Returns (..., n_q, 2d):
    (1 - λ_init) RMSNorm((a1 - λ a2) v), the norm with no gain.
    """
    q1, k1, q2, k2 = lambdas
    start = 0.8 - 0.6 * math.exp(-0.3 * layer)
    lam = np.exp(q1 @ k1) - np.exp(q2 @ k2) + start
    out = (a1 - lam * a2) @ v                           # (..., n_q, 2d)
    ms = (out * out).mean(axis=-1, keepdims=True)       # (..., n_q, 1)
    return (1 - start) * out / np.sqrt(ms + eps)
# --8<-- [end:ex5-solution]


# --8<-- [start:ex5-wrong-from-one]
# rejected with: counts layers from 0
def differential_pair(a1, a2, v, lambdas, layer, eps=1e-5):
    q1, k1, q2, k2 = lambdas
    start = 0.8 - 0.6 * math.exp(-0.3 * (layer + 1))
    lam = np.exp(q1 @ k1) - np.exp(q2 @ k2) + start
    out = (a1 - lam * a2) @ v
    ms = (out * out).mean(axis=-1, keepdims=True)
    return (1 - start) * out / np.sqrt(ms + eps)
# --8<-- [end:ex5-wrong-from-one]


# --8<-- [start:ex5-wrong-no-exp]
# rejected with: exponentials of the dot products
def differential_pair(a1, a2, v, lambdas, layer, eps=1e-5):
    q1, k1, q2, k2 = lambdas
    start = 0.8 - 0.6 * math.exp(-0.3 * layer)
    lam = q1 @ k1 - q2 @ k2 + start
    out = (a1 - lam * a2) @ v
    ms = (out * out).mean(axis=-1, keepdims=True)
    return (1 - start) * out / np.sqrt(ms + eps)
# --8<-- [end:ex5-wrong-no-exp]


# --8<-- [start:ex5-wrong-no-scale]
# rejected with: times 1 - λ_init
def differential_pair(a1, a2, v, lambdas, layer, eps=1e-5):
    q1, k1, q2, k2 = lambdas
    start = 0.8 - 0.6 * math.exp(-0.3 * layer)
    lam = np.exp(q1 @ k1) - np.exp(q2 @ k2) + start
    out = (a1 - lam * a2) @ v
    ms = (out * out).mean(axis=-1, keepdims=True)
    return out / np.sqrt(ms + eps)
# --8<-- [end:ex5-wrong-no-scale]


# --8<-- [start:ex5-wrong-scale-by-lambda]
# rejected with: a fixed scale
def differential_pair(a1, a2, v, lambdas, layer, eps=1e-5):
    q1, k1, q2, k2 = lambdas
    start = 0.8 - 0.6 * math.exp(-0.3 * layer)
    lam = np.exp(q1 @ k1) - np.exp(q2 @ k2) + start
    out = (a1 - lam * a2) @ v
    ms = (out * out).mean(axis=-1, keepdims=True)
    return (1 - lam) * out / np.sqrt(ms + eps)
# --8<-- [end:ex5-wrong-scale-by-lambda]


# --8<-- [start:ex5-wrong-eps-outside]
# rejected with: eps goes inside the square root
def differential_pair(a1, a2, v, lambdas, layer, eps=1e-5):
    q1, k1, q2, k2 = lambdas
    start = 0.8 - 0.6 * math.exp(-0.3 * layer)
    lam = np.exp(q1 @ k1) - np.exp(q2 @ k2) + start
    out = (a1 - lam * a2) @ v
    rms = np.sqrt((out * out).mean(axis=-1, keepdims=True))
    return (1 - start) * out / (rms + eps)
# --8<-- [end:ex5-wrong-eps-outside]


# --8<-- [start:ex6-starter]
def mixture_layers(n_layers, decoder_sparse_step, mlp_only_layers):
    """The layers of a Qwen3-MoE model that have the mixture of experts.

    Layer i (0 first) has it when i + 1 is a multiple of
    decoder_sparse_step and i is not in mlp_only_layers (a list of layer
    indices; numbers past the last layer name no layer). Returns their
    indices as a list, in increasing order.
    """
    # Your code: this is what the step alone would give, counted from 0.
    return [i for i in range(n_layers) if i % decoder_sparse_step == 0]
# --8<-- [end:ex6-starter]


# --8<-- [start:ex6-solution]
def mixture_layers(n_layers, decoder_sparse_step, mlp_only_layers):
    """The layers of a Qwen3-MoE model that have the mixture of experts.

    Layer i (0 first) has it when i + 1 is a multiple of
    decoder_sparse_step and i is not in mlp_only_layers (a list of layer
    indices; numbers past the last layer name no layer). Returns their
    indices as a list, in increasing order.
    """
    return [i for i in range(n_layers)
            if (i + 1) % decoder_sparse_step == 0
            and i not in mlp_only_layers]
# --8<-- [end:ex6-solution]


# --8<-- [start:ex6-wrong-list-or-step]
# rejected with: both rules at once
def mixture_layers(n_layers, decoder_sparse_step, mlp_only_layers):
    if mlp_only_layers:
        return [i for i in range(n_layers) if i not in mlp_only_layers]
    return [i for i in range(n_layers) if (i + 1) % decoder_sparse_step == 0]
# --8<-- [end:ex6-wrong-list-or-step]


# --8<-- [start:ex6-wrong-no-list]
# rejected with: keeps a dense MLP
def mixture_layers(n_layers, decoder_sparse_step, mlp_only_layers):
    return [i for i in range(n_layers) if (i + 1) % decoder_sparse_step == 0]
# --8<-- [end:ex6-wrong-no-list]


# --8<-- [start:ex6-wrong-dense]
# rejected with: the dense layers
def mixture_layers(n_layers, decoder_sparse_step, mlp_only_layers):
    return [i for i in range(n_layers)
            if (i + 1) % decoder_sparse_step or i in mlp_only_layers]
# --8<-- [end:ex6-wrong-dense]


# --8<-- [start:ex6-wrong-past-the-end]
# rejected with: past the last layer
def mixture_layers(n_layers, decoder_sparse_step, mlp_only_layers):
    return [i for i in range(n_layers + 1)
            if (i + 1) % decoder_sparse_step == 0
            and i not in mlp_only_layers]
# --8<-- [end:ex6-wrong-past-the-end]
