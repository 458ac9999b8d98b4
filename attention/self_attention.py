"""Self-attention: queries, keys and values are three projections of the same tokens.

Reference: Vaswani et al., "Attention Is All You Need" (2017), section 3.2.1.
Weights are applied on the right, ``x @ W``, with W of shape (d_model, d_out).
"""

# --8<-- [start:imports]
import numpy as np

from attention.scaled_dot_product import attention
# --8<-- [end:imports]


# --8<-- [start:self_attention]
def self_attention(x, W_q, W_k, W_v, *, mask=None, causal=False, scale=None,
                   return_weights=False):
    """Single-head self-attention of the tokens x.

    x: (..., n, d_model); W_q, W_k: (d_model, d_k); W_v: (d_model, d_v).
    mask, causal, scale, return_weights: as in ``attention``.
    Returns the output (..., n, d_v), or (output, weights (..., n, n)).
    """
    x = np.asarray(x)
    for name, W in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v)):
        W = np.asarray(W)
        if W.ndim != 2 or W.shape[0] != x.shape[-1]:
            raise ValueError(
                f"self_attention: {name} must have shape (d_model, d) with "
                f"d_model = x.shape[-1] = {x.shape[-1]}, got x {x.shape} "
                f"and {name} {W.shape}"
            )
    q = x @ W_q  # (..., n, d_k): what each token looks for
    k = x @ W_k  # (..., n, d_k): what each token offers for matching
    v = x @ W_v  # (..., n, d_v): what each token hands over
    return attention(q, k, v, mask=mask, causal=causal, scale=scale,
                     return_weights=return_weights)
# --8<-- [end:self_attention]
