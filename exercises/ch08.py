"""Practice exercises of chapter 8 (long contexts): starters and worked solutions, one
source for the page and the notebook.

Each exercise has a `exN-starter` and a `exN-solution` section; the page includes them by
snippet, and tests/practice/test_exercises.py runs each section on its own (after the
`imports` section) through its self-check. Sections `exN-wrong-<what>` are plausible
wrong answers the check must reject (never shown on a page).
"""

# --8<-- [start:imports]
import math

import numpy as np

from attention.practice.ch08 import (
    check_alibi_decode,
    check_blocks_to_read,
    check_roll_cache,
    check_window_mask_after_cache,
    check_yarn_inv_freq,
)
# --8<-- [end:imports]

# --8<-- [start:ex1-starter]
def yarn_inv_freq(d_head, base, factor, original_max_positions, *,
                  beta_fast=32.0, beta_slow=1.0, truncate=True):
    """YaRN's inverse frequencies (d_head / 2,): pairs that turn more than
    beta_fast times over the original context keep their frequency, pairs
    that turn fewer than beta_slow times are divided by factor, and a ramp
    over the pair index k mixes the two in between."""
    plain = 1.0 / base ** (np.arange(0, d_head, 2) / d_head)  # (d_head/2,)
    # Your code: this is linear interpolation, every pair divided.
    return plain / factor
# --8<-- [end:ex1-starter]


# --8<-- [start:ex1-solution]
def yarn_inv_freq(d_head, base, factor, original_max_positions, *,
                  beta_fast=32.0, beta_slow=1.0, truncate=True):
    """YaRN's inverse frequencies (d_head / 2,): pairs that turn more than
    beta_fast times over the original context keep their frequency, pairs
    that turn fewer than beta_slow times are divided by factor, and a ramp
    over the pair index k mixes the two in between."""
    plain = 1.0 / base ** (np.arange(0, d_head, 2) / d_head)  # (d_head/2,)

    def pair_for(turns):
        # Pair k turns L * θ_k / 2π times over L positions; solve
        # L * base**(-2k/d) / 2π = turns for k (a fractional index).
        ratio = original_max_positions / (turns * 2 * math.pi)
        return d_head * math.log(ratio) / (2 * math.log(base))

    low, high = pair_for(beta_fast), pair_for(beta_slow)  # low < high
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d_head - 1)
    if low == high:
        high += 0.001  # a ramp of no width: a step
    ramp = np.clip((np.arange(d_head // 2) - low) / (high - low), 0, 1)
    return plain * (1 - ramp) + plain / factor * ramp  # ramp 1: interpolated
# --8<-- [end:ex1-solution]


# --8<-- [start:ex1-wrong-ramp-inverted]
# rejected with: the ramp runs the wrong way
def yarn_inv_freq(d_head, base, factor, original_max_positions, *,
                  beta_fast=32.0, beta_slow=1.0, truncate=True):
    plain = 1.0 / base ** (np.arange(0, d_head, 2) / d_head)
    pair = lambda t: d_head * math.log(original_max_positions / (t * 2 * math.pi)) / (2 * math.log(base))
    low, high = pair(beta_fast), pair(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d_head - 1)
    ramp = np.clip((np.arange(d_head // 2) - low) / max(high - low, 0.001), 0, 1)
    return plain * ramp + plain / factor * (1 - ramp)
# --8<-- [end:ex1-wrong-ramp-inverted]


# --8<-- [start:ex1-wrong-always-truncated]
# rejected with: truncate decides the ramp's edges
def yarn_inv_freq(d_head, base, factor, original_max_positions, *,
                  beta_fast=32.0, beta_slow=1.0, truncate=True):
    plain = 1.0 / base ** (np.arange(0, d_head, 2) / d_head)
    pair = lambda t: d_head * math.log(original_max_positions / (t * 2 * math.pi)) / (2 * math.log(base))
    low, high = math.floor(pair(beta_fast)), math.ceil(pair(beta_slow))
    low, high = max(low, 0), min(high, d_head - 1)
    ramp = np.clip((np.arange(d_head // 2) - low) / max(high - low, 0.001), 0, 1)
    return plain * (1 - ramp) + plain / factor * ramp
# --8<-- [end:ex1-wrong-always-truncated]


# --8<-- [start:ex1-wrong-betas-swapped]
# rejected with: beta_fast and beta_slow are swapped
def yarn_inv_freq(d_head, base, factor, original_max_positions, *,
                  beta_fast=32.0, beta_slow=1.0, truncate=True):
    return _yarn(d_head, base, factor, original_max_positions, beta_slow, beta_fast, truncate)


def _yarn(d_head, base, factor, original, beta_fast, beta_slow, truncate):
    plain = 1.0 / base ** (np.arange(0, d_head, 2) / d_head)
    pair = lambda t: d_head * math.log(original / (t * 2 * math.pi)) / (2 * math.log(base))
    low, high = pair(beta_fast), pair(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d_head - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(d_head // 2) - low) / (high - low), 0, 1)
    return plain * (1 - ramp) + plain / factor * ramp
# --8<-- [end:ex1-wrong-betas-swapped]


# --8<-- [start:ex1-wrong-ramp-over-features]
# rejected with: on d_head 64, base 10000
def yarn_inv_freq(d_head, base, factor, original_max_positions, *,
                  beta_fast=32.0, beta_slow=1.0, truncate=True):
    plain = 1.0 / base ** (np.arange(0, d_head, 2) / d_head)
    pair = lambda t: d_head * math.log(original_max_positions / (t * 2 * math.pi)) / (2 * math.log(base))
    low, high = pair(beta_fast), pair(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    ramp = np.clip((np.arange(0, d_head, 2) - low) / max(high - low, 0.001), 0, 1)
    return plain * (1 - ramp) + plain / factor * ramp
# --8<-- [end:ex1-wrong-ramp-over-features]


# --8<-- [start:ex1-wrong-clamped-past-the-end]
# rejected with: base 10, factor 4
def yarn_inv_freq(d_head, base, factor, original_max_positions, *,
                  beta_fast=32.0, beta_slow=1.0, truncate=True):
    """YaRN's inverse frequencies (d_head / 2,): pairs that turn more than
    beta_fast times over the original context keep their frequency, pairs
    that turn fewer than beta_slow times are divided by factor, and a ramp
    over the pair index k mixes the two in between."""
    plain = 1.0 / base ** (np.arange(0, d_head, 2) / d_head)  # (d_head/2,)

    def pair_for(turns):
        # Pair k turns L * θ_k / 2π times over L positions; solve
        # L * base**(-2k/d) / 2π = turns for k (a fractional index).
        ratio = original_max_positions / (turns * 2 * math.pi)
        return d_head * math.log(ratio) / (2 * math.log(base))

    low, high = pair_for(beta_fast), pair_for(beta_slow)  # low < high
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d_head)  # one past the last index
    if low == high:
        high += 0.001  # a ramp of no width: a step
    ramp = np.clip((np.arange(d_head // 2) - low) / (high - low), 0, 1)
    return plain * (1 - ramp) + plain / factor * ramp  # ramp 1: interpolated
# --8<-- [end:ex1-wrong-clamped-past-the-end]


# --8<-- [start:ex1-wrong-other-defaults]
# rejected with: left to their defaults
def yarn_inv_freq(d_head, base, factor, original_max_positions, *,
                  beta_fast=16.0, beta_slow=1.0, truncate=True):
    """YaRN's inverse frequencies (d_head / 2,): pairs that turn more than
    beta_fast times over the original context keep their frequency, pairs
    that turn fewer than beta_slow times are divided by factor, and a ramp
    over the pair index k mixes the two in between."""
    plain = 1.0 / base ** (np.arange(0, d_head, 2) / d_head)  # (d_head/2,)

    def pair_for(turns):
        # Pair k turns L * θ_k / 2π times over L positions; solve
        # L * base**(-2k/d) / 2π = turns for k (a fractional index).
        ratio = original_max_positions / (turns * 2 * math.pi)
        return d_head * math.log(ratio) / (2 * math.log(base))

    low, high = pair_for(beta_fast), pair_for(beta_slow)  # low < high
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d_head - 1)
    if low == high:
        high += 0.001  # a ramp of no width: a step
    ramp = np.clip((np.arange(d_head // 2) - low) / (high - low), 0, 1)
    return plain * (1 - ramp) + plain / factor * ramp  # ramp 1: interpolated
# --8<-- [end:ex1-wrong-other-defaults]


# --8<-- [start:ex2-starter]
def window_mask_after_cache(n_q, n_k, window, n_sinks=0):
    """(n_q, n_k) booleans, True = may attend: the n_q queries are the last
    n_q of n_k tokens; each sees itself, the window - 1 keys before it,
    and the first n_sinks positions (never a key after itself)."""
    # Your code: this lets every query see every key.
    return np.ones((n_q, n_k), dtype=bool)
# --8<-- [end:ex2-starter]


# --8<-- [start:ex2-solution]
def window_mask_after_cache(n_q, n_k, window, n_sinks=0):
    """(n_q, n_k) booleans, True = may attend: the n_q queries are the last
    n_q of n_k tokens; each sees itself, the window - 1 keys before it,
    and the first n_sinks positions (never a key after itself)."""
    i = np.arange(n_k - n_q, n_k)[:, None]  # (n_q, 1): after the cache
    j = np.arange(n_k)[None, :]  # (1, n_k) key positions
    near = i - j < window  # itself and the window - 1 before it
    return (j <= i) & (near | (j < n_sinks))
# --8<-- [end:ex2-solution]


# --8<-- [start:ex2-wrong-window-plus-one]
# rejected with: each query sees window + 1 keys
def window_mask_after_cache(n_q, n_k, window, n_sinks=0):
    i = np.arange(n_k - n_q, n_k)[:, None]
    j = np.arange(n_k)[None, :]
    return (j <= i) & ((i - j <= window) | (j < n_sinks))
# --8<-- [end:ex2-wrong-window-plus-one]


# --8<-- [start:ex2-wrong-both-sides]
# rejected with: the band reaches forward too
def window_mask_after_cache(n_q, n_k, window, n_sinks=0):
    i = np.arange(n_k - n_q, n_k)[:, None]
    j = np.arange(n_k)[None, :]
    return (np.abs(i - j) < window) | ((j < n_sinks) & (j <= i))
# --8<-- [end:ex2-wrong-both-sides]


# --8<-- [start:ex2-wrong-top-left]
# rejected with: your window starts at query position 0
def window_mask_after_cache(n_q, n_k, window, n_sinks=0):
    i = np.arange(n_q)[:, None]  # as if nothing were cached
    j = np.arange(n_k)[None, :]
    return (j <= i) & ((i - j < window) | (j < n_sinks))
# --8<-- [end:ex2-wrong-top-left]


# --8<-- [start:ex2-wrong-integers]
# rejected with: it must be boolean
def window_mask_after_cache(n_q, n_k, window, n_sinks=0):
    i = np.arange(n_k - n_q, n_k)[:, None]
    j = np.arange(n_k)[None, :]
    return ((j <= i) & ((i - j < window) | (j < n_sinks))).astype(int)
# --8<-- [end:ex2-wrong-integers]


# --8<-- [start:ex2-wrong-no-sinks]
# rejected with: the first n_sinks positions
def window_mask_after_cache(n_q, n_k, window, n_sinks=0):
    i = np.arange(n_k - n_q, n_k)[:, None]
    j = np.arange(n_k)[None, :]
    return (j <= i) & (i - j < window)
# --8<-- [end:ex2-wrong-no-sinks]


# --8<-- [start:ex2-wrong-sinks-see-ahead]
# rejected with: never a key after its own position
def window_mask_after_cache(n_q, n_k, window, n_sinks=0):
    i = np.arange(n_k - n_q, n_k)[:, None]
    j = np.arange(n_k)[None, :]
    return ((j <= i) & (i - j < window)) | (j < n_sinks)
# --8<-- [end:ex2-wrong-sinks-see-ahead]


# --8<-- [start:ex3-starter]
def roll_cache(k_cache, v_cache, positions, k_new, v_new, window, n_sinks):
    """Append k_new, v_new (..., n_new, d_head) to the cache (..., kept,
    d_head) whose tokens sit at `positions` (kept,), then drop what no
    later query can see. Returns (k_cache, v_cache, positions)."""
    start = positions[-1] + 1 if len(positions) else 0
    new_positions = np.arange(start, start + k_new.shape[-2])
    keys = np.concatenate([k_cache, k_new], axis=-2)  # (..., kept + n_new, d)
    values = np.concatenate([v_cache, v_new], axis=-2)
    positions = np.concatenate([positions, new_positions])
    # Your code: this keeps everything; the window and the sinks drop some.
    return keys, values, positions
# --8<-- [end:ex3-starter]


# --8<-- [start:ex3-solution]
def roll_cache(k_cache, v_cache, positions, k_new, v_new, window, n_sinks):
    """Append k_new, v_new (..., n_new, d_head) to the cache (..., kept,
    d_head) whose tokens sit at `positions` (kept,), then drop what no
    later query can see. Returns (k_cache, v_cache, positions)."""
    start = positions[-1] + 1 if len(positions) else 0
    new_positions = np.arange(start, start + k_new.shape[-2])
    keys = np.concatenate([k_cache, k_new], axis=-2)  # (..., kept + n_new, d)
    values = np.concatenate([v_cache, v_new], axis=-2)
    positions = np.concatenate([positions, new_positions])
    # The next query, at `following`, sees itself and the window - 1 before.
    following = new_positions[-1] + 1
    keep = (positions > following - window) | (positions < n_sinks)
    return keys[..., keep, :], values[..., keep, :], positions[keep]
# --8<-- [end:ex3-solution]


# --8<-- [start:ex3-wrong-one-too-many]
# rejected with: one too many
def roll_cache(k_cache, v_cache, positions, k_new, v_new, window, n_sinks):
    start = positions[-1] + 1 if len(positions) else 0
    new = np.arange(start, start + k_new.shape[-2])
    keys, values = (np.concatenate(p, axis=-2) for p in ((k_cache, k_new), (v_cache, v_new)))
    positions = np.concatenate([positions, new])
    keep = (positions > new[-1] - window) | (positions < n_sinks)
    return keys[..., keep, :], values[..., keep, :], positions[keep]
# --8<-- [end:ex3-wrong-one-too-many]


# --8<-- [start:ex3-wrong-no-sinks]
# rejected with: the sinks, the first n_sinks positions, are never dropped
def roll_cache(k_cache, v_cache, positions, k_new, v_new, window, n_sinks):
    start = positions[-1] + 1 if len(positions) else 0
    new = np.arange(start, start + k_new.shape[-2])
    keys, values = (np.concatenate(p, axis=-2) for p in ((k_cache, k_new), (v_cache, v_new)))
    positions = np.concatenate([positions, new])
    keep = positions > new[-1] + 1 - window
    return keys[..., keep, :], values[..., keep, :], positions[keep]
# --8<-- [end:ex3-wrong-no-sinks]


# --8<-- [start:ex3-wrong-sinks-last]
# rejected with: in the wrong order
def roll_cache(k_cache, v_cache, positions, k_new, v_new, window, n_sinks):
    start = positions[-1] + 1 if len(positions) else 0
    new = np.arange(start, start + k_new.shape[-2])
    keys, values = (np.concatenate(p, axis=-2) for p in ((k_cache, k_new), (v_cache, v_new)))
    positions = np.concatenate([positions, new])
    recent = positions > new[-1] + 1 - window
    order = np.concatenate([np.flatnonzero(recent), np.flatnonzero(~recent & (positions < n_sinks))])
    return keys[..., order, :], values[..., order, :], positions[order]
# --8<-- [end:ex3-wrong-sinks-last]


# --8<-- [start:ex3-wrong-last-axis]
# rejected with: k_cache
def roll_cache(k_cache, v_cache, positions, k_new, v_new, window, n_sinks):
    start = positions[-1] + 1 if len(positions) else 0
    new = np.arange(start, start + k_new.shape[-2])
    keys, values = (np.concatenate(p, axis=-2) for p in ((k_cache, k_new), (v_cache, v_new)))
    positions = np.concatenate([positions, new])
    keep = (positions > new[-1] + 1 - window) | (positions < n_sinks)
    n = int(keep.sum())
    return keys[..., -n:, :], values[..., -n:, :], positions[keep]
# --8<-- [end:ex3-wrong-last-axis]


# --8<-- [start:ex3-wrong-axis-2]
# rejected with: raised ValueError
def roll_cache(k_cache, v_cache, positions, k_new, v_new, window, n_sinks):
    """Append k_new, v_new (..., n_new, d_head) to the cache (..., kept,
    d_head) whose tokens sit at `positions` (kept,), then drop what no
    later query can see. Returns (k_cache, v_cache, positions)."""
    start = positions[-1] + 1 if len(positions) else 0
    new_positions = np.arange(start, start + k_new.shape[-2])
    keys = np.concatenate([k_cache, k_new], axis=2)  # (..., kept + n_new, d)
    values = np.concatenate([v_cache, v_new], axis=2)
    positions = np.concatenate([positions, new_positions])
    # The next query, at `following`, sees itself and the window - 1 before.
    following = new_positions[-1] + 1
    keep = (positions > following - window) | (positions < n_sinks)
    return keys[..., keep, :], values[..., keep, :], positions[keep]
# --8<-- [end:ex3-wrong-axis-2]


# --8<-- [start:ex4-starter]
def alibi_decode(q, k_cache, v_cache, positions, query_position):
    """One decode step of ALiBi attention. q (h, d): the new token's query
    per head, at query_position; k_cache, v_cache (h, n, d): cached keys
    and values at positions (n,), integers in increasing order. Head h
    adds -m_h * (query_position - position) to each score q·k / √d.
    Returns (h, d), in q's dtype."""
    h, d = q.shape
    scores = np.einsum("hd,hnd->hn", q, k_cache) / math.sqrt(d)
    # Your code: no bias yet, every distance counts the same.
    weights = np.exp(scores) / np.sum(np.exp(scores), axis=-1, keepdims=True)
    return np.einsum("hn,hnd->hd", weights, v_cache)
# --8<-- [end:ex4-starter]


# --8<-- [start:ex4-solution]
def alibi_decode(q, k_cache, v_cache, positions, query_position):
    """One decode step of ALiBi attention. q (h, d): the new token's query
    per head, at query_position; k_cache, v_cache (h, n, d): cached keys
    and values at positions (n,), integers in increasing order. Head h
    adds -m_h * (query_position - position) to each score q·k / √d.
    Returns (h, d), in q's dtype."""
    h, d = q.shape
    p = 2 ** math.floor(math.log2(h))  # the power of two <= h
    slopes = 2.0 ** (-8.0 * np.arange(1, p + 1) / p)
    extra = 2.0 ** (-4.0 * np.arange(1, 2 * (h - p), 2) / p)  # odd ones of 2p
    slopes = np.concatenate([slopes, extra])
    distance = (query_position - np.asarray(positions)).astype(np.float64)
    scores = np.einsum("hd,hnd->hn", q, k_cache) / math.sqrt(d)
    scores = scores - slopes[:, None] * distance  # float64 from here
    scores -= np.max(scores, axis=-1, keepdims=True)  # no overflow
    weights = np.exp(scores)
    weights /= np.sum(weights, axis=-1, keepdims=True)
    return np.einsum("hn,hnd->hd", weights, v_cache).astype(q.dtype)
# --8<-- [end:ex4-solution]


# --8<-- [start:ex4-wrong-cache-index]
# rejected with: not its index in the cache
def alibi_decode(q, k_cache, v_cache, positions, query_position):
    h, d = q.shape
    p = 2 ** math.floor(math.log2(h))
    slopes = 2.0 ** (-8.0 * np.arange(1, p + 1) / p)
    extra = 2.0 ** (-4.0 * np.arange(1, 2 * (h - p), 2) / p)
    slopes = np.concatenate([slopes, extra])
    n = k_cache.shape[1]
    distance = (n - 1 - np.arange(n)).astype(np.float64)  # index in the cache
    scores = np.einsum("hd,hnd->hn", q, k_cache) / math.sqrt(d)
    scores = scores - slopes[:, None] * distance
    scores -= np.max(scores, axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= np.sum(weights, axis=-1, keepdims=True)
    return np.einsum("hn,hnd->hd", weights, v_cache).astype(q.dtype)
# --8<-- [end:ex4-wrong-cache-index]


# --8<-- [start:ex4-wrong-plain-geometric]
# rejected with: power-of-two head count only
def alibi_decode(q, k_cache, v_cache, positions, query_position):
    h, d = q.shape
    slopes = 2.0 ** (-8.0 * np.arange(1, h + 1) / h)  # right for 2, 4, 8 ...
    distance = (query_position - np.asarray(positions)).astype(np.float64)
    scores = np.einsum("hd,hnd->hn", q, k_cache) / math.sqrt(d)
    scores = scores - slopes[:, None] * distance
    scores -= np.max(scores, axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= np.sum(weights, axis=-1, keepdims=True)
    return np.einsum("hn,hnd->hd", weights, v_cache).astype(q.dtype)
# --8<-- [end:ex4-wrong-plain-geometric]


# --8<-- [start:ex4-wrong-sign]
# rejected with: distant keys are favoured
def alibi_decode(q, k_cache, v_cache, positions, query_position):
    h, d = q.shape
    p = 2 ** math.floor(math.log2(h))
    slopes = 2.0 ** (-8.0 * np.arange(1, p + 1) / p)
    extra = 2.0 ** (-4.0 * np.arange(1, 2 * (h - p), 2) / p)
    slopes = np.concatenate([slopes, extra])
    distance = (query_position - np.asarray(positions)).astype(np.float64)
    scores = np.einsum("hd,hnd->hn", q, k_cache) / math.sqrt(d)
    scores = scores + slopes[:, None] * distance
    scores -= np.max(scores, axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= np.sum(weights, axis=-1, keepdims=True)
    return np.einsum("hn,hnd->hd", weights, v_cache).astype(q.dtype)
# --8<-- [end:ex4-wrong-sign]


# --8<-- [start:ex4-wrong-unshifted]
# rejected with: overflowed
def alibi_decode(q, k_cache, v_cache, positions, query_position):
    h, d = q.shape
    p = 2 ** math.floor(math.log2(h))
    slopes = 2.0 ** (-8.0 * np.arange(1, p + 1) / p)
    extra = 2.0 ** (-4.0 * np.arange(1, 2 * (h - p), 2) / p)
    slopes = np.concatenate([slopes, extra])
    distance = (query_position - np.asarray(positions)).astype(np.float64)
    scores = np.einsum("hd,hnd->hn", q, k_cache) / math.sqrt(d)
    weights = np.exp(scores - slopes[:, None] * distance)
    weights /= np.sum(weights, axis=-1, keepdims=True)
    return np.einsum("hn,hnd->hd", weights, v_cache).astype(q.dtype)
# --8<-- [end:ex4-wrong-unshifted]


# --8<-- [start:ex4-wrong-positions-in-dtype]
# rejected with: Not yet
def alibi_decode(q, k_cache, v_cache, positions, query_position):
    h, d = q.shape
    p = 2 ** math.floor(math.log2(h))
    slopes = 2.0 ** (-8.0 * np.arange(1, p + 1) / p)
    extra = 2.0 ** (-4.0 * np.arange(1, 2 * (h - p), 2) / p)
    slopes = np.concatenate([slopes, extra]).astype(q.dtype)
    pos = np.asarray(positions, dtype=q.dtype)  # float32 rounds 2**32 + 7
    distance = q.dtype.type(query_position) - pos
    scores = np.einsum("hd,hnd->hn", q, k_cache) / math.sqrt(d)
    scores = scores - slopes[:, None] * distance
    scores -= np.max(scores, axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= np.sum(weights, axis=-1, keepdims=True)
    return np.einsum("hn,hnd->hd", weights, v_cache).astype(q.dtype)
# --8<-- [end:ex4-wrong-positions-in-dtype]


# --8<-- [start:ex4-wrong-package]
# rejected with: asks you not to use
def alibi_decode(q, k_cache, v_cache, positions, query_position):
    from attention.long_context.alibi import alibi_bias
    h, d = q.shape
    bias = alibi_bias(h, np.array([query_position]), np.asarray(positions))[:, 0]
    scores = np.einsum("hd,hnd->hn", q, k_cache) / math.sqrt(d) + bias
    scores -= np.max(scores, axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= np.sum(weights, axis=-1, keepdims=True)
    return np.einsum("hn,hnd->hd", weights, v_cache).astype(q.dtype)
# --8<-- [end:ex4-wrong-package]


# --8<-- [start:ex5-starter]
def blocks_to_read(q_start, q_end, block_size, window, n_sinks):
    """The key blocks (block b holds positions b * block_size to
    (b + 1) * block_size - 1) that queries q_start..q_end-1 read: query i
    sees keys j with i - window < j <= i, and the sinks j < n_sinks.
    Returns their indices, sorted, each once, as an integer array."""
    # Your code: this reads every block up to the last query's.
    return np.arange((q_end - 1) // block_size + 1)
# --8<-- [end:ex5-starter]


# --8<-- [start:ex5-solution]
def blocks_to_read(q_start, q_end, block_size, window, n_sinks):
    """The key blocks (block b holds positions b * block_size to
    (b + 1) * block_size - 1) that queries q_start..q_end-1 read: query i
    sees keys j with i - window < j <= i, and the sinks j < n_sinks.
    Returns their indices, sorted, each once, as an integer array."""
    first = max(q_start - window + 1, 0)  # the first query's oldest key
    near = np.arange(first // block_size, (q_end - 1) // block_size + 1)
    n_sinks = min(n_sinks, q_end)  # no query sees a sink after itself
    sinks = np.arange((n_sinks + block_size - 1) // block_size)
    return np.union1d(sinks, near).astype(np.int64)
# --8<-- [end:ex5-solution]


# --8<-- [start:ex5-wrong-no-sinks]
# rejected with: missing [0]
def blocks_to_read(q_start, q_end, block_size, window, n_sinks):
    first = max(q_start - window + 1, 0)
    return np.arange(first // block_size, (q_end - 1) // block_size + 1)
# --8<-- [end:ex5-wrong-no-sinks]


# --8<-- [start:ex5-wrong-window-plus-one]
# rejected with: never read
def blocks_to_read(q_start, q_end, block_size, window, n_sinks):
    first = max(q_start - window, 0)  # one key too far back
    near = np.arange(first // block_size, (q_end - 1) // block_size + 1)
    sinks = np.arange((min(n_sinks, q_end) + block_size - 1) // block_size)
    return np.union1d(sinks, near).astype(np.int64)
# --8<-- [end:ex5-wrong-window-plus-one]


# --8<-- [start:ex5-wrong-last-query-only]
# rejected with: missing
def blocks_to_read(q_start, q_end, block_size, window, n_sinks):
    first = max(q_end - window, 0)  # the window of the last query only
    near = np.arange(first // block_size, (q_end - 1) // block_size + 1)
    sinks = np.arange((min(n_sinks, q_end) + block_size - 1) // block_size)
    return np.union1d(sinks, near).astype(np.int64)
# --8<-- [end:ex5-wrong-last-query-only]


# --8<-- [start:ex5-wrong-end-inclusive]
# rejected with: never read
def blocks_to_read(q_start, q_end, block_size, window, n_sinks):
    first = max(q_start - window + 1, 0)
    near = np.arange(first // block_size, q_end // block_size + 1)
    sinks = np.arange((min(n_sinks, q_end) + block_size - 1) // block_size)
    return np.union1d(sinks, near).astype(np.int64)
# --8<-- [end:ex5-wrong-end-inclusive]


# --8<-- [start:ex5-wrong-concatenated]
# rejected with: each once
def blocks_to_read(q_start, q_end, block_size, window, n_sinks):
    first = max(q_start - window + 1, 0)
    near = np.arange(first // block_size, (q_end - 1) // block_size + 1)
    sinks = np.arange((min(n_sinks, q_end) + block_size - 1) // block_size)
    return np.concatenate([sinks, near])  # a block in both is listed twice
# --8<-- [end:ex5-wrong-concatenated]
