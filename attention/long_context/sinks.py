"""A learned attention sink: one more softmax column that takes weight and gives nothing.

Xiao et al., "Efficient Streaming Language Models with Attention Sinks" (2023) found that
trained models park much of each row's attention on the first tokens, whatever they say:
softmax must put its weight somewhere. StreamingLLM keeps those tokens in the cache
(``attention.kv_cache``'s ``n_sinks``). gpt-oss (OpenAI, 2025) learns the sink instead:
each head has one logit s_h that joins every row's scores, and its weight is thrown away.
Row i's weights become exp(x_ij) / (exp(s_h) + sum_j exp(x_ij)): they sum to less than
one, so a head can attend to nothing.

Here the sink is written as what it is: one extra key whose score is the constant s_h (a
zero key plus s_h added as a bias) and whose value is zero, passed to the package's own
``attention``. Hugging Face's ``GptOssAttention`` concatenates the column to the scores;
the tests check the two agree.
"""

# --8<-- [start:imports]
import numpy as np

from attention.blocks import SCORE_RULES
from attention.masks import causal_mask
from attention.scaled_dot_product import as_array, check_inputs, attention
# --8<-- [end:imports]


# --8<-- [start:sink_attention]
def sink_attention(q, k, v, sinks, *, mask=None, causal=False, scale=None,
                   return_weights=False):
    """``attention`` with one learned sink logit per head.

    q, k, v as for ``attention``; sinks: the logits s_h, broadcastable to the
    leading (batch, head) dims of the scores, e.g. (n_heads,) for q of shape
    (batch, n_heads, n_q, d_k). mask: boolean (True = may attend) or floating
    (added), broadcastable to (..., n_q, n_k). Returns the output, or (output,
    weights) without the sink's column.
    """
    # Shapes, dtypes and scale checked as attention checks them.
    q, k, v, _, _, _ = check_inputs(q, k, v, None, scale, "sink_attention")
    s = as_array("sink_attention", "sinks", sinks).astype(np.float64)
    if not np.all(np.isfinite(s)):
        raise ValueError(f"sink_attention: sinks must be finite, got {s}")
    n_q, n_k = q.shape[-2], k.shape[-2]
    bias = np.zeros((n_q, n_k))                             # (n_q, n_k)
    if causal:
        bias = np.where(causal_mask(n_q, n_k), bias, -np.inf)
    if mask is not None:
        mask = as_array("sink_attention", "mask", mask)
        bias = (np.where(mask, bias, -np.inf) if mask.dtype == np.bool_
                else bias + mask)                           # (..., n_q, n_k)
    column = s[..., None, None]                            # (..., 1, 1)
    try:
        lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2])
        fits = np.broadcast_shapes(lead, s.shape) == lead
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"sink_attention: sinks of shape {s.shape} do not "
                         f"broadcast to the leading (batch, head) dims of q "
                         f"{q.shape} and k {k.shape}")
    try:
        lead = np.broadcast_shapes(lead, bias.shape[:-2])
    except ValueError:
        raise ValueError(f"sink_attention: mask of shape {mask.shape} does "
                         f"not broadcast to the scores") from None
    bias = np.concatenate([np.broadcast_to(bias, (*lead, n_q, n_k)),
                           np.broadcast_to(column, (*lead, n_q, 1))], axis=-1)
    # The sink as a key: zero (its score is all bias) with a zero value.
    k = np.concatenate([k, np.zeros_like(k[..., :1, :])], axis=-2)
    v = np.concatenate([v, np.zeros_like(v[..., :1, :])], axis=-2)
    out, weights = attention(q, k, v, mask=bias, scale=scale,
                             return_weights=True)  # (..., n_q, n_k + 1)
    return (out, weights[..., :-1]) if return_weights else out
# --8<-- [end:sink_attention]


# A block's attention takes sinks=... as its score rule (``attend``).
SCORE_RULES["sinks"] = sink_attention
