"""Softmax, log-softmax and log-sum-exp: scores into weights, stably, along any axis.

Every attention variant in this package normalises its scores with ``softmax``.
``log_softmax`` and ``logsumexp`` are its log-space siblings (the loss of a language
model is a log-softmax; chapter 5's online softmax keeps a running log-sum-exp).

All three subtract the largest entry before ``exp``, which changes nothing
mathematically and keeps ``exp`` from overflowing. References: Goodfellow, Bengio and
Courville, "Deep Learning" (2016), section 4.1; Blanchard, Higham and Higham, "Accurately
computing the log-sum-exp and softmax functions" (2021).
"""

# --8<-- [start:softmax]
import numpy as np


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax of ``x`` along ``axis``.

    ``exp`` overflows above about 709 (float64) or 88 (float32).
    Softmax is unchanged when one constant is subtracted from every
    entry, so we subtract the largest entry first: the biggest
    exponent is then exp(0) = 1 and nothing overflows.
    The result keeps the dtype of ``x`` (float32 stays float32); float16
    is summed in float32, where 70,000 ones do not overflow.
    """
    x = np.asarray(x)
    if x.dtype.kind not in "biuf":  # complex, strings, objects: refused
        raise TypeError(f"softmax: x must hold real numbers, got {x.dtype}")
    out = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
    x = x.astype(np.promote_types(out, np.float32), copy=False)  # float16
    # initial=-inf: an empty axis has no largest entry to subtract
    shifted = x - np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    exps = np.exp(shifted)
    total = np.sum(exps, axis=axis, keepdims=True)
    return (exps / total).astype(out, copy=False)
# --8<-- [end:softmax]


# --8<-- [start:checks]
def _real_floats(x, axis, name: str) -> np.ndarray:
    """``x`` as a floating array (integers and booleans become float64).

    Raises TypeError for complex, string or object input and ValueError
    for an axis that ``x`` does not have, naming the shape at fault.
    """
    x = np.asarray(x)
    if x.dtype == np.bool_ or np.issubdtype(x.dtype, np.integer):
        x = x.astype(np.float64)
    elif not np.issubdtype(x.dtype, np.floating):
        raise TypeError(
            f"{name}: x must hold real numbers, got dtype {x.dtype}"
        )
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{name}: axis must be an int, got {axis!r}")
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(
            f"{name}: axis {axis} is out of range for x of shape {x.shape}"
        )
    return x


def _shift(x: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Return (x - m, m) with m the largest entry along ``axis`` (kept).

    Where that maximum is not finite (a row of -inf, an inf entry, an
    empty axis) m is 0: subtracting -inf from -inf would give nan.
    float16 is widened to float32 first, so sums of many terms
    do not overflow float16's largest value, 65504.
    """
    x = x.astype(np.promote_types(x.dtype, np.float32), copy=False)
    m = np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    m = np.where(np.isfinite(m), m, 0.0)
    return x - m, m
# --8<-- [end:checks]


# --8<-- [start:logsumexp]
def logsumexp(x, axis: int = -1, *, keepdims: bool = False):
    """log(sum(exp(x))) along ``axis``, without overflow.

    For any m, log Σ exp(x_i) = m + log Σ exp(x_i - m). With m the
    largest entry every exp(x_i - m) is at most 1 and one of them is
    exactly 1, so the sum lies in [1, n]: no overflow, a finite log.
    A row of -inf gives -inf (the log of an empty sum), as in PyTorch.
    Keeps the dtype of ``x``; integers are computed in float64.
    """
    x = _real_floats(x, axis, "logsumexp")
    shifted, m = _shift(x, axis)
    total = np.sum(np.exp(shifted), axis=axis, keepdims=True)
    with np.errstate(divide="ignore"):  # log(0) = -inf: a row of -inf
        out = np.log(total) + m
    if not keepdims:
        out = np.squeeze(out, axis=axis)
    return out.astype(x.dtype, copy=False)
# --8<-- [end:logsumexp]


# --8<-- [start:log_softmax]
def log_softmax(x, axis: int = -1) -> np.ndarray:
    """log(softmax(x)) along ``axis``, stable: (x - m) - log Σ exp(x - m).

    ``np.log(softmax(x))`` fails for an entry far below the largest:
    its weight underflows to 0 and the log is -inf. Here it stays finite.
    (x - m) is computed first, so a large m cancels exactly.
    A row of -inf gives nan, as softmax and PyTorch do.
    """
    x = _real_floats(x, axis, "log_softmax")
    shifted, _ = _shift(x, axis)
    total = np.sum(np.exp(shifted), axis=axis, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):  # a row of -inf
        out = shifted - np.log(total)
    return out.astype(x.dtype, copy=False)
# --8<-- [end:log_softmax]
