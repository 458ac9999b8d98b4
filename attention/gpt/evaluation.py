"""Held-out loss with a long context for every token: strided evaluation.

Chapter 7's ``evaluate`` cuts the text into non-overlapping windows, so the first token of
each window is predicted from nothing and the mean context is about half the window.
Here windows of n tokens move by ``stride`` and each scores only the targets no earlier
window scored: every token after the first n is predicted from at least n - stride
tokens before it (the sliding-window perplexity of Hugging Face's "Perplexity of
fixed-length models" guide). ``bits_per_byte`` puts a loss in nats per token on a footing
that does not depend on the tokenizer.
"""

# --8<-- [start:strided]
import math

import numpy as np

from attention.loss import cross_entropy
from attention.model import forward


def evaluate_strided(params, config, ids, n, stride):
    """(mean cross-entropy in nats, tokens scored) over every token of ids
    but the first: windows of n tokens moved by stride, each scoring only
    the targets that no earlier window scored."""
    ids = np.asarray(ids, dtype=np.int64)
    if ids.ndim != 1 or len(ids) < 2:
        raise ValueError(f"evaluate_strided: ids must be 1-D with at least "
                         f"2 tokens, got shape {ids.shape}")
    if not (isinstance(n, int) and isinstance(stride, int)
            and 1 <= stride <= n):
        raise ValueError(f"evaluate_strided: need integers 1 <= stride <= n,"
                         f" got n = {n!r}, stride = {stride!r}")
    last = len(ids) - 1                     # index of the last target
    end = max(last - n, 0)                  # start of the last window
    total, scored = 0.0, 0                  # targets 1..scored are done
    for s in [*range(0, end, stride), end]:
        targets = ids[s + 1: s + n + 1].copy()            # (<= n,)
        inputs = ids[s: s + len(targets)]
        targets[: scored - s] = -100        # scored by an earlier window
        new = len(targets) - max(scored - s, 0)
        logits = forward(params, config, inputs[None])    # (1, m, vocab)
        total += cross_entropy(logits, targets[None]) * new
        scored = s + len(targets)
    return total / scored, scored


def bits_per_byte(nats_per_token, n_tokens, n_bytes):
    """A loss in nats per token as bits per byte of the text scored:
    the same measure whatever the tokenizer."""
    return nats_per_token * n_tokens / math.log(2) / n_bytes
# --8<-- [end:strided]
