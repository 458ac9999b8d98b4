"""Self-attention: queries, keys and values are three projections of the same tokens.

Reference: Vaswani et al., "Attention Is All You Need" (2017), section 3.2.1.
Weights are applied on the right, ``X @ W``, with W of shape (d_model, d_k).
"""

# --8<-- [start:imports]
import numpy as np

from attention.scaled_dot_product import attention
# --8<-- [end:imports]


# --8<-- [start:self_attention]
def self_attention(X, W_q, W_k, W_v, causal=False):
    """Single-head self-attention of the tokens X.

    X: (..., n, d_model); W_q, W_k: (d_model, d_k); W_v: (d_model, d_v).
    Returns (output (..., n, d_v), weights (..., n, n)).
    """
    X = np.asarray(X)
    for name, W in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v)):
        W = np.asarray(W)
        if W.ndim != 2 or W.shape[0] != X.shape[-1]:
            raise ValueError(
                f"self_attention: {name} must have shape (d_model, d) with d_model = "
                f"X.shape[-1] = {X.shape[-1]}, got X {X.shape} and {name} {W.shape}"
            )
    Q = X @ W_q  # (..., n, d_k): what each token looks for
    K = X @ W_k  # (..., n, d_k): what each token offers for matching
    V = X @ W_v  # (..., n, d_v): what each token hands over
    return attention(Q, K, V, causal=causal, return_weights=True)
# --8<-- [end:self_attention]
