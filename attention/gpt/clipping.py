"""Gradient clipping by global norm: one scale for every gradient, so a rare
huge gradient cannot throw the weights far, and its direction is kept.

Reference: Pascanu, Mikolov and Bengio, "On the difficulty of training
recurrent neural networks" (2013), section 3.2. The norm is over all the
parameters' gradients at once, as ``torch.nn.utils.clip_grad_norm_``
computes it; the scale is max_norm / (norm + 1e-6), capped at 1, PyTorch's
arithmetic. Like PyTorch, float16 gradients are squared and summed in
float32: in float16, 300² overflows to inf and (1e-4)² underflows to 0.
"""

# --8<-- [start:clipping]
import math
import numbers

import numpy as np


def _check(grads, max_norm):
    """Refuse, by name, what cannot be clipped in place."""
    if isinstance(max_norm, bool) or not isinstance(max_norm, numbers.Real):
        raise TypeError(f"clip_by_global_norm: max_norm must be a real "
                        f"number, got {max_norm!r}")
    if not max_norm >= 0:  # NaN fails the comparison too
        raise ValueError(f"clip_by_global_norm: max_norm must be >= 0 (a "
                         f"negative one flips the step), got {max_norm!r}")
    for name, g in grads.items():
        if not (isinstance(g, np.ndarray) and g.dtype.kind == "f"):
            kind = getattr(g, "dtype", type(g).__name__)
            raise TypeError(f"clip_by_global_norm: gradient {name!r} must be "
                            f"a floating-point array (it is scaled in "
                            f"place), got {kind}")


def global_norm(grads):
    """√(Σ over every gradient entry of its square), summed in float32
    or wider: in float16, 300² is inf and (1e-4)² rounds to 0."""
    wide = (g.astype(np.promote_types(g.dtype, np.float32), copy=False)
            for g in grads.values())
    return math.sqrt(sum(float(np.sum(w * w)) for w in wide))


def clip_by_global_norm(grads, max_norm):
    """Scale every gradient in place so the global norm is at most
    max_norm; returns the norm before clipping."""
    _check(grads, max_norm)
    norm = global_norm(grads)
    scale = min(max_norm / (norm + 1e-6), 1.0)
    for g in grads.values():
        g *= scale
    return norm
# --8<-- [end:clipping]
