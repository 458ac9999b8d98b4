"""Dropout: during training, zero each entry with probability p and scale
the survivors by 1/(1 - p), so the expected value is unchanged and nothing
needs rescaling at evaluation time.

Reference: Srivastava et al., "Dropout: A Simple Way to Prevent Neural
Networks from Overfitting" (2014); the places are GPT-2's (Hugging Face
``GPT2Model``): the embeddings' sum, the attention weights, and each residual
branch (the attention's and the MLP's output) before it is added back.

The masks are drawn here, up front, and handed to ``attention.model.forward``
and ``attention.backward.model.model_backward`` by name: the backward pass
multiplies by the same masks, and a test can give PyTorch the very same ones.
"""

# --8<-- [start:dropout]
import numpy as np


def _check_p(fn, p):
    """Refuse a p that is not a number in [0, 1) (NaN included)."""
    real = (int, float, np.integer, np.floating)
    if isinstance(p, bool) or not isinstance(p, real) or not 0 <= p < 1:
        raise ValueError(f"{fn}: p must lie in [0, 1), got {p!r}")


def dropout_mask(rng, shape, p, dtype=np.float64):
    """0 with probability p, else 1/(1 - p): as torch's dropout scales."""
    _check_p("dropout_mask", p)
    keep = rng.random(shape) >= p  # (shape) booleans
    # torch divides in float32 for float16 (its "opmath"), then rounds once
    wide = np.promote_types(dtype, np.float32).type
    scale = dtype(wide(1) / wide(1 - p))
    return np.where(keep, scale, dtype(0))  # one pass


def mask_shapes(config, batch, n):
    """Name -> shape of every mask of a (batch, n) input, in the order
    the forward uses them (and ``dropout_masks`` draws them)."""
    d, h = config.d_model, config.n_heads
    shapes = {"embed": (batch, n, d)}
    for i in range(config.n_layers):
        shapes |= {f"blocks.{i}.attn.weights": (batch, h, n, n),  # per head
                   f"blocks.{i}.attn.out": (batch, n, d),
                   f"blocks.{i}.mlp.out": (batch, n, d)}
    return shapes


def dropout_masks(rng, config, batch, n, p, dtype=np.float64):
    """Every mask of one forward pass of a (batch, n) input, by name; None
    when p is 0. Drawn in the order the forward uses them."""
    _check_p("dropout_masks", p)
    if p == 0:
        return None
    return {name: dropout_mask(rng, shape, p, dtype)
            for name, shape in mask_shapes(config, batch, n).items()}
# --8<-- [end:dropout]
