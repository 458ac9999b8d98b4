"""Practice exercises of chapter 10: starters, worked solutions and plausible wrong answers.

Each exercise has an `exN-starter` and an `exN-solution` section (the page includes them
by snippet) and `exN-wrong-<what>` sections that its self-check must reject (never shown;
tests/practice/test_wrong_answers.py runs them). Starter and solution define the same
name on purpose: the reader replaces the one with the other.
"""

# --8<-- [start:imports]
import math

import numpy as np

from attention.practice.ch10 import (
    check_causal_linear_attention,
    check_decayed_attention,
    check_decayed_state,
    check_delta_decode,
    check_merge_chunks,
    check_normalised_decode,
)
# --8<-- [end:imports]

# --8<-- [start:ex1-starter]
def causal_linear_attention(q, k, v):
    """Causal linear attention, no normaliser, as a recurrence over tokens.

    q, k: features (..., n, d_k); v: (..., n, d_v). Row t of the result is
    q_t S_t with S_t = k_1ᵀ v_1 + ... + k_tᵀ v_t, a (d_k, d_v) state.
    """
    # Your code: this reads one state of all n tokens, the future included.
    S = np.swapaxes(k, -1, -2) @ v                 # (..., d_k, d_v)
    return q @ S
# --8<-- [end:ex1-starter]


# --8<-- [start:ex1-solution]
def causal_linear_attention(q, k, v):
    """Causal linear attention, no normaliser, as a recurrence over tokens.

    q, k: features (..., n, d_k); v: (..., n, d_v). Row t of the result is
    q_t S_t with S_t = k_1ᵀ v_1 + ... + k_tᵀ v_t, a (d_k, d_v) state.
    """
    *lead, n, d_k = k.shape
    S = np.zeros((*lead, d_k, v.shape[-1]), dtype=v.dtype)
    out = np.empty(v.shape, dtype=v.dtype)         # (..., n, d_v)
    for t in range(n):
        S = S + k[..., t, :, None] * v[..., t, None, :]   # add k_tᵀ v_t
        out[..., t, :] = (q[..., t, None, :] @ S)[..., 0, :]
    return out
# --8<-- [end:ex1-solution]


# --8<-- [start:ex1-wrong-read-first]
# rejected with: did not see its own token
def causal_linear_attention(q, k, v):
    *lead, n, d_k = k.shape
    S = np.zeros((*lead, d_k, v.shape[-1]))
    out = np.empty(v.shape)
    for t in range(n):
        out[..., t, :] = (q[..., t, None, :] @ S)[..., 0, :]
        S = S + k[..., t, :, None] * v[..., t, None, :]
    return out
# --8<-- [end:ex1-wrong-read-first]


# --8<-- [start:ex1-wrong-normalised]
# rejected with: no normaliser here
def causal_linear_attention(q, k, v):
    weights = np.tril(q @ np.swapaxes(k, -1, -2))
    return weights @ v / weights.sum(axis=-1, keepdims=True)
# --8<-- [end:ex1-wrong-normalised]


# --8<-- [start:ex1-wrong-square-matrix]
# rejected with: what the n x n matrices take
def causal_linear_attention(q, k, v):
    return np.tril(q @ np.swapaxes(k, -1, -2)) @ v
# --8<-- [end:ex1-wrong-square-matrix]


# --8<-- [start:ex2-starter]
def delta_decode(S, q, k, v, beta, g):
    """One decode step of Gated DeltaNet (Qwen3-Next), one new token.

    S: the state (..., d_k, d_v); q, k: (..., d_k); v: (..., d_v); beta,
    g: (...) or numbers, a = exp(g). q and k are first scaled to unit
    length, x / sqrt(sum(x²) + 1e-6), and q then by 1 / sqrt(d_k). The
    state is updated by the gated delta rule and read by the query.
    Returns (out (..., d_v), the new state)."""
    # Your code: this reads the state as it was and leaves it unchanged.
    return (q[..., None, :] @ S)[..., 0, :], S
# --8<-- [end:ex2-starter]


# --8<-- [start:ex2-solution]
def delta_decode(S, q, k, v, beta, g):
    """One decode step of Gated DeltaNet (Qwen3-Next), one new token.

    S: the state (..., d_k, d_v); q, k: (..., d_k); v: (..., d_v); beta,
    g: (...) or numbers, a = exp(g). q and k are first scaled to unit
    length, x / sqrt(sum(x²) + 1e-6), and q then by 1 / sqrt(d_k). The
    state is updated by the gated delta rule and read by the query.
    Returns (out (..., d_v), the new state)."""
    d_k = q.shape[-1]
    q = q / np.sqrt(np.sum(q * q, axis=-1, keepdims=True) + 1e-6)
    k = k / np.sqrt(np.sum(k * k, axis=-1, keepdims=True) + 1e-6)
    q = q * (1 / math.sqrt(d_k))  # a Python float keeps q's dtype
    S = np.exp(g)[..., None, None] * S                 # decay first
    error = v - (k[..., None, :] @ S)[..., 0, :]       # v - k (a S)
    write = k[..., :, None] * error[..., None, :]      # kᵀ error
    S = S + np.asarray(beta)[..., None, None] * write
    return (q[..., None, :] @ S)[..., 0, :], S         # read the new state
# --8<-- [end:ex2-solution]

# --8<-- [start:ex2-wrong-linear-write]
# rejected with: as linear attention does
def delta_decode(S, q, k, v, beta, g):
    d_k = q.shape[-1]
    q = q / np.sqrt(np.sum(q * q, axis=-1, keepdims=True) + 1e-6)
    k = k / np.sqrt(np.sum(k * k, axis=-1, keepdims=True) + 1e-6)
    q = q * (1 / math.sqrt(d_k))  # a Python float keeps q's dtype
    S = np.exp(g)[..., None, None] * S                 # decay first
    error = v  # linear attention's write
    write = k[..., :, None] * error[..., None, :]      # kᵀ error
    S = S + np.asarray(beta)[..., None, None] * write
    return (q[..., None, :] @ S)[..., 0, :], S         # read the new state
# --8<-- [end:ex2-wrong-linear-write]

# --8<-- [start:ex2-wrong-old-state]
# rejected with: measured against S before its decay
def delta_decode(S, q, k, v, beta, g):
    d_k = q.shape[-1]
    q = q / np.sqrt(np.sum(q * q, axis=-1, keepdims=True) + 1e-6)
    k = k / np.sqrt(np.sum(k * k, axis=-1, keepdims=True) + 1e-6)
    q = q * (1 / math.sqrt(d_k))  # a Python float keeps q's dtype
    error = v - (k[..., None, :] @ S)[..., 0, :]  # before the decay
    S = np.exp(g)[..., None, None] * S
    write = k[..., :, None] * error[..., None, :]      # kᵀ error
    S = S + np.asarray(beta)[..., None, None] * write
    return (q[..., None, :] @ S)[..., 0, :], S         # read the new state
# --8<-- [end:ex2-wrong-old-state]

# --8<-- [start:ex2-wrong-decay-last]
# rejected with: decay first, then write
def delta_decode(S, q, k, v, beta, g):
    d_k = q.shape[-1]
    q = q / np.sqrt(np.sum(q * q, axis=-1, keepdims=True) + 1e-6)
    k = k / np.sqrt(np.sum(k * k, axis=-1, keepdims=True) + 1e-6)
    q = q * (1 / math.sqrt(d_k))  # a Python float keeps q's dtype
    error = v - (k[..., None, :] @ S)[..., 0, :]
    write = k[..., :, None] * error[..., None, :]
    S = S + np.asarray(beta)[..., None, None] * write
    S = np.exp(g)[..., None, None] * S  # decays the write too
    return (q[..., None, :] @ S)[..., 0, :], S         # read the new state
# --8<-- [end:ex2-wrong-decay-last]

# --8<-- [start:ex2-wrong-no-beta]
# rejected with: beta was ignored
def delta_decode(S, q, k, v, beta, g):
    d_k = q.shape[-1]
    q = q / np.sqrt(np.sum(q * q, axis=-1, keepdims=True) + 1e-6)
    k = k / np.sqrt(np.sum(k * k, axis=-1, keepdims=True) + 1e-6)
    q = q * (1 / math.sqrt(d_k))  # a Python float keeps q's dtype
    S = np.exp(g)[..., None, None] * S                 # decay first
    error = v - (k[..., None, :] @ S)[..., 0, :]       # v - k (a S)
    write = k[..., :, None] * error[..., None, :]      # kᵀ error
    S = S + write
    return (q[..., None, :] @ S)[..., 0, :], S         # read the new state
# --8<-- [end:ex2-wrong-no-beta]

# --8<-- [start:ex2-wrong-read-old-state]
# rejected with: read the new state
def delta_decode(S, q, k, v, beta, g):
    d_k = q.shape[-1]
    q = q / np.sqrt(np.sum(q * q, axis=-1, keepdims=True) + 1e-6)
    k = k / np.sqrt(np.sum(k * k, axis=-1, keepdims=True) + 1e-6)
    q = q * (1 / math.sqrt(d_k))  # a Python float keeps q's dtype
    out = (q[..., None, :] @ S)[..., 0, :]  # read before the update
    S = np.exp(g)[..., None, None] * S                 # decay first
    error = v - (k[..., None, :] @ S)[..., 0, :]       # v - k (a S)
    write = k[..., :, None] * error[..., None, :]      # kᵀ error
    S = S + np.asarray(beta)[..., None, None] * write
    return out, S
# --8<-- [end:ex2-wrong-read-old-state]

# --8<-- [start:ex2-wrong-unnormalised]
# rejected with: unit length
def delta_decode(S, q, k, v, beta, g):
    d_k = q.shape[-1]
    q = q * (1 / math.sqrt(d_k))  # a Python float keeps q's dtype
    S = np.exp(g)[..., None, None] * S                 # decay first
    error = v - (k[..., None, :] @ S)[..., 0, :]       # v - k (a S)
    write = k[..., :, None] * error[..., None, :]      # kᵀ error
    S = S + np.asarray(beta)[..., None, None] * write
    return (q[..., None, :] @ S)[..., 0, :], S         # read the new state
# --8<-- [end:ex2-wrong-unnormalised]

# --8<-- [start:ex2-wrong-eps-outside]
# rejected with: Not yet
def delta_decode(S, q, k, v, beta, g):
    d_k = q.shape[-1]
    q = q / (np.linalg.norm(q, axis=-1, keepdims=True) + 1e-6)
    k = k / (np.linalg.norm(k, axis=-1, keepdims=True) + 1e-6)
    q = q * (1 / math.sqrt(d_k))  # a Python float keeps q's dtype
    S = np.exp(g)[..., None, None] * S                 # decay first
    error = v - (k[..., None, :] @ S)[..., 0, :]       # v - k (a S)
    write = k[..., :, None] * error[..., None, :]      # kᵀ error
    S = S + np.asarray(beta)[..., None, None] * write
    return (q[..., None, :] @ S)[..., 0, :], S         # read the new state
# --8<-- [end:ex2-wrong-eps-outside]

# --8<-- [start:ex2-wrong-unscaled]
# rejected with: 1 / sqrt(d_k)
def delta_decode(S, q, k, v, beta, g):
    d_k = q.shape[-1]
    q = q / np.sqrt(np.sum(q * q, axis=-1, keepdims=True) + 1e-6)
    k = k / np.sqrt(np.sum(k * k, axis=-1, keepdims=True) + 1e-6)
    S = np.exp(g)[..., None, None] * S                 # decay first
    error = v - (k[..., None, :] @ S)[..., 0, :]       # v - k (a S)
    write = k[..., :, None] * error[..., None, :]      # kᵀ error
    S = S + np.asarray(beta)[..., None, None] * write
    return (q[..., None, :] @ S)[..., 0, :], S         # read the new state
# --8<-- [end:ex2-wrong-unscaled]


# --8<-- [start:ex3-starter]
def merge_chunks(q_b, g_b, out_b, state_a, state_b):
    """Join chunk A (before) and chunk B (after) of decayed linear
    attention, S_t = exp(g_t) S_{t-1} + k_tᵀ v_t, out_t = q_t S_t.

    Chunk B was computed alone, from a zero state: out_b (..., C, d_v),
    state_b (..., d_k, d_v). state_a is chunk A's final state; q_b
    (..., C, d_k) and g_b (..., C) chunk B's queries and log decays.
    Returns (B's true outputs, the state after both chunks).
    """
    # Your code: this keeps chunk B as if chunk A had never been.
    return out_b, state_b
# --8<-- [end:ex3-starter]


# --8<-- [start:ex3-solution]
def merge_chunks(q_b, g_b, out_b, state_a, state_b):
    """Join chunk A (before) and chunk B (after) of decayed linear
    attention, S_t = exp(g_t) S_{t-1} + k_tᵀ v_t, out_t = q_t S_t.

    Chunk B was computed alone, from a zero state: out_b (..., C, d_v),
    state_b (..., d_k, d_v). state_a is chunk A's final state; q_b
    (..., C, d_k) and g_b (..., C) chunk B's queries and log decays.
    Returns (B's true outputs, the state after both chunks).
    """
    fade = np.exp(np.cumsum(g_b, axis=-1))  # (..., C): A's state at each t
    out = out_b + fade[..., None] * (q_b @ state_a)
    return out, fade[..., -1, None, None] * state_a + state_b
# --8<-- [end:ex3-solution]

# --8<-- [start:ex3-wrong-no-decay]
# rejected with: nothing fades
def merge_chunks(q_b, g_b, out_b, state_a, state_b):
    return out_b + q_b @ state_a, state_a + state_b  # no decay
# --8<-- [end:ex3-wrong-no-decay]

# --8<-- [start:ex3-wrong-own-decay-left-out]
# rejected with: token t's own decay
def merge_chunks(q_b, g_b, out_b, state_a, state_b):
    G = np.cumsum(g_b, axis=-1)
    fade = np.exp(G - g_b)  # the decays before token t only
    out = out_b + fade[..., None] * (q_b @ state_a)
    return out, np.exp(G[..., -1, None, None]) * state_a + state_b
# --8<-- [end:ex3-wrong-own-decay-left-out]

# --8<-- [start:ex3-wrong-state-a-kept]
# rejected with: the state A left fades
def merge_chunks(q_b, g_b, out_b, state_a, state_b):
    fade = np.exp(np.cumsum(g_b, axis=-1))
    return out_b + fade[..., None] * (q_b @ state_a), state_a + state_b
# --8<-- [end:ex3-wrong-state-a-kept]

# --8<-- [start:ex3-wrong-one-fade]
# rejected with: each query of B
def merge_chunks(q_b, g_b, out_b, state_a, state_b):
    total = np.exp(np.sum(g_b, axis=-1))[..., None, None]  # the whole chunk's
    return out_b + total * (q_b @ state_a), total * state_a + state_b
# --8<-- [end:ex3-wrong-one-fade]

# --8<-- [start:ex3-wrong-both-states]
# rejected with: add the faded q_b state_a only
def merge_chunks(q_b, g_b, out_b, state_a, state_b):
    fade = np.exp(np.cumsum(g_b, axis=-1))
    state = fade[..., -1, None, None] * state_a + state_b
    return out_b + fade[..., None] * (q_b @ state), state
# --8<-- [end:ex3-wrong-both-states]


# --8<-- [start:ex1-wrong-uninitialised]
# rejected with: Not yet
def causal_linear_attention(q, k, v):
    return np.empty(v.shape, v.dtype)  # whatever memory held last
# --8<-- [end:ex1-wrong-uninitialised]


# --8<-- [start:ex2-wrong-uninitialised]
# rejected with: Not yet
def delta_decode(S, q, k, v, beta, g):
    return np.empty_like(v), np.empty_like(S)  # whatever memory held last
# --8<-- [end:ex2-wrong-uninitialised]


# --8<-- [start:ex4-starter]
def decayed_attention(q, k, v, g):
    """Gated linear attention, a decay per token and key channel, in
    parallel.

    q, k (..., n, d_k); v (..., n, d_v); g (..., n, d_k): the log of each
    token's decay of each channel of the state, g <= 0. The recurrence
    S_t = exp(g_t)^T * S_{t-1} + k_t^T v_t (row c of S faded by
    exp(g_t[c])), out_t = q_t S_t. Returns (..., n, d_v).
    """
    # Your code: this is causal linear attention without the decay.
    n = q.shape[-2]
    causal = np.tril(np.ones((n, n)))
    return (causal * (q @ np.swapaxes(k, -1, -2))) @ v
# --8<-- [end:ex4-starter]


# --8<-- [start:ex4-solution]
def decayed_attention(q, k, v, g):
    """Gated linear attention, a decay per token and key channel, in
    parallel.

    q, k (..., n, d_k); v (..., n, d_v); g (..., n, d_k): the log of each
    token's decay of each channel of the state, g <= 0. The recurrence
    S_t = exp(g_t)^T * S_{t-1} + k_t^T v_t (row c of S faded by
    exp(g_t[c])), out_t = q_t S_t. Returns (..., n, d_v).
    """
    G = np.cumsum(g, axis=-2)                 # (..., n, d_k): g_1 + ... + g_i
    gap = G[..., :, None, :] - G[..., None, :, :]  # (..., n, n, d_k)
    n = gap.shape[-2]
    causal = np.tril(np.ones((n, n), dtype=bool))[:, :, None]  # j <= i
    decay = np.exp(np.where(causal, gap, -np.inf))  # 0 above the diagonal
    scores = np.einsum("...ic,...ijc,...jc->...ij", q, decay, k)
    return scores @ v
# --8<-- [end:ex4-solution]


# --8<-- [start:ex4-wrong-exp-of-each-sum]
# rejected with: overflowed
def decayed_attention(q, k, v, g):
    G = np.cumsum(g, axis=-2)                 # (..., n, d_k): g_1 + ... + g_i
    n = G.shape[-2]
    scores = (q * np.exp(G)) @ np.swapaxes(k * np.exp(-G), -1, -2)
    scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, 0)
    return scores @ v
# --8<-- [end:ex4-wrong-exp-of-each-sum]


# --8<-- [start:ex4-wrong-mask-after-exp]
# rejected with: overflowed
def decayed_attention(q, k, v, g):
    G = np.cumsum(g, axis=-2)                 # (..., n, d_k): g_1 + ... + g_i
    gap = G[..., :, None, :] - G[..., None, :, :]  # (..., n, n, d_k)
    n = gap.shape[-2]
    causal = np.tril(np.ones((n, n), dtype=bool))[:, :, None]  # j <= i
    decay = np.exp(gap) * causal
    scores = np.einsum("...ic,...ijc,...jc->...ij", q, decay, k)
    return scores @ v
# --8<-- [end:ex4-wrong-mask-after-exp]


# --8<-- [start:ex4-wrong-own-decay]
# rejected with: its own token's decay
def decayed_attention(q, k, v, g):
    G = np.cumsum(g, axis=-2)                 # (..., n, d_k): g_1 + ... + g_i
    gap = G[..., :, None, :] - G[..., None, :, :] + g[..., None, :, :]
    n = gap.shape[-2]
    causal = np.tril(np.ones((n, n), dtype=bool))[:, :, None]  # j <= i
    decay = np.exp(np.where(causal, gap, -np.inf))  # 0 above the diagonal
    scores = np.einsum("...ic,...ijc,...jc->...ij", q, decay, k)
    return scores @ v
# --8<-- [end:ex4-wrong-own-decay]


# --8<-- [start:ex4-wrong-sum-over-channels]
# rejected with: over the tokens
def decayed_attention(q, k, v, g):
    G = np.cumsum(g, axis=-1)                 # (..., n, d_k): g_1 + ... + g_i
    gap = G[..., :, None, :] - G[..., None, :, :]  # (..., n, n, d_k)
    n = gap.shape[-2]
    causal = np.tril(np.ones((n, n), dtype=bool))[:, :, None]  # j <= i
    decay = np.exp(np.where(causal, gap, -np.inf))  # 0 above the diagonal
    scores = np.einsum("...ic,...ijc,...jc->...ij", q, decay, k)
    return scores @ v
# --8<-- [end:ex4-wrong-sum-over-channels]


# --8<-- [start:ex4-wrong-one-decay-per-token]
# rejected with: fades by its own decay
def decayed_attention(q, k, v, g):
    G = np.cumsum(g.mean(axis=-1, keepdims=True), axis=-2)                 # (..., n, d_k): g_1 + ... + g_i
    gap = G[..., :, None, :] - G[..., None, :, :]  # (..., n, n, d_k)
    n = gap.shape[-2]
    causal = np.tril(np.ones((n, n), dtype=bool))[:, :, None]  # j <= i
    decay = np.exp(np.where(causal, gap, -np.inf))  # 0 above the diagonal
    scores = np.einsum("...ic,...ijc,...jc->...ij", q, decay, k)
    return scores @ v
# --8<-- [end:ex4-wrong-one-decay-per-token]


# --8<-- [start:ex4-wrong-package-decays]
# rejected with: asks you not to use
def decayed_attention(q, k, v, g):
    from attention.linear.chunked import chunk_decays
    outs = []
    for c in range(q.shape[-1]):  # one channel at a time, its scalar decay
        _, decay = chunk_decays(g[..., c])
        scores = decay * (q[..., c, None] * np.swapaxes(k[..., c, None], -1, -2))
        outs.append(scores @ v)
    return sum(outs)
# --8<-- [end:ex4-wrong-package-decays]


# --8<-- [start:ex5-starter]
def decayed_state(k, v, g, S0):
    """The state after n tokens of S_t = exp(g_t) S_{t-1} + k_t^T v_t,
    starting at S_0 = S0, with no loop over the tokens. k (..., n, d_k),
    v (..., n, d_v), g (..., n) the log decays (<= 0), S0 (..., d_k, d_v).
    Returns (..., d_k, d_v)."""
    # Your code: this sums the pairs, with no decay and no S0.
    return np.swapaxes(k, -1, -2) @ v
# --8<-- [end:ex5-starter]


# --8<-- [start:ex5-solution]
def decayed_state(k, v, g, S0):
    """The state after n tokens of S_t = exp(g_t) S_{t-1} + k_t^T v_t,
    starting at S_0 = S0, with no loop over the tokens. k (..., n, d_k),
    v (..., n, d_v), g (..., n) the log decays (<= 0), S0 (..., d_k, d_v).
    Returns (..., d_k, d_v)."""
    G = np.cumsum(g, axis=-1)              # (..., n): g_1 + ... + g_t
    total = G[..., -1:]                    # (..., 1): every decay
    fade = np.exp(total - G)               # g_{t+1} + ... + g_n <= 0
    pairs = np.swapaxes(fade[..., None] * k, -1, -2) @ v
    return np.exp(total)[..., None] * S0 + pairs
# --8<-- [end:ex5-solution]


# --8<-- [start:ex5-wrong-ratio-of-exps]
# rejected with: overflowed
def decayed_state(k, v, g, S0):
    G = np.cumsum(g, axis=-1)
    fade = np.exp(G[..., -1:]) / np.exp(G)  # 0 / 0 once the sums pass -745
    pairs = np.swapaxes(fade[..., None] * k, -1, -2) @ v
    return np.exp(G[..., -1:])[..., None] * S0 + pairs
# --8<-- [end:ex5-wrong-ratio-of-exps]


# --8<-- [start:ex5-wrong-own-decay]
# rejected with: by its own decay too
def decayed_state(k, v, g, S0):
    G = np.cumsum(g, axis=-1)
    total = G[..., -1:]
    fade = np.exp(total - G + g)  # from token t itself on
    pairs = np.swapaxes(fade[..., None] * k, -1, -2) @ v
    return np.exp(total)[..., None] * S0 + pairs
# --8<-- [end:ex5-wrong-own-decay]


# --8<-- [start:ex5-wrong-s0-kept]
# rejected with: S0 fades too
def decayed_state(k, v, g, S0):
    G = np.cumsum(g, axis=-1)
    fade = np.exp(G[..., -1:] - G)
    pairs = np.swapaxes(fade[..., None] * k, -1, -2) @ v
    return S0 + pairs
# --8<-- [end:ex5-wrong-s0-kept]


# --8<-- [start:ex5-wrong-forward-sums]
# rejected with: Not yet
def decayed_state(k, v, g, S0):
    G = np.cumsum(g, axis=-1)
    fade = np.exp(G)  # the decays before token t, not after it
    pairs = np.swapaxes(fade[..., None] * k, -1, -2) @ v
    return np.exp(G[..., -1:])[..., None] * S0 + pairs
# --8<-- [end:ex5-wrong-forward-sums]


# --8<-- [start:ex6-starter]
def normalised_decode(q, k, v, S, z):
    """One decode step of causal linear attention with its normaliser.

    q, k (..., d_k): the new token's features (>= 0); v (..., d_v); the
    cache holds S = the sum of k_jᵀ v_j (..., d_k, d_v) and z = the sum of
    k_j (..., d_k) over the tokens before. Returns (out (..., d_v), S, z)
    after the new token: out = q S / (q · z), its own pair included.
    """
    # Your code: this reads the cache without the new token or the normaliser.
    return (q[..., None, :] @ S)[..., 0, :], S, z
# --8<-- [end:ex6-starter]


# --8<-- [start:ex6-solution]
def normalised_decode(q, k, v, S, z):
    """One decode step of causal linear attention with its normaliser.

    q, k (..., d_k): the new token's features (>= 0); v (..., d_v); the
    cache holds S = the sum of k_jᵀ v_j (..., d_k, d_v) and z = the sum of
    k_j (..., d_k) over the tokens before. Returns (out (..., d_v), S, z)
    after the new token: out = q S / (q · z), its own pair included.
    """
    S = S + k[..., :, None] * v[..., None, :]  # write first: t sees itself
    z = z + k
    numerator = (q[..., None, :] @ S)[..., 0, :]  # (..., d_v)
    denominator = np.sum(q * z, axis=-1, keepdims=True)  # (..., 1)
    return numerator / denominator, S, z
# --8<-- [end:ex6-solution]

# --8<-- [start:ex6-wrong-read-first]
# rejected with: its own pair
def normalised_decode(q, k, v, S, z):
    numerator = (q[..., None, :] @ S)[..., 0, :]  # before the write
    denominator = np.sum(q * z, axis=-1, keepdims=True)
    S = S + k[..., :, None] * v[..., None, :]
    return numerator / denominator, S, z + k
# --8<-- [end:ex6-wrong-read-first]

# --8<-- [start:ex6-wrong-no-normaliser]
# rejected with: q · z
def normalised_decode(q, k, v, S, z):
    S = S + k[..., :, None] * v[..., None, :]  # write first: t sees itself
    z = z + k
    numerator = (q[..., None, :] @ S)[..., 0, :]  # (..., d_v)
    denominator = np.sum(q * z, axis=-1, keepdims=True)  # (..., 1)
    return numerator, S, z
# --8<-- [end:ex6-wrong-no-normaliser]

# --8<-- [start:ex6-wrong-z-not-kept]
# rejected with: Not yet
def normalised_decode(q, k, v, S, z):
    S = S + k[..., :, None] * v[..., None, :]  # write first: t sees itself
    z = z + k
    numerator = (q[..., None, :] @ S)[..., 0, :]  # (..., d_v)
    denominator = np.sum(q * z, axis=-1, keepdims=True)  # (..., 1)
    return numerator / denominator, S, z - k  # the old z
# --8<-- [end:ex6-wrong-z-not-kept]

# --8<-- [start:ex6-wrong-normalised-by-values]
# rejected with: out: entry
def normalised_decode(q, k, v, S, z):
    S = S + k[..., :, None] * v[..., None, :]
    numerator = (q[..., None, :] @ S)[..., 0, :]
    return numerator / np.sum(numerator, axis=-1, keepdims=True), S, z + k
# --8<-- [end:ex6-wrong-normalised-by-values]
