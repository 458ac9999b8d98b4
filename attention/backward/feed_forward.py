"""Backward passes of the feed-forward pieces: a linear layer and GELU (both
forms).

Linear, y = x W + b with W (d_in, d_out) applied on the right:

    dx = dy Wᵀ,   dW = xᵀ dy,   db = Σ dy   (sums over every token).

GELU (Hendrycks and Gimpel 2016), exact: y = x Φ(x), with Φ the standard
normal CDF and φ its density, so dy/dx = Φ(x) + x φ(x). GPT-2's tanh form,
y = ½ x (1 + tanh u) with u = √(2/π) (x + 0.044715 x³), has

    dy/dx = ½ (1 + tanh u) + ½ x (1 - tanh² u) √(2/π) (1 + 3·0.044715 x²).
"""

# --8<-- [start:feed_forward_backward]
import math

import numpy as np

_erf = np.frompyfunc(math.erf, 1, 1)  # NumPy has no erf of its own


def linear_backward(d_y, x, W):
    """(dx, dW, db) of y = x @ W + b: x (..., d_in), W (d_in, d_out)."""
    dx = d_y @ W.T  # (..., d_in)
    x_rows = x.reshape(-1, x.shape[-1])  # (tokens, d_in)
    dy_rows = d_y.reshape(-1, d_y.shape[-1])  # (tokens, d_out)
    return dx, x_rows.T @ dy_rows, dy_rows.sum(axis=0)


def gelu_backward(d_y, x, *, approximate="none"):
    """dx of y = gelu(x, approximate=...): "none" (erf) or "tanh"."""
    if approximate == "none":
        cdf = 0.5 * (1.0 + _erf(x / math.sqrt(2.0)).astype(x.dtype))  # Φ(x)
        pdf = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)  # φ(x)
        return d_y * (cdf + x * pdf)
    if approximate == "tanh":
        # In place, as the forward: few fresh arrays of the activations' size
        c = math.sqrt(2.0 / math.pi)
        x2 = x * x
        t = x2 * (0.044715 * c)
        t += c
        t *= x
        np.tanh(t, out=t)                        # tanh u
        du_dx = x2                               # (x² is not needed again)
        du_dx *= 3 * 0.044715 * c
        du_dx += c                               # c (1 + 3·0.044715 x²)
        rest = t * t
        np.subtract(1.0, rest, out=rest)
        rest *= x
        rest *= du_dx
        rest *= 0.5                              # ½ x (1 - tanh² u) du/dx
        t += 1.0
        t *= 0.5
        t += rest                                # dy/dx
        t *= d_y
        return t
    raise ValueError(f'gelu_backward: approximate must be "none" or "tanh", '
                     f'got {approximate!r}')
# --8<-- [end:feed_forward_backward]
