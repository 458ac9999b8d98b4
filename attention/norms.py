"""Normalisation layers: LayerNorm and RMSNorm, over the last axis (d_model).

References: Ba, Kiros and Hinton, "Layer Normalization" (2016); Zhang and Sennrich,
"Root Mean Square Layer Normalization" (2019). Both match PyTorch's ``nn.LayerNorm``
and ``nn.RMSNorm`` when given the same eps. (``nn.RMSNorm``'s default eps is the dtype's
machine epsilon, not the 1e-5 or 1e-6 of real models: always pass it.)
"""

# --8<-- [start:imports]
import numpy as np
# --8<-- [end:imports]


# --8<-- [start:checks]
def _check_weight(fn, x, weight, bias=None):
    d = np.shape(x)[-1] if np.ndim(x) else None
    for name, w in (("weight", weight), ("bias", bias)):
        if w is not None and np.shape(w) != (d,):
            raise ValueError(
                f"{fn}: {name} must have shape ({d},) to match x's last axis, "
                f"got x {np.shape(x)} and {name} {np.shape(w)}")
# --8<-- [end:checks]


# --8<-- [start:layer_norm]
def layer_norm(x, weight, bias=None, *, eps=1e-5):
    """LayerNorm: centre and scale each token's features, then w * . + b.

    x: (..., d_model); weight, bias: (d_model,). The variance is the biased
    one (divide by d_model) and eps sits inside the square root, as in
    PyTorch.
    """
    _check_weight("layer_norm", x, weight, bias)
    mean = x.mean(axis=-1, keepdims=True)                   # (..., 1)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)    # (..., 1)
    y = (x - mean) / np.sqrt(var + eps) * weight            # (..., d_model)
    return y if bias is None else y + bias
# --8<-- [end:layer_norm]


# --8<-- [start:rms_norm]
def rms_norm(x, weight, *, eps=1e-6):
    """RMSNorm: divide each token by its root mean square, then w * .

    No centring and no bias: one reduction instead of two.
    x: (..., d_model); weight: (d_model,).
    """
    _check_weight("rms_norm", x, weight)
    ms = (x * x).mean(axis=-1, keepdims=True)               # (..., 1)
    return x / np.sqrt(ms + eps) * weight                   # (..., d_model)
# --8<-- [end:rms_norm]
