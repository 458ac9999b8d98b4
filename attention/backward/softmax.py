"""The softmax's derivative: its Jacobian, and the product with it that
backpropagation needs.

For one row p = softmax(s), ∂p_i/∂s_j = p_i (δ_ij - p_j): the Jacobian is
J = diag(p) - p pᵀ, an n x n matrix for a row of n scores. Backpropagation
never needs J itself, only gᵀJ for the incoming gradient g = ∂L/∂p (a
vector-Jacobian product):

    (gᵀJ)_j = Σ_i g_i p_i (δ_ij - p_j) = p_j g_j - p_j Σ_i g_i p_i
            = p_j (g_j - g·p),

which costs O(n) per row instead of O(n²). Attention's backward applies it to
every row of the weight matrix at once.
"""

# --8<-- [start:softmax_backward]
import numpy as np


def softmax_jacobian(p):
    """The Jacobian diag(p) - p pᵀ of p = softmax(s), for teaching.

    p: (..., n), softmax outputs along the last axis. Returns (..., n, n),
    entry [i, j] = ∂p_i/∂s_j. Backpropagation uses ``softmax_backward``.
    """
    p = np.asarray(p)
    eye = np.eye(p.shape[-1], dtype=p.dtype)  # (n, n)
    diag = p[..., :, None] * eye  # (..., n, n)
    return diag - p[..., :, None] * p[..., None, :]  # (..., n, n)


def softmax_backward(d_p, p, axis=-1):
    """∂L/∂s from ∂L/∂p for p = softmax(s, axis): p ⊙ (d_p - d_p·p).

    d_p and p have the same shape. Nothing n x n is formed: one dot
    product per row.
    """
    d_p, p = np.asarray(d_p), np.asarray(p)
    if d_p.shape != p.shape:
        raise ValueError(f"softmax_backward: d_p {d_p.shape} and p "
                         f"{p.shape} must have the same shape")
    row_dot = np.sum(d_p * p, axis=axis, keepdims=True)  # g·p, every row
    return p * (d_p - row_dot)
# --8<-- [end:softmax_backward]
