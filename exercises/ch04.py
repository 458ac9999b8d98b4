"""Practice exercises of chapter 4: starters and worked solutions, one source for the page and the notebook.

Each exercise has a `exN-starter` and a `exN-solution` section; the page includes them by
snippet, and the practice tests run each section on its own (after the `imports` section)
through its self-check. Starter and solution define the same name on purpose: the reader
replaces the one with the other.
"""

# --8<-- [start:imports]
import numpy as np

from attention import attention, softmax
from attention.practice import (check_decode_step, check_kv_cache_size,
                                check_top_p_filter, check_window_cache_step)
# --8<-- [end:imports]


# --8<-- [start:ex1-starter]
def top_p_filter(logits, p):
    """logits (vocab,) -> logits, -inf on every token outside the nucleus."""
    order = np.argsort(logits)[::-1]           # most likely first
    probs = softmax(logits)[order]
    cumulative = np.cumsum(probs)
    # Your code: is the token that makes the sum pass p in the nucleus?
    keep_sorted = cumulative <= p
    keep = np.zeros(logits.shape, bool)
    keep[order] = keep_sorted
    return np.where(keep, logits, -np.inf)
# --8<-- [end:ex1-starter]


# --8<-- [start:ex1-solution]
def top_p_filter(logits, p):
    """logits (vocab,) -> logits, -inf on every token outside the nucleus."""
    order = np.argsort(logits)[::-1]           # most likely first
    probs = softmax(logits)[order]
    before = np.cumsum(probs) - probs          # mass of the tokens ahead
    keep_sorted = before < p                   # still short of p: keep it
    keep_sorted[0] = True                      # always keep the most likely
    keep = np.zeros(logits.shape, bool)
    keep[order] = keep_sorted
    return np.where(keep, logits, -np.inf)
# --8<-- [end:ex1-solution]


# --8<-- [start:ex2-starter]
def decode_step(q, k, v, k_cache, v_cache):
    """One new token: q, k, v (n_heads, 1, d_head); caches (n_heads, n, d_head).

    Returns (output (n_heads, 1, d_head), k_cache, v_cache) with the new
    token's key and value added to the caches.
    """
    # Your code: the new token must also see itself.
    out = attention(q, k_cache, v_cache)
    return out, k_cache, v_cache
# --8<-- [end:ex2-starter]


# --8<-- [start:ex2-solution]
def decode_step(q, k, v, k_cache, v_cache):
    """One new token: q, k, v (n_heads, 1, d_head); caches (n_heads, n, d_head).

    Returns (output (n_heads, 1, d_head), k_cache, v_cache) with the new
    token's key and value added to the caches.
    """
    k_cache = np.concatenate([k_cache, k], axis=-2)  # (n_heads, n + 1, d_head)
    v_cache = np.concatenate([v_cache, v], axis=-2)  # (n_heads, n + 1, d_head)
    # The newest token is the last position: it may see every key, no mask.
    return attention(q, k_cache, v_cache), k_cache, v_cache
# --8<-- [end:ex2-solution]


# --8<-- [start:ex3-starter]
def kv_cache_size(config, n_tokens, bytes_per_value=2):
    """Bytes of the KV cache of one sequence of n_tokens for this config
    (fields n_layers, n_heads, n_kv_heads, d_model)."""
    d_head = config.d_model // config.n_heads
    # Your code: what does the cache hold for each token, in each layer?
    per_token = config.n_layers * config.n_kv_heads * d_head
    return per_token * n_tokens * bytes_per_value
# --8<-- [end:ex3-starter]


# --8<-- [start:ex3-solution]
def kv_cache_size(config, n_tokens, bytes_per_value=2):
    """Bytes of the KV cache of one sequence of n_tokens for this config
    (fields n_layers, n_heads, n_kv_heads, d_model)."""
    d_head = config.d_model // config.n_heads
    per_token = 2 * config.n_layers * config.n_kv_heads * d_head  # K and V
    return per_token * n_tokens * bytes_per_value
# --8<-- [end:ex3-solution]


# --8<-- [start:ex4-starter]
def window_cache_step(k_kept, v_kept, k_new, v_new, window):
    """A chunk of new keys/values (c, d) arrives at a rolling cache (m, d).

    Returns (keys, values, k_kept, v_kept): what the chunk's queries attend
    to (the latest positions, in order), and what to keep for later chunks.
    """
    keys = np.concatenate([k_kept, k_new])
    values = np.concatenate([v_kept, v_new])
    # Your code: is `window` keys enough for the chunk's first query?
    keys, values = keys[-window:], values[-window:]
    return keys, values, keys, values
# --8<-- [end:ex4-starter]


# --8<-- [start:ex4-solution]
def window_cache_step(k_kept, v_kept, k_new, v_new, window):
    """A chunk of new keys/values (c, d) arrives at a rolling cache (m, d).

    Returns (keys, values, k_kept, v_kept): what the chunk's queries attend
    to (the latest positions, in order), and what to keep for later chunks.
    """
    keys = np.concatenate([k_kept, k_new])      # (m + c, d): all of it
    values = np.concatenate([v_kept, v_new])    # (m + c, d)
    # A later query sees its own position and the window - 1 before it, so
    # window - 1 old keys are all any later chunk can need.
    keep = max(window - 1, 0)
    return keys, values, keys[len(keys) - keep:], values[len(values) - keep:]
# --8<-- [end:ex4-solution]
