"""The cross-entropy loss of next-token prediction, and its gradient.

For logits z (one row per token) and target class t, the loss is
-log softmax(z)_t, averaged over the tokens that count. Its gradient is
unusually simple:

    ∂L/∂z = (softmax(z) - onehot(t)) / N

for N counted tokens: the predicted distribution minus the true one. Targets
equal to ``ignore_index`` (default -100, as in PyTorch) count for nothing.
"""

# --8<-- [start:cross_entropy]
import numpy as np


def _log_softmax(z):
    shifted = z - z.max(axis=-1, keepdims=True)  # stable, as softmax is
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _check(logits, targets, ignore_index):
    logits, targets = np.asarray(logits), np.asarray(targets)
    if (logits.dtype.kind not in "iuf" or logits.ndim < 1
            or logits.shape[-1] < 1):
        raise ValueError(f"cross_entropy: logits must be real numbers of "
                         f"shape (..., vocab_size), got dtype {logits.dtype} "
                         f"and shape {logits.shape}")
    if (logits.shape[:-1] != targets.shape
            or not np.issubdtype(targets.dtype, np.integer)):
        raise ValueError(
            f"cross_entropy: logits (..., vocab_size) {logits.shape} need "
            f"integer targets of shape {logits.shape[:-1]}, got "
            f"{targets.shape} {targets.dtype}")
    vocab_size = logits.shape[-1]
    outside = (targets != ignore_index) & ((targets < 0)
                                           | (targets >= vocab_size))
    if outside.any():
        raise ValueError(
            f"cross_entropy: targets must lie in 0..{vocab_size - 1} or "
            f"equal ignore_index={ignore_index}, got "
            f"{targets[outside][0]} at {np.argwhere(outside)[0].tolist()}")
    return logits, targets


def cross_entropy(logits, targets, *, ignore_index=-100):
    """Mean of -log softmax(logits)[target] over targets != ignore_index.

    Nothing counted (no tokens, or all ignored) gives nan, as in PyTorch;
    an ignored row counts for nothing even if it holds NaN.
    """
    logits, targets = _check(logits, targets, ignore_index)
    counted = targets != ignore_index  # (...)
    if not counted.any():
        return float("nan")  # the mean of nothing (PyTorch: 0 / 0)
    picked = np.where(counted, targets, 0)[..., None]  # (..., 1)
    log_p = np.take_along_axis(_log_softmax(logits), picked, axis=-1)
    return float(-np.sum(log_p[..., 0], where=counted) / counted.sum())


def cross_entropy_backward(logits, targets, *, ignore_index=-100):
    """∂(cross_entropy)/∂logits: (softmax - onehot) / N, 0 where ignored."""
    logits, targets = _check(logits, targets, ignore_index)
    counted = targets != ignore_index  # (...)
    picked = np.where(counted, targets, 0)[..., None]  # (..., 1)
    d_logits = np.exp(_log_softmax(logits))  # softmax, (..., vocab_size)
    target_p = np.take_along_axis(d_logits, picked, axis=-1)  # (..., 1)
    np.put_along_axis(d_logits, picked, target_p - 1.0, axis=-1)  # - onehot
    # in the logits' dtype: bool / int64 would be float64, and so would
    # float32 / NumPy's int64 count (an int() is a weak Python number)
    weight = counted[..., None].astype(d_logits.dtype)  # (..., 1)
    return d_logits * (weight / max(int(counted.sum()), 1))
# --8<-- [end:cross_entropy]
