"""Practice exercises of chapter 12: starters, worked solutions and plausible wrong answers.

Each exercise has an `exN-starter` and an `exN-solution` section (the page includes them
by snippet) and `exN-wrong-<what>` sections that its self-check must reject (never shown;
tests/practice/test_wrong_answers.py runs them). Starter and solution define the same
name on purpose: the reader replaces the one with the other.
"""

# --8<-- [start:imports]
import numpy as np

from attention.practice.ch12 import check_channel_decay_step, check_gated_output
# --8<-- [end:imports]


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
