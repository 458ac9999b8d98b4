"""Shape handling shared by the attention backward passes: checks with clear
errors, broadcasting undone (gradients summed), grouped-query heads split into
groups so that broadcasting does the sharing."""

import numpy as np


def sum_to_shape(grad, shape):
    """Sum ``grad`` over the axes along which an input of ``shape`` was
    broadcast: every copy's gradient flows back to the one original."""
    extra = grad.ndim - len(shape)
    if extra:  # leading axes the input did not have
        grad = grad.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, size in enumerate(shape)
                 if size == 1 and grad.shape[i] != 1)
    return grad.sum(axis=axes, keepdims=True) if axes else grad


def gqa_group(q_shape, kv_shape):
    """Query heads per key/value head (1 when the head axes broadcast)."""
    if len(q_shape) < 3 or len(kv_shape) < 3:
        return 1
    h, h_kv = q_shape[-3], kv_shape[-3]
    if h == h_kv or h_kv in (0, 1):
        return 1
    if h % h_kv:
        raise ValueError(
            f"attention backward: q has {h} heads and k, v have {h_kv}; "
            f"grouped-query attention needs a multiple (q {q_shape}, "
            f"k {kv_shape})")
    return h // h_kv


def check_backward_inputs(fn, d_out, q, k, v, mask):
    """Arrays of one floating dtype, the GQA group size; clear errors."""
    d_out, q, k, v = (np.asarray(a) for a in (d_out, q, k, v))
    for name, a in (("q", q), ("k", k), ("v", v)):
        if a.ndim < 2:
            raise ValueError(f"{fn}: {name} must have at least 2 dims "
                             f"(..., n, d), got shape {a.shape}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"{fn}: q and k must share their last dim d_k, "
                         f"got q {q.shape} and k {k.shape}")
    if k.shape[-2] != v.shape[-2] or k.shape[:-2] != v.shape[:-2]:
        raise ValueError(f"{fn}: k and v must hold the same keys, got "
                         f"k {k.shape} and v {v.shape}")
    group = gqa_group(q.shape, k.shape)
    kv_lead = k.shape[:-2]
    if group > 1:  # k's head axis counts as q's for broadcasting
        kv_lead = kv_lead[:-1] + (q.shape[-3],)
    try:
        lead = np.broadcast_shapes(q.shape[:-2], kv_lead)
    except ValueError:
        raise ValueError(f"{fn}: leading (batch/head) dims do not "
                         f"broadcast: q {q.shape}, k {k.shape}") from None
    out_shape = lead + (q.shape[-2], v.shape[-1])
    if d_out.shape != out_shape:
        raise ValueError(f"{fn}: d_out must have the output's shape "
                         f"{out_shape}, got {d_out.shape}")
    dtype = np.result_type(d_out, q, k, v)
    if not np.issubdtype(dtype, np.floating):
        raise TypeError(f"{fn}: inputs must be floating point, got {dtype}")
    if mask is not None:
        mask = np.asarray(mask)
        if mask.dtype != np.bool_ and not np.issubdtype(mask.dtype,
                                                         np.floating):
            raise TypeError(f"{fn}: mask must be boolean (True = may "
                            f"attend) or floating (added to the scores), "
                            f"got dtype {mask.dtype}")
        scores_shape = lead + (q.shape[-2], k.shape[-2])
        try:
            fits = np.broadcast_shapes(mask.shape, scores_shape) == scores_shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"{fn}: mask of shape {mask.shape} does not "
                             f"broadcast to the scores' shape {scores_shape}")
    d_out, q, k, v = (a.astype(dtype, copy=False) for a in (d_out, q, k, v))
    return d_out, q, k, v, mask, group


def split_groups(group, q, d_out, k, v, mask):
    """GQA as broadcasting: query heads (..., h_kv, g, n, d) against
    k, v (..., h_kv, 1, n, d)."""
    if group == 1:
        return q, d_out, k, v, mask
    *lead, h, n_q, d = q.shape
    q = q.reshape(*lead, h // group, group, n_q, d)  # (..., h_kv, g, n_q, d)
    d_out = d_out.reshape(*d_out.shape[:-3], h // group, group, n_q,
                          d_out.shape[-1])  # (..., h_kv, g, n_q, d_v)
    k, v = k[..., None, :, :], v[..., None, :, :]  # (..., h_kv, 1, n_k, d)
    if mask is not None and mask.ndim >= 3:
        if mask.shape[-3] == h:  # one mask per query head
            mask = mask.reshape(*mask.shape[:-3], h // group, group,
                                *mask.shape[-2:])  # (..., h_kv, g, n_q, n_k)
        else:  # one mask for every head
            mask = mask[..., None, :, :]  # (..., 1, 1, n_q, n_k)
    return q, d_out, k, v, mask


def check_tile_sizes(fn, block_q, block_k):
    for name, size in (("block_q", block_q), ("block_k", block_k)):
        if (isinstance(size, bool) or not isinstance(size, (int, np.integer))
                or size < 1):
            raise ValueError(f"{fn}: {name} must be a positive integer, "
                             f"got {size!r}")


def check_weights(fn, weights, d_out, k):
    """The kept P must be the forward's: (..., n_q, n_k) of the output."""
    if weights is None:
        return
    expected = d_out.shape[:-1] + (k.shape[-2],)
    if np.shape(weights) != expected:
        raise ValueError(f"{fn}: weights must be the forward's P of shape "
                         f"{expected} (..., n_q, n_k), got "
                         f"{np.shape(weights)}")
