"""Backward passes of LayerNorm and RMSNorm, from the input and one or two
numbers per token.

LayerNorm (Ba, Kiros and Hinton 2016), for a token x of d features:

    mean = Σx/d,  rstd = 1/√(Σ(x - mean)²/d + eps),
    x̂ = (x - mean) · rstd,  y = x̂ ⊙ w + b.

The forward needs to keep only ``mean`` and ``rstd``, two numbers a token:
x is kept anyway (it is the residual stream) and x̂ is rebuilt from the three.
With g = dy ⊙ w,

    dx = rstd · (g - mean(g) - x̂ · mean(g ⊙ x̂)),  dw = Σ dy ⊙ x̂,  db = Σ dy,

the sums running over every token (batch and positions). The two subtracted
means are the derivatives through ``mean`` and through ``rstd``: adding the
same amount to every feature of x, or scaling them all, leaves x̂ unchanged,
so dx has no component along either direction.

RMSNorm (Zhang and Sennrich 2019) has no mean and no bias:

    rrms = 1/√(Σx²/d + eps),  x̂ = x · rrms,  y = x̂ ⊙ w,
    dx = rrms · (g - x̂ · mean(g ⊙ x̂)),  dw = Σ dy ⊙ x̂.
"""

# --8<-- [start:norms_backward]
import numpy as np


def _sum_tokens(a):
    """Sum over every axis but the last: a gain collects every token's."""
    return a.reshape(-1, a.shape[-1]).sum(axis=0)  # (d,)


def layer_norm_stats(x, *, eps=1e-5):
    """What LayerNorm's backward needs: mean and rstd, (..., 1) each."""
    mean = x.mean(axis=-1, keepdims=True)  # (..., 1)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)  # biased, (..., 1)
    return mean, 1.0 / np.sqrt(var + eps)


def layer_norm_backward(d_y, x, weight, mean, rstd):
    """(dx, d_weight, d_bias) of y = layer_norm(x, weight, bias)."""
    x_hat = (x - mean) * rstd  # (..., d), rebuilt, not kept
    g = d_y * weight  # (..., d), the gradient reaching x̂
    dx = rstd * (g - g.mean(axis=-1, keepdims=True)
                 - x_hat * (g * x_hat).mean(axis=-1, keepdims=True))
    return dx, _sum_tokens(d_y * x_hat), _sum_tokens(d_y)


def rms_norm_stats(x, *, eps=1e-6):
    """What RMSNorm's backward needs: rrms = 1/√(mean(x²) + eps), (..., 1)."""
    return 1.0 / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)


def rms_norm_backward(d_y, x, weight, rrms):
    """(dx, d_weight) of y = rms_norm(x, weight)."""
    x_hat = x * rrms  # (..., d)
    g = d_y * weight  # (..., d)
    dx = rrms * (g - x_hat * (g * x_hat).mean(axis=-1, keepdims=True))
    return dx, _sum_tokens(d_y * x_hat)
# --8<-- [end:norms_backward]
