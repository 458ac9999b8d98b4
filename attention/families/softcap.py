"""Soft-capping: cap * tanh(x / cap) bounds a logit to (-cap, cap) without a kink.

Gemma 2 (Gemma Team, "Gemma 2: Improving Open Language Models at a Practical Size", 2024,
section 2) caps every attention score at ``attn_logit_softcapping`` (50) and the final
logits at ``final_logit_softcapping`` (30). Near zero tanh(u) ~ u, so a small logit passes
almost unchanged; a large one saturates at the cap, so no single score can take the whole
softmax row however large q . k grows. The price: the gradient through the cap is
1 - tanh(x / cap)^2, which vanishes for logits far past it.

Here capping is written as what it adds to the scores: a bias softcap(s) - s on the raw
scores s, passed to the package's own ``attention`` (as the learned sink of chapter 8 is),
so its masks, scale and empty rows behave as everywhere else.
"""

# --8<-- [start:imports]
import numpy as np

from attention.blocks import SCORE_RULES
from attention.scaled_dot_product import check_inputs, attention
# --8<-- [end:imports]


# --8<-- [start:softcap]
def softcap(x, cap):
    """cap * tanh(x / cap): x where |x| << cap, never past +-cap.

    x: an array of logits; cap: a positive number (Gemma 2: 50 for the
    attention scores, 30 for the final logits).
    """
    if isinstance(cap, bool) or not isinstance(
            cap, (int, float, np.integer, np.floating)) or not 0 < cap < np.inf:
        raise ValueError(f"softcap: cap must be a positive finite number, "
                         f"got {cap!r}")
    x = np.asarray(x)
    if x.dtype.kind not in "f":
        x = x.astype(np.float64)
    return cap * np.tanh(x / cap)
# --8<-- [end:softcap]


# --8<-- [start:capped_attention]
def capped_attention(q, k, v, *, cap, mask=None, causal=False, scale=None,
                     return_weights=False):
    """``attention`` whose scaled scores s are soft-capped before the mask.

    q, k, v, mask, causal, scale as for ``attention``; cap: the softcap
    (Gemma 2's attn_logit_softcapping). softmax(softcap(s) + mask), written
    as attention with the extra bias softcap(s) - s. Returns the output,
    or (output, weights).
    """
    # Shapes, dtypes, mask and scale checked as attention checks them.
    q, k, _, mask, scale, _ = check_inputs(q, k, v, mask, scale,
                                            "capped_attention")
    raw = (q @ np.swapaxes(k, -1, -2)) * scale      # (..., n_q, n_k)
    bias = softcap(raw, cap) - raw                  # what capping changes
    if mask is not None:                            # blocked keys: -inf
        bias = (np.where(mask, bias, -np.inf) if mask.dtype == np.bool_
                else bias + mask)                   # (..., n_q, n_k)
    return attention(q, k, v, mask=bias, causal=causal, scale=scale,
                     return_weights=return_weights)
# --8<-- [end:capped_attention]


def _capped_rule(q, k, v, cap, **options):
    return capped_attention(q, k, v, cap=cap, **options)


# A block's attention takes softcap=... as its score rule (``attend``).
SCORE_RULES["softcap"] = _capped_rule


def capped_logits(logits, config):
    """A family's logits hook: soft-capped where config.final_softcap is
    set (Gemma 2), else unchanged."""
    cap = config.final_softcap
    return logits if cap is None else softcap(logits, cap)
