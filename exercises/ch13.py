"""Practice exercises of chapter 13: starters, worked solutions and plausible wrong answers.

Each exercise has an `exN-starter` and an `exN-solution` section (the page includes them
by snippet) and `exN-wrong-<what>` sections that its self-check must reject (never shown;
tests/practice/test_wrong_answers.py runs them). Starter and solution define the same
name on purpose: the reader replaces the one with the other.
"""

# --8<-- [start:imports]
import math

import numpy as np

from attention.practice.ch13 import check_bucket, check_cross_attend
# --8<-- [end:imports]

# --8<-- [start:ex4-starter]
def bucket(relative, bidirectional, num_buckets=32, max_distance=128):
    """T5's bucket of each relative position (key - query), integers.

    bidirectional: half the buckets for keys on each side (the encoder);
    otherwise keys on the right all take bucket 0 (the decoder). Within a
    direction, half its buckets are one per distance; the rest are spread
    on a log scale up to max_distance; farther keys share the last.
    """
    # Your code: this gives every distance its own bucket, clipped.
    return np.minimum(np.abs(relative), num_buckets - 1)
# --8<-- [end:ex4-starter]


# --8<-- [start:ex4-solution]
def bucket(relative, bidirectional, num_buckets=32, max_distance=128):
    """T5's bucket of each relative position (key - query), integers.

    bidirectional: half the buckets for keys on each side (the encoder);
    otherwise keys on the right all take bucket 0 (the decoder). Within a
    direction, half its buckets are one per distance; the rest are spread
    on a log scale up to max_distance; farther keys share the last.
    """
    n = num_buckets // 2 if bidirectional else num_buckets
    if bidirectional:
        offset = np.where(relative > 0, n, 0)  # keys on the right
        distance = np.abs(relative)
    else:
        offset = 0
        distance = np.maximum(-relative, 0)    # the future: distance 0
    exact = n // 2
    scaled = (np.log(np.maximum(distance, exact) / exact)
              / math.log(max_distance / exact) * (n - exact))
    far = np.minimum(exact + scaled.astype(np.int64), n - 1)
    return offset + np.where(distance < exact, distance, far)
# --8<-- [end:ex4-solution]


# --8<-- [start:ex4-wrong-no-halving]
# rejected with: halve them first
def bucket(relative, bidirectional, num_buckets=32, max_distance=128):
    n = num_buckets
    offset = np.where(relative > 0, n, 0) if bidirectional else 0
    distance = np.abs(relative) if bidirectional else np.maximum(-relative, 0)
    exact = n // 2
    scaled = (np.log(np.maximum(distance, exact) / exact)
              / math.log(max_distance / exact) * (n - exact))
    far = np.minimum(exact + scaled.astype(np.int64), n - 1)
    return offset + np.where(distance < exact, distance, far)
# --8<-- [end:ex4-wrong-no-halving]


# --8<-- [start:ex4-wrong-no-clamp]
# rejected with: clamp the logarithmic buckets
def bucket(relative, bidirectional, num_buckets=32, max_distance=128):
    n = num_buckets // 2 if bidirectional else num_buckets
    offset = np.where(relative > 0, n, 0) if bidirectional else 0
    distance = np.abs(relative) if bidirectional else np.maximum(-relative, 0)
    exact = n // 2
    scaled = (np.log(np.maximum(distance, exact) / exact)
              / math.log(max_distance / exact) * (n - exact))
    return offset + np.where(distance < exact, distance,
                             exact + scaled.astype(np.int64))
# --8<-- [end:ex4-wrong-no-clamp]


# --8<-- [start:ex4-wrong-future-counted]
# rejected with: never seen
def bucket(relative, bidirectional, num_buckets=32, max_distance=128):
    n = num_buckets // 2
    offset = np.where(relative > 0, n, 0)
    distance = np.abs(relative)
    exact = n // 2
    scaled = (np.log(np.maximum(distance, exact) / exact)
              / math.log(max_distance / exact) * (n - exact))
    far = np.minimum(exact + scaled.astype(np.int64), n - 1)
    return offset + np.where(distance < exact, distance, far)
# --8<-- [end:ex4-wrong-future-counted]


# --8<-- [start:ex4-wrong-swapped-halves]
# rejected with: halves are swapped
def bucket(relative, bidirectional, num_buckets=32, max_distance=128):
    n = num_buckets // 2 if bidirectional else num_buckets
    offset = np.where(relative < 0, n, 0) if bidirectional else 0
    distance = np.abs(relative) if bidirectional else np.maximum(relative, 0)
    exact = n // 2
    scaled = (np.log(np.maximum(distance, exact) / exact)
              / math.log(max_distance / exact) * (n - exact))
    far = np.minimum(exact + scaled.astype(np.int64), n - 1)
    return offset + np.where(distance < exact, distance, far)
# --8<-- [end:ex4-wrong-swapped-halves]


# --8<-- [start:ex4-wrong-rounded]
# rejected with: were rounded
def bucket(relative, bidirectional, num_buckets=32, max_distance=128):
    n = num_buckets // 2 if bidirectional else num_buckets
    offset = np.where(relative > 0, n, 0) if bidirectional else 0
    distance = np.abs(relative) if bidirectional else np.maximum(-relative, 0)
    exact = n // 2
    scaled = (np.log(np.maximum(distance, exact) / exact)
              / math.log(max_distance / exact) * (n - exact))
    far = np.minimum(exact + np.round(scaled).astype(np.int64), n - 1)
    return offset + np.where(distance < exact, distance, far)
# --8<-- [end:ex4-wrong-rounded]


# --8<-- [start:ex5-starter]
def cross_attend(x, memory, valid, p, n_heads, cache):
    """One decoding step's cross-attention, with a cached encoder.

    x (batch, n_q, d_model): the decoder's new tokens; memory (batch,
    n_src, d_model): the encoder's output at the first step, None after;
    valid (batch, n_src): False on <pad> source tokens; p: W_q, W_k, W_v,
    W_o, each (d_model, d_model); cache: a dict, empty at the first step,
    where you keep cache["k"] and cache["v"], the memory's keys and values
    (batch, n_heads, n_src, d_head). Returns (batch, n_q, d_model).
    """
    # Your code: this ignores the memory altogether.
    return x @ p["W_o"]
# --8<-- [end:ex5-starter]


# --8<-- [start:ex5-solution]
def cross_attend(x, memory, valid, p, n_heads, cache):
    """One decoding step's cross-attention, with a cached encoder.

    x (batch, n_q, d_model): the decoder's new tokens; memory (batch,
    n_src, d_model): the encoder's output at the first step, None after;
    valid (batch, n_src): False on <pad> source tokens; p: W_q, W_k, W_v,
    W_o, each (d_model, d_model); cache: a dict, empty at the first step,
    where you keep cache["k"] and cache["v"], the memory's keys and values
    (batch, n_heads, n_src, d_head). Returns (batch, n_q, d_model).
    """
    def heads(a):  # (batch, n, d_model) -> (batch, h, n, d_head)
        return a.reshape(*a.shape[:2], n_heads, -1).swapaxes(1, 2)

    if not cache:  # the first step: project the memory, once
        cache["k"] = heads(memory @ p["W_k"])
        cache["v"] = heads(memory @ p["W_v"])
    q = heads(x @ p["W_q"])                        # (batch, h, n_q, d_head)
    scores = q @ cache["k"].swapaxes(-1, -2) / math.sqrt(q.shape[-1])
    scores = np.where(valid[:, None, None, :], scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)  # (batch, h, n_q, n_src)
    out = (weights @ cache["v"]).swapaxes(1, 2)     # (batch, n_q, h, d_head)
    return out.reshape(x.shape) @ p["W_o"]
# --8<-- [end:ex5-solution]


# --8<-- [start:ex5-wrong-recompute]
# rejected with: read the keys and values from the cache
def cross_attend(x, memory, valid, p, n_heads, cache):
    def heads(a):
        return a.reshape(*a.shape[:2], n_heads, -1).swapaxes(1, 2)
    k, v = heads(memory @ p["W_k"]), heads(memory @ p["W_v"])
    cache["k"], cache["v"] = k, v
    q = heads(x @ p["W_q"])
    scores = q @ k.swapaxes(-1, -2) / math.sqrt(q.shape[-1])
    scores = np.where(valid[:, None, None, :], scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return (weights @ v).swapaxes(1, 2).reshape(x.shape) @ p["W_o"]
# --8<-- [end:ex5-wrong-recompute]


# --8<-- [start:ex5-wrong-no-mask]
# rejected with: padded source tokens were read
def cross_attend(x, memory, valid, p, n_heads, cache):
    def heads(a):
        return a.reshape(*a.shape[:2], n_heads, -1).swapaxes(1, 2)
    if not cache:
        cache["k"] = heads(memory @ p["W_k"])
        cache["v"] = heads(memory @ p["W_v"])
    q = heads(x @ p["W_q"])
    scores = q @ cache["k"].swapaxes(-1, -2) / math.sqrt(q.shape[-1])
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return (weights @ cache["v"]).swapaxes(1, 2).reshape(x.shape) @ p["W_o"]
# --8<-- [end:ex5-wrong-no-mask]


# --8<-- [start:ex5-wrong-d-model-scale]
# rejected with: not 1/sqrt(d_model)
def cross_attend(x, memory, valid, p, n_heads, cache):
    def heads(a):
        return a.reshape(*a.shape[:2], n_heads, -1).swapaxes(1, 2)
    if not cache:
        cache["k"] = heads(memory @ p["W_k"])
        cache["v"] = heads(memory @ p["W_v"])
    q = heads(x @ p["W_q"])
    scores = q @ cache["k"].swapaxes(-1, -2) / math.sqrt(x.shape[-1])
    scores = np.where(valid[:, None, None, :], scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return (weights @ cache["v"]).swapaxes(1, 2).reshape(x.shape) @ p["W_o"]
# --8<-- [end:ex5-wrong-d-model-scale]


# --8<-- [start:ex5-wrong-unsplit-cache]
# rejected with: should have shape (batch, n_heads
def cross_attend(x, memory, valid, p, n_heads, cache):
    def heads(a):
        return a.reshape(*a.shape[:2], n_heads, -1).swapaxes(1, 2)
    if not cache:
        cache["k"], cache["v"] = memory @ p["W_k"], memory @ p["W_v"]
    q = heads(x @ p["W_q"])
    k, v = heads(cache["k"]), heads(cache["v"])
    scores = q @ k.swapaxes(-1, -2) / math.sqrt(q.shape[-1])
    scores = np.where(valid[:, None, None, :], scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return (weights @ v).swapaxes(1, 2).reshape(x.shape) @ p["W_o"]
# --8<-- [end:ex5-wrong-unsplit-cache]
