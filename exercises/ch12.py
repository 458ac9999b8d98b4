"""Practice exercises of chapter 12: starters, worked solutions and plausible wrong answers.

Each exercise has an `exN-starter` and an `exN-solution` section (the page includes them
by snippet) and `exN-wrong-<what>` sections that its self-check must reject (never shown;
tests/practice/test_wrong_answers.py runs them). Starter and solution define the same
name on purpose: the reader replaces the one with the other.
"""

# --8<-- [start:imports]
import math

import numpy as np

from attention.practice.ch12 import (check_channel_decay_step,
                                     check_choose_keys,
                                     check_differential_pair,
                                     check_gated_output, check_indexer_scores,
                                     check_mixture_layers)
# --8<-- [end:imports]

# --8<-- [start:ex1-starter]
def choose_keys(scores, k):
    """The k keys each query reads: scores (n_q, n_k), -inf on keys a
    query may not see. Returns (n_q, k) key indices, best first; of two
    equal scores the earlier key comes first."""
    # Your code: this takes the first k keys, whatever their scores.
    return np.tile(np.arange(k), (scores.shape[0], 1))
# --8<-- [end:ex1-starter]


# --8<-- [start:ex1-solution]
def choose_keys(scores, k):
    """The k keys each query reads: scores (n_q, n_k), -inf on keys a
    query may not see. Returns (n_q, k) key indices, best first; of two
    equal scores the earlier key comes first."""
    # Sort the negated scores: the largest come first, and a stable sort
    # keeps equal scores in key order.
    return np.argsort(-scores, axis=-1, kind="stable")[:, :k]
# --8<-- [end:ex1-solution]


# --8<-- [start:ex1-wrong-reversed]
# rejected with: the later key comes first
def choose_keys(scores, k):
    return np.argsort(scores, axis=-1, kind="stable")[:, ::-1][:, :k]
# --8<-- [end:ex1-wrong-reversed]


# --8<-- [start:ex1-wrong-smallest]
# rejected with: the smallest scores
def choose_keys(scores, k):
    return np.argsort(scores, axis=-1, kind="stable")[:, :k]
# --8<-- [end:ex1-wrong-smallest]


# --8<-- [start:ex1-wrong-unordered]
# rejected with: best first
def choose_keys(scores, k):
    return np.sort(np.argsort(-scores, axis=-1, kind="stable")[:, :k], axis=-1)
# --8<-- [end:ex1-wrong-unordered]


# --8<-- [start:ex2-starter]
def indexer_scores(q, w, k):
    """The lightning indexer's scores: q (n_q, heads, d) queries, w
    (n_q, heads) weights, k (n_k, d) keys (one per token, all heads).
    Returns (n_q, n_k): sum over heads of w * ReLU(q . k / sqrt(d))."""
    # Your code: this is one head's plain dot products.
    return q[:, 0] @ k.T
# --8<-- [end:ex2-starter]


# --8<-- [start:ex2-solution]
def indexer_scores(q, w, k):
    """The lightning indexer's scores: q (n_q, heads, d) queries, w
    (n_q, heads) weights, k (n_k, d) keys (one per token, all heads).
    Returns (n_q, n_k): sum over heads of w * ReLU(q . k / sqrt(d))."""
    logits = np.einsum("shd,td->sht", q, k) * q.shape[-1] ** -0.5
    return np.einsum("sh,sht->st", w, np.maximum(logits, 0))
# --8<-- [end:ex2-solution]


# --8<-- [start:ex2-wrong-relu-last]
# rejected with: on each head's product
def indexer_scores(q, w, k):
    logits = np.einsum("shd,td->sht", q, k) * q.shape[-1] ** -0.5
    return np.maximum(np.einsum("sh,sht->st", w, logits), 0)
# --8<-- [end:ex2-wrong-relu-last]


# --8<-- [start:ex2-wrong-unscaled]
# rejected with: divide the products by sqrt(d)
def indexer_scores(q, w, k):
    logits = np.einsum("shd,td->sht", q, k)
    return np.einsum("sh,sht->st", w, np.maximum(logits, 0))
# --8<-- [end:ex2-wrong-unscaled]


# --8<-- [start:ex2-wrong-unweighted]
# rejected with: weight each head by w
def indexer_scores(q, w, k):
    logits = np.einsum("shd,td->sht", q, k) * q.shape[-1] ** -0.5
    return np.maximum(logits, 0).sum(axis=1)
# --8<-- [end:ex2-wrong-unweighted]


# --8<-- [start:ex3-starter]
def channel_decay_step(S, k, v, g, beta):
    """One step of KDA: row c of S fades by e^{g[c]}, then the delta rule.

    S: (..., d_k, d_v); k, g: (..., d_k), g <= 0; v: (..., d_v); beta:
    (...,). Returns the new state, the shape of S.
    """
    # Your code: this fades the whole state by one number, Gated DeltaNet's.
    a = np.exp(g.mean(axis=-1))[..., None, None]
    S = a * S
    error = v - (k[..., None, :] @ S)[..., 0, :]
    return S + beta[..., None, None] * (k[..., :, None] * error[..., None, :])
# --8<-- [end:ex3-starter]


# --8<-- [start:ex3-solution]
def channel_decay_step(S, k, v, g, beta):
    """One step of KDA: row c of S fades by e^{g[c]}, then the delta rule.

    S: (..., d_k, d_v); k, g: (..., d_k), g <= 0; v: (..., d_v); beta:
    (...,). Returns the new state, the shape of S.
    """
    S = np.exp(g)[..., :, None] * S                # row c times e^{g[c]}
    error = v - (k[..., None, :] @ S)[..., 0, :]   # v - k S, (..., d_v)
    return S + beta[..., None, None] * (k[..., :, None] * error[..., None, :])
# --8<-- [end:ex3-solution]


# --8<-- [start:ex3-wrong-columns]
# rejected with: the value channels
def channel_decay_step(S, k, v, g, beta):
    S = np.exp(g)[..., None, :] * S
    error = v - (k[..., None, :] @ S)[..., 0, :]
    return S + beta[..., None, None] * (k[..., :, None] * error[..., None, :])
# --8<-- [end:ex3-wrong-columns]


# --8<-- [start:ex3-wrong-decay-after]
# rejected with: after the write
def channel_decay_step(S, k, v, g, beta):
    error = v - (k[..., None, :] @ S)[..., 0, :]
    S = S + beta[..., None, None] * (k[..., :, None] * error[..., None, :])
    return np.exp(g)[..., :, None] * S
# --8<-- [end:ex3-wrong-decay-after]


# --8<-- [start:ex3-wrong-stale-error]
# rejected with: before its decay
def channel_decay_step(S, k, v, g, beta):
    error = v - (k[..., None, :] @ S)[..., 0, :]
    S = np.exp(g)[..., :, None] * S
    return S + beta[..., None, None] * (k[..., :, None] * error[..., None, :])
# --8<-- [end:ex3-wrong-stale-error]


# --8<-- [start:ex3-wrong-no-beta]
# rejected with: beta was ignored
def channel_decay_step(S, k, v, g, beta):
    S = np.exp(g)[..., :, None] * S
    error = v - (k[..., None, :] @ S)[..., 0, :]
    return S + k[..., :, None] * error[..., None, :]
# --8<-- [end:ex3-wrong-no-beta]


# --8<-- [start:ex4-starter]
def gated_output(heads, x, W_gate, W_o):
    """Gated attention's output: (heads * sigmoid(x W_gate)) W_o.

    heads: (..., n_heads * d_head), the heads' outputs side by side; x:
    (..., d_model), the tokens' inputs; W_gate: (d_model, n_heads * d_head);
    W_o: (n_heads * d_head, d_model). Returns (..., d_model).
    """
    # Your code: this is plain attention's output, no gate.
    return heads @ W_o
# --8<-- [end:ex4-starter]


# --8<-- [start:ex4-solution]
def gated_output(heads, x, W_gate, W_o):
    """Gated attention's output: (heads * sigmoid(x W_gate)) W_o.

    heads: (..., n_heads * d_head), the heads' outputs side by side; x:
    (..., d_model), the tokens' inputs; W_gate: (d_model, n_heads * d_head);
    W_o: (n_heads * d_head, d_model). Returns (..., d_model).
    """
    z = x @ W_gate                                 # the gate's logits
    gate = 0.5 * (1 + np.tanh(z / 2))              # sigmoid, never overflows
    return (heads * gate) @ W_o
# --8<-- [end:ex4-solution]


# --8<-- [start:ex4-wrong-silu]
# rejected with: silu
def gated_output(heads, x, W_gate, W_o):
    z = x @ W_gate
    return (heads * z / (1 + np.exp(-z))) @ W_o
# --8<-- [end:ex4-wrong-silu]


# --8<-- [start:ex4-wrong-overflow]
# rejected with: overflowed
def gated_output(heads, x, W_gate, W_o):
    e = np.exp(x @ W_gate)
    return (heads * (e / (1 + e))) @ W_o
# --8<-- [end:ex4-wrong-overflow]


# --8<-- [start:ex4-wrong-gate-from-heads]
# rejected with: from the heads
def gated_output(heads, x, W_gate, W_o):
    return (heads / (1 + np.exp(-heads))) @ W_o
# --8<-- [end:ex4-wrong-gate-from-heads]


# --8<-- [start:ex4-wrong-one-gate-per-token]
# rejected with: one gate per token
def gated_output(heads, x, W_gate, W_o):
    z = (x @ W_gate).mean(axis=-1, keepdims=True)
    return (heads * 0.5 * (1 + np.tanh(z / 2))) @ W_o
# --8<-- [end:ex4-wrong-one-gate-per-token]


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
