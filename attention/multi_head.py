"""Multi-head and grouped-query attention with explicit weight matrices.

References: Vaswani et al., "Attention Is All You Need" (2017), section 3.2.2 (multi-head);
Shazeer, "Fast Transformer Decoding" (2019) (multi-query); Ainslie et al., "GQA" (2023).

Weight layout: every projection is applied on the right, ``x @ W``, with W of shape
(d_in, d_out). For multi-head attention W_q, W_k, W_v and W_o are all (d_model, d_model);
head i owns columns i*d_head .. (i+1)*d_head of W_q, W_k and W_v. PyTorch's
``nn.MultiheadAttention`` stores the transposes: in_proj_weight = concat(W_q.T, W_k.T,
W_v.T) and out_proj.weight = W_o.T.
"""

# --8<-- [start:imports]
import numpy as np

from attention.scaled_dot_product import attention
# --8<-- [end:imports]


# --8<-- [start:checks]
def _check_heads(name, n, d, what):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"{name} must be a positive integer, got {n!r}")
    if d % n:
        raise ValueError(f"{what} = {d} is not divisible by {name} = {n}")


def _check_weight(fn, name, W, shape):
    if np.shape(W) != shape:
        raise ValueError(
            f"{fn}: {name} must have shape {shape}, got {np.shape(W)}")


def _check_tokens(fn, x, kv):
    x = np.asarray(x)
    kv = x if kv is None else np.asarray(kv)
    if x.ndim < 2 or kv.ndim < 2:
        raise ValueError(
            f"{fn}: x and kv must have shape (..., n, d_model), "
            f"got x {x.shape} and kv {kv.shape}"
        )
    if kv.shape[-1] != x.shape[-1]:
        raise ValueError(
            f"{fn}: x and kv must share d_model, "
            f"got x {x.shape} and kv {kv.shape}"
        )
    return x, kv
# --8<-- [end:checks]


# --8<-- [start:split_merge]
def split_heads(x, n_heads):
    """(..., n, d_model) -> (..., n_heads, n, d_head): a slice per head."""
    *lead, n, d_model = x.shape
    x = x.reshape(*lead, n, n_heads, d_model // n_heads)  # (..., n, h, d_head)
    return np.swapaxes(x, -2, -3)  # (..., h, n, d_head)


def merge_heads(x):
    """(..., n_heads, n, d_head) -> (..., n, n_heads * d_head): concatenate."""
    *lead, h, n, d_head = x.shape
    x = np.swapaxes(x, -2, -3)  # (..., n, h, d_head)
    return x.reshape(*lead, n, h * d_head)  # (..., n, d_model)
# --8<-- [end:split_merge]


# --8<-- [start:multi_head_attention]
def multi_head_attention(x, W_q, W_k, W_v, W_o, n_heads, *, kv=None, mask=None,
                         causal=False, scale=None, return_weights=False):
    """Multi-head attention: n_heads attentions side by side, mixed by W_o.

    x: (..., n_q, d_model), the tokens that ask (queries).
    kv: (..., n_k, d_model), the tokens that answer (keys and values); None
        means x (self-attention). Another kv, of any length: cross-attention.
    W_q, W_k, W_v, W_o: (d_model, d_model). mask: broadcastable to
    (..., n_heads, n_q, n_k); boolean (True = may attend) or floating (added
    to the scores). causal: bottom-right causal mask. scale: default
    1/sqrt(d_head). Returns (..., n_q, d_model), the shape of x, so layers
    can be stacked; with ``return_weights`` also every head's weights
    (..., n_heads, n_q, n_k).
    """
    x, kv = _check_tokens("multi_head_attention", x, kv)
    d_model = x.shape[-1]
    _check_heads("n_heads", n_heads, d_model, "d_model")
    for name, W in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v), ("W_o", W_o)):
        _check_weight("multi_head_attention", name, W, (d_model, d_model))

    q = split_heads(x @ W_q, n_heads)   # (..., h, n_q, d_head)
    k = split_heads(kv @ W_k, n_heads)  # (..., h, n_k, d_head)
    v = split_heads(kv @ W_v, n_heads)  # (..., h, n_k, d_head)
    # All heads at once: the head axis is one more leading axis for attention(),
    # which scales by 1/sqrt(d_head), the size of the vectors it compares.
    out, weights = attention(q, k, v, mask=mask, causal=causal, scale=scale,
                             return_weights=True)
    out = merge_heads(out) @ W_o  # (..., n_q, d_model)
    return (out, weights) if return_weights else out
# --8<-- [end:multi_head_attention]


# --8<-- [start:grouped_query_attention]
def grouped_query_attention(x, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, *,
                            kv=None, mask=None, causal=False, scale=None,
                            return_weights=False):
    """Grouped-query attention: n_heads query heads share n_kv_heads kv heads.

    Query heads are taken in groups of g = n_heads // n_kv_heads; query head
    i uses key/value head i // g (PyTorch's ``enable_gqa=True`` does the
    same). n_kv_heads = n_heads is multi-head attention; n_kv_heads = 1 is
    multi-query attention.
    x: (..., n_q, d_model); kv: (..., n_k, d_model) or None (self-attention).
    W_q, W_o: (d_model, d_model); W_k, W_v: (d_model, n_kv_heads * d_head),
    with d_head = d_model // n_heads. mask, causal, scale, return_weights: as in
    ``multi_head_attention``. Returns (..., n_q, d_model).
    """
    x, kv = _check_tokens("grouped_query_attention", x, kv)
    d_model = x.shape[-1]
    _check_heads("n_heads", n_heads, d_model, "d_model")
    _check_heads("n_kv_heads", n_kv_heads, n_heads, "n_heads")
    d_head = d_model // n_heads
    d_kv = n_kv_heads * d_head
    for name, W, shape in (("W_q", W_q, (d_model, d_model)),
                           ("W_k", W_k, (d_model, d_kv)),
                           ("W_v", W_v, (d_model, d_kv)),
                           ("W_o", W_o, (d_model, d_model))):
        _check_weight("grouped_query_attention", name, W, shape)

    q = split_heads(x @ W_q, n_heads)      # (..., h, n_q, d_head)
    # k and v, (..., h_kv, n_k, d_head), are all that a KV cache stores.
    k = split_heads(kv @ W_k, n_kv_heads)  # (..., h_kv, n_k, d_head)
    v = split_heads(kv @ W_v, n_kv_heads)  # (..., h_kv, n_k, d_head)
    group = n_heads // n_kv_heads
    # Hand each key/value head to its group of query heads. np.repeat copies,
    # which keeps the code plain; a fused kernel reads the shared head instead.
    k = np.repeat(k, group, axis=-3)  # (..., h, n_k, d_head)
    v = np.repeat(v, group, axis=-3)  # (..., h, n_k, d_head)
    out, weights = attention(q, k, v, mask=mask, causal=causal, scale=scale,
                             return_weights=True)
    out = merge_heads(out) @ W_o  # (..., n_q, d_model)
    return (out, weights) if return_weights else out
# --8<-- [end:grouped_query_attention]
