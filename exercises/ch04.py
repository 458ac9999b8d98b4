"""Practice exercises of chapter 4: starters and worked solutions, one source for the page and the notebook.

Each exercise has a `exN-starter` and a `exN-solution` section; the page includes them by
snippet, and the practice tests run each section on its own (after the `imports` section)
through its self-check. Starter and solution define the same name on purpose: the reader
replaces the one with the other. The `exN-wrong-*` sections are plausible wrong answers
that the check must reject with the words after `# rejected with:`
(tests/practice/test_wrong_answers.py).
"""

# --8<-- [start:imports]
import math

import numpy as np

from attention import attention, log_softmax, softmax
from attention.practice.ch04 import (
    check_beam_step,
    check_cached_causal,
    check_decode_step,
    check_kv_cache_size,
    check_min_p_filter,
    check_sliding_window_mask,
    check_temperature_sample,
    check_top_k_filter,
    check_top_p_filter,
    check_window_cache_step,
)
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


# --8<-- [start:ex1-wrong-ascending]
# rejected with: most likely
def top_p_filter(logits, p):  # sorts the wrong way: keeps the least likely
    order = np.argsort(logits)
    probs = softmax(logits)[order]
    keep = np.zeros(logits.shape, bool)
    keep[order] = np.cumsum(probs) - probs < p
    return np.where(keep, logits, -np.inf)
# --8<-- [end:ex1-wrong-ascending]


# --8<-- [start:ex1-wrong-may-keep-nothing]
# rejected with: you keep 0 tokens
def top_p_filter(logits, p):  # the rule is right, but p = 0 keeps nothing
    order = np.argsort(logits)[::-1]
    probs = softmax(logits)[order]
    keep = np.zeros(logits.shape, bool)
    keep[order] = np.cumsum(probs) - probs < p
    return np.where(keep, logits, -np.inf)
# --8<-- [end:ex1-wrong-may-keep-nothing]


# --8<-- [start:ex1-wrong-returns-probabilities]
# rejected with: keep their logits unchanged
def top_p_filter(logits, p):  # renormalises instead of filtering logits
    order = np.argsort(logits)[::-1]
    probs = softmax(logits)[order]
    keep_sorted = np.cumsum(probs) - probs < p
    keep_sorted[0] = True
    keep = np.zeros(logits.shape, bool)
    keep[order] = keep_sorted
    return np.where(keep, softmax(np.where(keep, logits, -np.inf)), -np.inf)
# --8<-- [end:ex1-wrong-returns-probabilities]


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


# --8<-- [start:ex2-wrong-top-left-mask]
# rejected with: attended to the first 1 of the 6 keys
def decode_step(q, k, v, k_cache, v_cache):  # PyTorch's is_causal alignment
    k_cache = np.concatenate([k_cache, k], axis=-2)
    v_cache = np.concatenate([v_cache, v], axis=-2)
    mask = np.tril(np.ones((1, k_cache.shape[-2]), bool))
    return attention(q, k_cache, v_cache, mask=mask), k_cache, v_cache
# --8<-- [end:ex2-wrong-top-left-mask]


# --8<-- [start:ex2-wrong-prepends]
# rejected with: appended at the end
def decode_step(q, k, v, k_cache, v_cache):  # right output, cache out of order
    k_cache = np.concatenate([k, k_cache], axis=-2)
    v_cache = np.concatenate([v, v_cache], axis=-2)
    return attention(q, k_cache, v_cache), k_cache, v_cache
# --8<-- [end:ex2-wrong-prepends]


# --8<-- [start:ex2-wrong-unscaled]
# rejected with: 1/sqrt(d_head)
def decode_step(q, k, v, k_cache, v_cache):  # forgets 1/sqrt(d_head)
    k_cache = np.concatenate([k_cache, k], axis=-2)
    v_cache = np.concatenate([v_cache, v], axis=-2)
    weights = softmax(q @ np.swapaxes(k_cache, -1, -2))
    return weights @ v_cache, k_cache, v_cache
# --8<-- [end:ex2-wrong-unscaled]


# --8<-- [start:ex3-starter]
def kv_cache_size(config, n_tokens, bytes_per_value=2):
    """Bytes of the KV cache of one sequence of n_tokens for this config
    (fields n_layers, n_heads, n_kv_heads, d_model)."""
    # Your code: count what the cache holds.
    return 0
# --8<-- [end:ex3-starter]


# --8<-- [start:ex3-solution]
def kv_cache_size(config, n_tokens, bytes_per_value=2):
    """Bytes of the KV cache of one sequence of n_tokens for this config
    (fields n_layers, n_heads, n_kv_heads, d_model)."""
    d_head = config.d_model // config.n_heads
    per_token = 2 * config.n_layers * config.n_kv_heads * d_head  # K and V
    return per_token * n_tokens * bytes_per_value
# --8<-- [end:ex3-solution]


# --8<-- [start:ex3-wrong-query-heads]
# rejected with: times too much
def kv_cache_size(config, n_tokens, bytes_per_value=2):  # ignores GQA
    d_head = config.d_model // config.n_heads
    per_token = 2 * config.n_layers * config.n_heads * d_head
    return per_token * n_tokens * bytes_per_value
# --8<-- [end:ex3-wrong-query-heads]


# --8<-- [start:ex3-wrong-d-model]
# rejected with: d_head
def kv_cache_size(config, n_tokens, bytes_per_value=2):  # d_model per head
    per_token = 2 * config.n_layers * config.n_kv_heads * config.d_model
    return per_token * n_tokens * bytes_per_value
# --8<-- [end:ex3-wrong-d-model]


# --8<-- [start:ex3-wrong-one-layer]
# rejected with: every layer
def kv_cache_size(config, n_tokens, bytes_per_value=2):  # one layer only
    d_head = config.d_model // config.n_heads
    return 2 * config.n_kv_heads * d_head * n_tokens * bytes_per_value
# --8<-- [end:ex3-wrong-one-layer]


# --8<-- [start:ex3-wrong-float-bytes]
# rejected with: a whole number
def kv_cache_size(config, n_tokens, bytes_per_value=2):
    d_head = config.d_model / config.n_heads
    return 2 * config.n_layers * config.n_kv_heads * d_head * n_tokens * bytes_per_value
# --8<-- [end:ex3-wrong-float-bytes]


# --8<-- [start:ex3-wrong-int32]
# rejected with: you said
def kv_cache_size(config, n_tokens, bytes_per_value=2):
    d_head = config.d_model // config.n_heads
    per_token = np.int32(2 * config.n_layers * config.n_kv_heads * d_head)
    return int(per_token * np.int32(n_tokens) * np.int32(bytes_per_value))
# --8<-- [end:ex3-wrong-int32]


# --8<-- [start:ex3-wrong-default-4]
# rejected with: the default 2
def kv_cache_size(config, n_tokens, bytes_per_value=4):
    d_head = config.d_model // config.n_heads
    return 2 * config.n_layers * config.n_kv_heads * d_head * n_tokens * bytes_per_value
# --8<-- [end:ex3-wrong-default-4]


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


# --8<-- [start:ex4-wrong-keeps-everything]
# rejected with: you keep 6 keys
def window_cache_step(k_kept, v_kept, k_new, v_new, window):  # never trims
    keys = np.concatenate([k_kept, k_new])
    values = np.concatenate([v_kept, v_new])
    return keys, values, keys, values
# --8<-- [end:ex4-wrong-keeps-everything]


# --8<-- [start:ex4-wrong-keeps-one-too-few]
# rejected with: needs the last
def window_cache_step(k_kept, v_kept, k_new, v_new, window):  # window - 2
    keys = np.concatenate([k_kept, k_new])
    values = np.concatenate([v_kept, v_new])
    keep = window - 2
    return keys, values, keys[len(keys) - keep:], values[len(values) - keep:]
# --8<-- [end:ex4-wrong-keeps-one-too-few]


# --8<-- [start:ex4-wrong-only-window-keys]
# rejected with: window + chunk - 1
def window_cache_step(k_kept, v_kept, k_new, v_new, window):  # the W-key bug
    keys = np.concatenate([k_kept, k_new])[-window:]
    values = np.concatenate([v_kept, v_new])[-window:]
    return keys, values, keys, values
# --8<-- [end:ex4-wrong-only-window-keys]


# --8<-- [start:ex4-wrong-raises]
# rejected with: raised NotImplementedError
def window_cache_step(k_kept, v_kept, k_new, v_new, window):
    raise NotImplementedError("todo")
# --8<-- [end:ex4-wrong-raises]


# --8<-- [start:ex1-wrong-fills-plus-inf]
# rejected with: a removed token's logit must be -inf
def top_p_filter(logits, p):
    order = np.argsort(logits)[::-1]
    probs = softmax(logits)[order]
    keep_sorted = np.cumsum(probs) - probs < p
    keep_sorted[0] = True
    keep = np.zeros(logits.shape, bool)
    keep[order] = keep_sorted
    return np.where(keep, logits, np.inf)
# --8<-- [end:ex1-wrong-fills-plus-inf]


# --8<-- [start:ex1-wrong-fills-nan]
# rejected with: a removed token's logit must be -inf
def top_p_filter(logits, p):
    order = np.argsort(logits)[::-1]
    probs = softmax(logits)[order]
    keep_sorted = np.cumsum(probs) - probs < p
    keep_sorted[0] = True
    keep = np.zeros(logits.shape, bool)
    keep[order] = keep_sorted
    return np.where(keep, logits, np.nan)
# --8<-- [end:ex1-wrong-fills-nan]


# --8<-- [start:ex3-wrong-d-head-from-kv-heads]
# rejected with: n_heads / n_kv_heads times too much
def kv_cache_size(config, n_tokens, bytes_per_value=2):
    d_head = config.d_model // config.n_kv_heads
    return 2 * config.n_layers * config.n_kv_heads * d_head * n_tokens * bytes_per_value
# --8<-- [end:ex3-wrong-d-head-from-kv-heads]


# --8<-- [start:ex4-wrong-minus-window-minus-one]
# rejected with: with a window of 1 and chunks of 2
def window_cache_step(k_kept, v_kept, k_new, v_new, window):
    keys = np.concatenate([k_kept, k_new])
    values = np.concatenate([v_kept, v_new])
    return keys, values, keys[-(window - 1):], values[-(window - 1):]
# --8<-- [end:ex4-wrong-minus-window-minus-one]


# --8<-- [start:ex5-starter]
def top_k_filter(logits, k):
    """Keep the k largest logits of each row (and any tied with the k-th);
    -inf elsewhere. logits (..., vocab)."""
    # Your code: this keeps the k largest of the whole array, not of each row.
    kth = np.sort(logits, axis=None)[-k]
    return np.where(logits < kth, -np.inf, logits)
# --8<-- [end:ex5-starter]


# --8<-- [start:ex5-solution]
def top_k_filter(logits, k):
    """Keep the k largest logits of each row (and any tied with the k-th);
    -inf elsewhere. logits (..., vocab)."""
    k = min(k, logits.shape[-1])  # k past the vocabulary keeps everything
    # (..., 1): the k-th largest
    kth = np.sort(logits, axis=-1)[..., -k:][..., :1]
    return np.where(logits < kth, -np.inf, logits)  # ties with it are kept
# --8<-- [end:ex5-solution]


# --8<-- [start:ex6-starter]
def min_p_filter(logits, p):
    """Keep the tokens whose probability is at least p times the top
    token's; -inf elsewhere. logits (..., vocab)."""
    probs = softmax(logits, axis=-1)
    # Your code: the threshold scales with the most likely token.
    return np.where(probs < p, -np.inf, logits)
# --8<-- [end:ex6-starter]


# --8<-- [start:ex6-solution]
def min_p_filter(logits, p):
    """Keep the tokens whose probability is at least p times the top
    token's; -inf elsewhere. logits (..., vocab)."""
    probs = softmax(logits, axis=-1)  # (..., vocab)
    threshold = p * probs.max(axis=-1, keepdims=True)  # (..., 1)
    return np.where(probs < threshold, -np.inf, logits)
# --8<-- [end:ex6-solution]


# --8<-- [start:ex6-wrong-drops-the-edge]
# rejected with: p = 1
def min_p_filter(logits, p):
    probs = softmax(logits, axis=-1)
    threshold = p * probs.max(axis=-1, keepdims=True)
    return np.where(probs <= threshold, -np.inf, logits)
# --8<-- [end:ex6-wrong-drops-the-edge]


# --8<-- [start:ex7-starter]
def packed_window_mask(doc_ids, window):
    """(n, n) booleans, True = may attend, for one row of documents packed
    end to end: doc_ids (n,) gives each token's document. Query i sees
    key j of its own document with i - window < j <= i."""
    n = len(doc_ids)
    # Your code: this lets every token see every other.
    return np.ones((n, n), dtype=bool)
# --8<-- [end:ex7-starter]


# --8<-- [start:ex7-solution]
def packed_window_mask(doc_ids, window):
    """(n, n) booleans, True = may attend, for one row of documents packed
    end to end: doc_ids (n,) gives each token's document. Query i sees
    key j of its own document with i - window < j <= i."""
    ids = np.asarray(doc_ids)
    i = np.arange(len(ids))[:, None]  # (n, 1) query positions
    j = np.arange(len(ids))[None, :]  # (1, n) key positions
    same = ids[:, None] == ids[None, :]  # no attention across documents
    return same & (j <= i) & (i - j < window)
# --8<-- [end:ex7-solution]


# --8<-- [start:ex5-wrong-no-ties]
# rejected with: a token tied with the k-th largest logit is kept too
def top_k_filter(logits, k):
    order = np.argsort(-logits, axis=-1, kind="stable")[..., :k]
    out = np.full_like(logits, -np.inf)
    np.put_along_axis(out, order, np.take_along_axis(logits, order, -1), -1)
    return out
# --8<-- [end:ex5-wrong-no-ties]


# --8<-- [start:ex5-wrong-k-past-vocabulary]
# rejected with: k = 9
def top_k_filter(logits, k):
    kth = np.sort(logits, axis=-1)[..., -k:-k + 1] if k <= logits.shape[-1] else None
    return np.where(logits < kth, -np.inf, logits)
# --8<-- [end:ex5-wrong-k-past-vocabulary]


# --8<-- [start:ex5-wrong-off-by-one]
# rejected with: on logits (10,), k = 3
def top_k_filter(logits, k):
    kth = np.sort(logits, axis=-1)[..., -k - 1:-k]
    return np.where(logits < kth, -np.inf, logits)
# --8<-- [end:ex5-wrong-off-by-one]


# --8<-- [start:ex6-wrong-plain-threshold]
# rejected with: not p itself
def min_p_filter(logits, p):
    return np.where(softmax(logits, axis=-1) < p, -np.inf, logits)
# --8<-- [end:ex6-wrong-plain-threshold]


# --8<-- [start:ex6-wrong-on-logits]
# rejected with: compare probabilities, not logits
def min_p_filter(logits, p):
    return np.where(logits < p * logits.max(-1, keepdims=True), -np.inf, logits)
# --8<-- [end:ex6-wrong-on-logits]


# --8<-- [start:ex6-wrong-global-max]
# rejected with: on logits
def min_p_filter(logits, p):
    probs = softmax(logits, axis=-1)
    return np.where(probs < p * probs.max(), -np.inf, logits)
# --8<-- [end:ex6-wrong-global-max]


# --8<-- [start:ex7-wrong-bidirectional]
# rejected with: the band reaches forward too
def packed_window_mask(doc_ids, window):
    ids = np.asarray(doc_ids)
    i = np.arange(len(ids))[:, None]  # (n, 1) query positions
    j = np.arange(len(ids))[None, :]  # (1, n) key positions
    same = ids[:, None] == ids[None, :]  # no attention across documents
    return same & (np.abs(i - j) < window)
# --8<-- [end:ex7-wrong-bidirectional]


# --8<-- [start:ex7-wrong-one-too-wide]
# rejected with: one too wide
def packed_window_mask(doc_ids, window):
    ids = np.asarray(doc_ids)
    i = np.arange(len(ids))[:, None]  # (n, 1) query positions
    j = np.arange(len(ids))[None, :]  # (1, n) key positions
    same = ids[:, None] == ids[None, :]  # no attention across documents
    return same & (j <= i) & (i - j <= window)
# --8<-- [end:ex7-wrong-one-too-wide]


# --8<-- [start:ex7-wrong-causal-only]
# rejected with: Not yet
def packed_window_mask(doc_ids, window):
    ids = np.asarray(doc_ids)
    i = np.arange(len(ids))[:, None]  # (n, 1) query positions
    j = np.arange(len(ids))[None, :]  # (1, n) key positions
    same = ids[:, None] == ids[None, :]  # no attention across documents
    return same & (j <= i)
# --8<-- [end:ex7-wrong-causal-only]


# --8<-- [start:ex7-wrong-one-document]
# rejected with: across documents
def packed_window_mask(doc_ids, window):
    ids = np.asarray(doc_ids)
    i = np.arange(len(ids))[:, None]  # (n, 1) query positions
    j = np.arange(len(ids))[None, :]  # (1, n) key positions
    same = ids[:, None] == ids[None, :]  # no attention across documents
    return (j <= i) & (i - j < window)
# --8<-- [end:ex7-wrong-one-document]



# --8<-- [start:ex8-starter]
def sample_with_temperature(logits, temperature, u):
    """One token id per row of logits (..., vocab_size), drawn at
    temperature T > 0 with the uniform numbers u (...) in [0, 1): the
    first token whose cumulative probability exceeds u."""
    # Your code: this is greedy decoding, what sampling becomes as T -> 0.
    return np.argmax(logits, axis=-1)
# --8<-- [end:ex8-starter]


# --8<-- [start:ex8-solution]
def sample_with_temperature(logits, temperature, u):
    """One token id per row of logits (..., vocab_size), drawn at
    temperature T > 0 with the uniform numbers u (...) in [0, 1): the
    first token whose cumulative probability exceeds u."""
    probs = softmax(logits / temperature, axis=-1)  # (..., vocab); stable
    cumulative = np.cumsum(probs, axis=-1)  # (..., vocab), ends at ~1
    # Tokens whose cumulative probability is still <= u come before the
    # one u falls on: counting them gives its index.
    ids = np.sum(cumulative <= np.asarray(u)[..., None], axis=-1)  # (...)
    return np.minimum(ids, logits.shape[-1] - 1)  # u past a rounded-down end
# --8<-- [end:ex8-solution]


# --8<-- [start:ex8-wrong-after-softmax]
# rejected with: after the softmax
def sample_with_temperature(logits, temperature, u):
    cumulative = np.cumsum(softmax(logits, axis=-1) / temperature, axis=-1)
    ids = np.sum(cumulative <= np.asarray(u)[..., None], axis=-1)
    return np.minimum(ids, logits.shape[-1] - 1)
# --8<-- [end:ex8-wrong-after-softmax]


# --8<-- [start:ex8-wrong-multiplied]
# rejected with: logits x T
def sample_with_temperature(logits, temperature, u):
    cumulative = np.cumsum(softmax(logits * temperature, axis=-1), axis=-1)
    ids = np.sum(cumulative <= np.asarray(u)[..., None], axis=-1)
    return np.minimum(ids, logits.shape[-1] - 1)
# --8<-- [end:ex8-wrong-multiplied]


# --8<-- [start:ex8-wrong-no-temperature]
# rejected with: those of T = 1
def sample_with_temperature(logits, temperature, u):
    cumulative = np.cumsum(softmax(logits, axis=-1), axis=-1)
    ids = np.sum(cumulative <= np.asarray(u)[..., None], axis=-1)
    return np.minimum(ids, logits.shape[-1] - 1)
# --8<-- [end:ex8-wrong-no-temperature]


# --8<-- [start:ex8-wrong-unstable]
# rejected with: spread over ±1000
def sample_with_temperature(logits, temperature, u):
    e = np.exp(logits / temperature)
    cumulative = np.cumsum(e / e.sum(axis=-1, keepdims=True), axis=-1)
    ids = np.sum(cumulative <= np.asarray(u)[..., None], axis=-1)
    return np.minimum(ids, logits.shape[-1] - 1)
# --8<-- [end:ex8-wrong-unstable]


# --8<-- [start:ex8-wrong-flattened]
# rejected with: on logits (2, 3, 100, 17)
def sample_with_temperature(logits, temperature, u):
    z = logits.reshape(-1, logits.shape[-1])
    cumulative = np.cumsum(softmax(z / temperature, axis=-1), axis=-1)
    ids = np.sum(cumulative <= np.ravel(u)[:, None], axis=-1)
    return np.minimum(ids, logits.shape[-1] - 1)
# --8<-- [end:ex8-wrong-flattened]


# --8<-- [start:ex8-wrong-draws-zero-probability]
# rejected with: u = 0
def sample_with_temperature(logits, temperature, u):
    probs = softmax(logits / temperature, axis=-1)
    cumulative = np.cumsum(probs, axis=-1)
    ids = np.sum(cumulative < np.asarray(u)[..., None], axis=-1)
    return np.minimum(ids, logits.shape[-1] - 1)
# --8<-- [end:ex8-wrong-draws-zero-probability]


# --8<-- [start:ex8-wrong-past-the-end]
# rejected with: should give token
def sample_with_temperature(logits, temperature, u):
    probs = softmax(logits / temperature, axis=-1)
    cumulative = np.cumsum(probs, axis=-1)
    return np.sum(cumulative <= np.asarray(u)[..., None], axis=-1)
# --8<-- [end:ex8-wrong-past-the-end]


# --8<-- [start:ex9-starter]
def beam_step(scores, logits, beam_width):
    """The beam_width best one-token extensions of n_beams beams, best
    first. scores (..., n_beams): each beam's total log-probability;
    logits (..., n_beams, vocab_size): its next token's logits. Returns
    (beam, token, score), each (..., beam_width); leading axes: prompts."""
    # Your code: right for one prompt whose logits are log-probabilities.
    total = scores[:, None] + logits  # (n_beams, vocab)
    best = np.argsort(-total, axis=None, kind="stable")[:beam_width]
    beam, token = np.divmod(best, total.shape[-1])  # flat -> (row, col)
    return beam, token, total[beam, token]
# --8<-- [end:ex9-starter]


# --8<-- [start:ex9-solution]
def beam_step(scores, logits, beam_width):
    """The beam_width best one-token extensions of n_beams beams, best
    first. scores (..., n_beams): each beam's total log-probability;
    logits (..., n_beams, vocab_size): its next token's logits. Returns
    (beam, token, score), each (..., beam_width); leading axes: prompts."""
    vocab_size = logits.shape[-1]
    # log_softmax is stable at logits near ±1000 and keeps -inf as -inf.
    total = scores[..., None] + log_softmax(logits, axis=-1)
    flat = total.reshape(total.shape[:-2] + (-1,))  # (..., n_beams * vocab)
    best = np.argsort(-flat, axis=-1, kind="stable")[..., :beam_width]
    beam, token = np.divmod(best, vocab_size)  # (..., beam_width) each
    return beam, token, np.take_along_axis(flat, best, axis=-1)
# --8<-- [end:ex9-solution]


# --8<-- [start:ex9-wrong-raw-logits]
# rejected with: you added the raw logits
def beam_step(scores, logits, beam_width):
    total = scores[..., None] + logits
    flat = total.reshape(total.shape[:-2] + (-1,))
    best = np.argsort(-flat, axis=-1, kind="stable")[..., :beam_width]
    beam, token = np.divmod(best, logits.shape[-1])
    return beam, token, np.take_along_axis(flat, best, axis=-1)
# --8<-- [end:ex9-wrong-raw-logits]


# --8<-- [start:ex9-wrong-no-scores]
# rejected with: this step's log-probabilities alone
def beam_step(scores, logits, beam_width):
    total = log_softmax(logits, axis=-1)
    flat = total.reshape(total.shape[:-2] + (-1,))
    best = np.argsort(-flat, axis=-1, kind="stable")[..., :beam_width]
    beam, token = np.divmod(best, logits.shape[-1])
    return beam, token, np.take_along_axis(flat, best, axis=-1) + 0 * beam
# --8<-- [end:ex9-wrong-no-scores]


# --8<-- [start:ex9-wrong-flat-index]
# rejected with: beam = index // vocab_size
def beam_step(scores, logits, beam_width):
    total = scores[..., None] + log_softmax(logits, axis=-1)
    flat = total.reshape(total.shape[:-2] + (-1,))
    best = np.argsort(-flat, axis=-1, kind="stable")[..., :beam_width]
    token, beam = np.divmod(best, logits.shape[-2])
    return beam, token, np.take_along_axis(flat, best, axis=-1)
# --8<-- [end:ex9-wrong-flat-index]


# --8<-- [start:ex9-wrong-best-token-per-beam]
# rejected with: one per beam?
def beam_step(scores, logits, beam_width):
    total = scores[..., None] + log_softmax(logits, axis=-1)
    token = np.argmax(total, axis=-1)  # (..., n_beams): one token per beam
    best_of_beam = np.take_along_axis(total, token[..., None], axis=-1)[..., 0]
    beam = np.argsort(-best_of_beam, axis=-1, kind="stable")[..., :beam_width]
    token = np.take_along_axis(token, beam, axis=-1)
    return beam, token, np.take_along_axis(best_of_beam, beam, axis=-1)
# --8<-- [end:ex9-wrong-best-token-per-beam]


# --8<-- [start:ex9-wrong-one-prompt-only]
# rejected with: on 3 beams, logits (2, 3, 11)
def beam_step(scores, logits, beam_width):
    total = scores[..., None] + log_softmax(logits, axis=-1)
    best = np.argsort(-total, axis=None, kind="stable")[:beam_width]
    beam, token = np.divmod(best, total.shape[-1])
    return beam, token, total.ravel()[best]
# --8<-- [end:ex9-wrong-one-prompt-only]


# --8<-- [start:ex10-starter]
def padded_cached_attention(q, k, v, pad):
    """Causal attention of the n_q newest tokens of a batch of sequences
    padded on the left: q (batch, heads, n_q, d) over k, v (batch, heads,
    n_k, d), the cache then the new tokens; the first pad[b] keys of
    sequence b are padding, seen by no query. Returns (batch, heads, n_q,
    d)."""
    n_q, n_k = q.shape[-2], k.shape[-2]
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    # Your code: every query sees every key.
    return softmax(scores, axis=-1) @ v
# --8<-- [end:ex10-starter]


# --8<-- [start:ex10-solution]
def padded_cached_attention(q, k, v, pad):
    """Causal attention of the n_q newest tokens of a batch of sequences
    padded on the left: q (batch, heads, n_q, d) over k, v (batch, heads,
    n_k, d), the cache then the new tokens; the first pad[b] keys of
    sequence b are padding, seen by no query. Returns (batch, heads, n_q,
    d)."""
    n_q, n_k = q.shape[-2], k.shape[-2]
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    query_pos = np.arange(n_k - n_q, n_k)[:, None]  # after the cache
    key_pos = np.arange(n_k)[None, :]
    causal = key_pos <= query_pos  # (n_q, n_k)
    real = key_pos >= np.asarray(pad)[:, None]  # (batch, n_k)
    allowed = causal & real[:, None, None, :]  # (batch, 1, n_q, n_k)
    return softmax(np.where(allowed, scores, -np.inf), axis=-1) @ v
# --8<-- [end:ex10-solution]

# --8<-- [start:ex10-wrong-no-offset]
# rejected with: as if nothing were cached
def padded_cached_attention(q, k, v, pad):
    n_q, n_k = q.shape[-2], k.shape[-2]
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    query_pos = np.arange(n_q)[:, None]  # as if nothing were cached
    key_pos = np.arange(n_k)[None, :]
    causal = key_pos <= query_pos  # (n_q, n_k)
    real = key_pos >= np.asarray(pad)[:, None]  # (batch, n_k)
    allowed = causal & real[:, None, None, :]  # (batch, 1, n_q, n_k)
    return softmax(np.where(allowed, scores, -np.inf), axis=-1) @ v
# --8<-- [end:ex10-wrong-no-offset]

# --8<-- [start:ex10-wrong-one-ahead]
# rejected with: also sees the key after its own
def padded_cached_attention(q, k, v, pad):
    n_q, n_k = q.shape[-2], k.shape[-2]
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    query_pos = np.arange(n_k - n_q + 1, n_k + 1)[:, None]  # one too far
    key_pos = np.arange(n_k)[None, :]
    causal = key_pos <= query_pos  # (n_q, n_k)
    real = key_pos >= np.asarray(pad)[:, None]  # (batch, n_k)
    allowed = causal & real[:, None, None, :]  # (batch, 1, n_q, n_k)
    return softmax(np.where(allowed, scores, -np.inf), axis=-1) @ v
# --8<-- [end:ex10-wrong-one-ahead]

# --8<-- [start:ex10-wrong-pads-only]
# rejected with: block the keys after each query
def padded_cached_attention(q, k, v, pad):
    n_q, n_k = q.shape[-2], k.shape[-2]
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    query_pos = np.arange(n_k - n_q, n_k)[:, None]  # after the cache
    key_pos = np.arange(n_k)[None, :]
    causal = key_pos <= query_pos  # (n_q, n_k)
    real = key_pos >= np.asarray(pad)[:, None]  # (batch, n_k)
    allowed = real[:, None, None, :]  # no causal mask
    return softmax(np.where(allowed, scores, -np.inf), axis=-1) @ v
# --8<-- [end:ex10-wrong-pads-only]

# --8<-- [start:ex10-wrong-no-pads]
# rejected with: padding
def padded_cached_attention(q, k, v, pad):
    n_q, n_k = q.shape[-2], k.shape[-2]
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    query_pos = np.arange(n_k - n_q, n_k)[:, None]  # after the cache
    key_pos = np.arange(n_k)[None, :]
    causal = key_pos <= query_pos  # (n_q, n_k)
    real = key_pos >= np.asarray(pad)[:, None]  # (batch, n_k)
    allowed = causal  # the pads are attended
    return softmax(np.where(allowed, scores, -np.inf), axis=-1) @ v
# --8<-- [end:ex10-wrong-no-pads]

# --8<-- [start:ex10-wrong-right-padding]
# rejected with: at the start
def padded_cached_attention(q, k, v, pad):
    n_q, n_k = q.shape[-2], k.shape[-2]
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    query_pos = np.arange(n_k - n_q, n_k)[:, None]  # after the cache
    key_pos = np.arange(n_k)[None, :]
    causal = key_pos <= query_pos  # (n_q, n_k)
    real = key_pos < n_k - np.asarray(pad)[:, None]  # pads at the end
    allowed = causal & real[:, None, None, :]  # (batch, 1, n_q, n_k)
    return softmax(np.where(allowed, scores, -np.inf), axis=-1) @ v
# --8<-- [end:ex10-wrong-right-padding]

# --8<-- [start:ex10-wrong-unshifted-softmax]
# rejected with: the scores near ±1000
def padded_cached_attention(q, k, v, pad):
    n_q, n_k = q.shape[-2], k.shape[-2]
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    query_pos = np.arange(n_k - n_q, n_k)[:, None]  # after the cache
    key_pos = np.arange(n_k)[None, :]
    causal = key_pos <= query_pos  # (n_q, n_k)
    real = key_pos >= np.asarray(pad)[:, None]  # (batch, n_k)
    allowed = causal & real[:, None, None, :]  # (batch, 1, n_q, n_k)
    e = np.where(allowed, np.exp(scores), 0.0)  # exp(1000) overflows
    return e / e.sum(axis=-1, keepdims=True) @ v
# --8<-- [end:ex10-wrong-unshifted-softmax]
