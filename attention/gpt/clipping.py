"""Gradient clipping by global norm: one scale for every gradient, so a rare
huge gradient cannot throw the weights far, and its direction is kept.

Reference: Pascanu, Mikolov and Bengio, "On the difficulty of training
recurrent neural networks" (2013), section 3.2. The norm is over all the
parameters' gradients at once, as ``torch.nn.utils.clip_grad_norm_``
computes it; the scale is max_norm / (norm + 1e-6), capped at 1, PyTorch's
arithmetic.
"""

# --8<-- [start:clipping]
import math

import numpy as np


def global_norm(grads):
    """√(Σ over every gradient entry of its square)."""
    return math.sqrt(sum(float(np.sum(g * g)) for g in grads.values()))


def clip_by_global_norm(grads, max_norm):
    """Scale every gradient in place so the global norm is at most
    max_norm; returns the norm before clipping."""
    norm = global_norm(grads)
    scale = min(max_norm / (norm + 1e-6), 1.0)
    for g in grads.values():
        g *= scale
    return norm
# --8<-- [end:clipping]
