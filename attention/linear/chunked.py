"""The gated delta rule in chunks: the UT transform (the WY representation).

Inside a chunk of C tokens, with S_0 the state before it, a_i = exp(g_i) and the log decay
gamma_i = g_1 + ... + g_i from the chunk's start, the recurrence
S_i = a_i S_{i-1} + k_i^T u_i writes the values u_i = beta_i (v_i - a_i k_i S_{i-1}).
Unrolled, a_i S_{i-1} = e^{gamma_i} S_0 + sum_{j<i} e^{gamma_i - gamma_j} k_j^T u_j, so

    u_i + sum_{j<i} beta_i e^{gamma_i - gamma_j} (k_i . k_j) u_j
        = beta_i v_i - beta_i e^{gamma_i} k_i S_0,

a unit lower-triangular system (I + A) U = B: solved once per chunk for the two
right-hand sides, U = (I + A)^{-1} beta V and W = (I + A)^{-1} beta e^gamma K, it gives
the written values for any S_0 as U - W S_0. This is the UT transform (Joffrain et al.,
"Accumulating Householder Transformations, Revisited", ACM TOMS 2006), as Yang et al.
bring it to the delta rule ("Parallelizing Linear Transformers with the Delta Rule over
Sequence Length", NeurIPS 2024, section 3; Yang, Kautz and Hatamizadeh, "Gated Delta
Networks", ICLR 2025, section 3.3, with the decays). Then

    out_i = e^{gamma_i} q_i S_0 + sum_{j<=i} e^{gamma_i - gamma_j} (q_i . k_j) u_j,
    S_C   = e^{gamma_C} S_0 + sum_j e^{gamma_C - gamma_j} k_j^T u_j.

The state's transition through the chunk, the product of the C factors
a_i (I - beta_i k_i^T k_i), is e^{gamma_C} I - K~^T W with K~_j = e^{gamma_C - gamma_j} k_j:
the WY form of a product of Householder-like matrices (Bischof and Van Loan, 1987; not
the compact WY form of Schreiber and Van Loan, 1989, which stores a C x C triangle), which
the page checks against the product itself. Everything but the loop over chunks is a
matrix product of C rows, done for every chunk at once.
"""

# --8<-- [start:imports]
import numpy as np
# --8<-- [end:imports]


# --8<-- [start:decays]
def chunk_decays(g):
    """gamma (..., C), the log decay from the chunk's start to each token,
    and D (..., C, C): D[i, j] = exp(gamma_i - gamma_j) for j <= i, else 0."""
    gamma = np.cumsum(g, axis=-1)                      # (..., C)
    diff = gamma[..., :, None] - gamma[..., None, :]   # (..., C, C)
    C = g.shape[-1]
    below = np.tril(np.ones((C, C), dtype=bool))       # j <= i
    # exp only where j <= i: above the diagonal diff > 0 could overflow
    return gamma, np.exp(np.where(below, diff, -np.inf))
# --8<-- [end:decays]


# --8<-- [start:ut_transform]
def solve_unit_lower(A, B):
    """X with (I + A) X = B for A strictly lower triangular (..., C, C):
    forward substitution, row i needs only the rows before it."""
    X = np.array(B)                                    # (..., C, d), a copy
    for i in range(1, A.shape[-1]):
        X[..., i, :] -= (A[..., i, None, :i] @ X[..., :i, :])[..., 0, :]
    return X


def ut_transform(k, v, g, beta):
    """U and W of a chunk: the values it writes are U - W S_0 for any state
    S_0 before it. k: (..., C, d_k); v: (..., C, d_v); g, beta: (..., C).
    Returns U (..., C, d_v), W (..., C, d_k), gamma and D of chunk_decays."""
    gamma, D = chunk_decays(g)
    kk = k @ np.swapaxes(k, -1, -2)                    # (..., C, C): k_i . k_j
    A = np.tril(beta[..., :, None] * D * kk, -1)       # strictly below: j < i
    rhs = np.concatenate([beta[..., None] * v,         # beta V
                          (beta * np.exp(gamma))[..., None] * k],  # beta e^g K
                         axis=-1)                      # (..., C, d_v + d_k)
    X = solve_unit_lower(A, rhs)
    d_v = v.shape[-1]
    return X[..., :d_v], X[..., d_v:], gamma, D
# --8<-- [end:ut_transform]


# --8<-- [start:chunked]
def chunked_gated_delta_rule(q, k, v, g, beta, S, chunk_size):
    """The gated delta rule over n tokens in chunks of chunk_size tokens.

    q (already scaled), k: (..., n, d_k); v: (..., n, d_v); g, beta:
    (..., n); S: the state before (..., d_k, d_v). The last chunk is padded
    with tokens that change nothing (g = 0: no decay; beta = 0, k = 0: no
    write). Returns (out (..., n, d_v), final state), as the recurrence.
    """
    *lead, n, d_k = k.shape
    C, d_v = chunk_size, v.shape[-1]
    pad = -n % C
    width = [(0, 0)] * len(lead) + [(0, pad)]
    q, k, v = (np.pad(a, width + [(0, 0)]) for a in (q, k, v))
    g, beta = np.pad(g, width), np.pad(beta, width)
    chunks = (n + pad) // C
    q, k, v = (a.reshape(*lead, chunks, C, a.shape[-1])
               for a in (q, k, v))                     # (..., chunks, C, d)
    g, beta = (a.reshape(*lead, chunks, C) for a in (g, beta))
    U, W, gamma, D = ut_transform(k, v, g, beta)       # every chunk at once
    qk = np.tril(q @ np.swapaxes(k, -1, -2)) * D       # (..., chunks, C, C)
    q_from_start = q * np.exp(gamma)[..., None]        # e^{gamma_i} q_i
    k_to_end = k * np.exp(gamma[..., -1:] - gamma)[..., None]
    through = np.exp(gamma[..., -1])[..., None, None]  # (..., chunks, 1, 1)
    out = np.empty(v.shape, dtype=v.dtype)             # (..., chunks, C, d_v)
    for c in range(chunks):
        u = U[..., c, :, :] - W[..., c, :, :] @ S      # (..., C, d_v) written
        out[..., c, :, :] = (q_from_start[..., c, :, :] @ S
                             + qk[..., c, :, :] @ u)
        S = (through[..., c, :, :] * S
             + np.swapaxes(k_to_end[..., c, :, :], -1, -2) @ u)
    return out.reshape(*lead, chunks * C, d_v)[..., :n, :], S
# --8<-- [end:chunked]
