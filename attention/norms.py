"""Normalisation layers: LayerNorm and RMSNorm, over the last axis (d_model).

References: Ba, Kiros and Hinton, "Layer Normalization" (2016); Zhang and Sennrich,
"Root Mean Square Layer Normalization" (2019). Both match PyTorch's ``nn.LayerNorm``
and ``nn.RMSNorm`` when given the same eps; float16 is computed in float32 and rounded
back, as PyTorch's CPU kernels do. (``nn.RMSNorm``'s default eps is the dtype's
machine epsilon, not the 1e-5 or 1e-6 of real models: always pass it.)
"""

# --8<-- [start:imports]
import numpy as np
# --8<-- [end:imports]


# --8<-- [start:checks]
def _check(fn, x, weight, bias=None, *, eps):
    """x as an array to compute in, and the dtype to return.

    float16 is computed in float32: its squares of values above 256
    overflow. Errors name the shapes or the value at fault.
    """
    x = np.asarray(x)
    d = x.shape[-1] if x.ndim else None
    for name, a in (("x", x), ("weight", weight), ("bias", bias)):
        if a is not None and np.asarray(a).dtype.kind not in "biuf":
            raise TypeError(f"{fn}: {name} must hold real numbers, "
                            f"got dtype {np.asarray(a).dtype}")
    for name, w in (("weight", weight), ("bias", bias)):
        if w is not None and np.shape(w) != (d,):
            raise ValueError(
                f"{fn}: {name} must have shape ({d},) to match x's last axis, "
                f"got x {np.shape(x)} and {name} {np.shape(w)}")
    if (isinstance(eps, bool) or not isinstance(eps, (int, float, np.number))
            or not 0 <= eps < np.inf):
        raise ValueError(f"{fn}: eps must be a finite number >= 0, "
                         f"got {eps!r}")
    parts = [a for a in (x, weight, bias) if a is not None]
    out = np.result_type(*parts)
    out = out if out.kind == "f" else np.dtype(np.float64)
    return x.astype(np.promote_types(out, np.float32), copy=False), out
# --8<-- [end:checks]


# --8<-- [start:layer_norm]
def layer_norm(x, weight, bias=None, *, eps=1e-5):
    """LayerNorm: centre and scale each token's features, then w * . + b.

    x: (..., d_model); weight, bias: (d_model,). The variance is the biased
    one (divide by d_model) and eps sits inside the square root, as in
    PyTorch.
    """
    x, dtype = _check("layer_norm", x, weight, bias, eps=eps)
    mean = x.mean(axis=-1, keepdims=True)                   # (..., 1)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)    # (..., 1)
    y = (x - mean) / np.sqrt(var + eps) * weight            # (..., d_model)
    y = y if bias is None else y + bias
    return y.astype(dtype, copy=False)  # float16 in, float16 out
# --8<-- [end:layer_norm]


# --8<-- [start:rms_norm]
def rms_norm(x, weight, *, eps=1e-6):
    """RMSNorm: divide each token by its root mean square, then w * .

    No centring and no bias: one reduction instead of two.
    x: (..., d_model); weight: (d_model,).
    """
    x, dtype = _check("rms_norm", x, weight, eps=eps)
    ms = (x * x).mean(axis=-1, keepdims=True)               # (..., 1)
    y = x / np.sqrt(ms + eps) * weight                      # (..., d_model)
    return y.astype(dtype, copy=False)  # float16 in, float16 out
# --8<-- [end:rms_norm]
