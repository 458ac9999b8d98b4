"""Softmax: turning a row of scores into weights that are positive and sum to one.

Every attention variant in this package normalises its scores with this function.
"""

# --8<-- [start:softmax]
import numpy as np


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax of ``x`` along ``axis``.

    ``exp`` overflows above about 709 (float64) or 88 (float32).
    Softmax is unchanged when one constant is subtracted from every
    entry, so we subtract the largest entry first: the biggest
    exponent is then exp(0) = 1 and nothing overflows.
    The result keeps the dtype of ``x`` (float32 stays float32).
    """
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)  # integers, booleans: use float64
    shifted = x - np.max(x, axis=axis, keepdims=True)
    exps = np.exp(shifted)
    return exps / np.sum(exps, axis=axis, keepdims=True)
# --8<-- [end:softmax]
