"""What chapter 13's encoder tests share: order-one random weights, Hugging Face's
float32 internals computed in float64, and a state dict as NumPy arrays.

Imported by the test files only (it imports torch)."""

import numpy as np
import torch

# Hugging Face's float32 internals (the eager softmax's dtype, RoPE's frequencies and
# angles, ModernBERT's q.float()) in float64, the same formulas: chapter 8's.
from tests.package.test_long_context_models import float64_hf  # noqa: F401

TOL = 1e-10  # relative to the largest output, float64


def randomise(model, seed):
    """Order-one weights, so that a wrong piece shows in the outputs."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=p.dtype)
            if p.ndim == 1 and "norm" in name.lower() and "weight" in name:
                p.copy_(1.0 + 0.2 * noise)
            elif p.ndim == 1:  # biases
                p.copy_(0.5 * noise)
            elif p.ndim == 2:
                p.copy_(noise / p.shape[-1] ** 0.5)
            else:  # a convolution's kernel, a class token, a position table
                p.copy_(noise / np.prod(p.shape[1:]) ** 0.5)
    return model


def numpy_state(model):
    return {k: v.detach().numpy() for k, v in model.state_dict().items()}


def rel_err(ours, theirs):
    theirs = np.asarray(theirs)
    return np.abs(ours - theirs).max() / np.abs(theirs).max()
