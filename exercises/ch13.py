"""Practice exercises of chapter 13: starters, worked solutions and plausible wrong answers.

Each exercise has an `exN-starter` and an `exN-solution` section (the page includes them
by snippet) and `exN-wrong-<what>` sections that its self-check must reject (never shown;
tests/practice/test_wrong_answers.py runs them). Starter and solution define the same
name on purpose: the reader replaces the one with the other.
"""

# --8<-- [start:imports]
import math

import numpy as np

from attention.encoders.vit import resize_bicubic
from attention.practice.ch13 import (check_bucket, check_cross_attend,
                                     check_encoder_mask,
                                     check_interpolate_positions,
                                     check_patchify)
# --8<-- [end:imports]

# --8<-- [start:ex1-starter]
def encoder_mask(ids, pad_id):
    """The attention mask of a bidirectional encoder for a padded batch.

    ids: (batch, n) token ids, padded with pad_id (on either side).
    Returns a boolean (batch, 1, 1, n): True where a query may attend.
    """
    # Your code: this lets every query read every key, pads included.
    return np.ones((ids.shape[0], 1, 1, ids.shape[1]), dtype=bool)
# --8<-- [end:ex1-starter]


# --8<-- [start:ex1-solution]
def encoder_mask(ids, pad_id):
    """The attention mask of a bidirectional encoder for a padded batch.

    ids: (batch, n) token ids, padded with pad_id (on either side).
    Returns a boolean (batch, 1, 1, n): True where a query may attend.
    """
    real = ids != pad_id                  # (batch, n): the real tokens
    return real[:, None, None, :]         # keys only: every head, every query
# --8<-- [end:ex1-solution]


# --8<-- [start:ex1-wrong-causal]
# rejected with: this is a decoder's mask
def encoder_mask(ids, pad_id):
    n = ids.shape[1]
    return (ids != pad_id)[:, None, None, :] & np.tri(n, dtype=bool)
# --8<-- [end:ex1-wrong-causal]


# --8<-- [start:ex1-wrong-queries]
# rejected with: masked as queries
def encoder_mask(ids, pad_id):
    return (ids != pad_id)[:, None, :, None]
# --8<-- [end:ex1-wrong-queries]


# --8<-- [start:ex1-wrong-inverted]
# rejected with: True marks the pads
def encoder_mask(ids, pad_id):
    return (ids == pad_id)[:, None, None, :]
# --8<-- [end:ex1-wrong-inverted]


# --8<-- [start:ex1-wrong-right-padding-only]
# rejected with: on a left-padded batch
def encoder_mask(ids, pad_id):
    lengths = (ids != pad_id).sum(axis=1)
    real = np.arange(ids.shape[1]) < lengths[:, None]
    return real[:, None, None, :]
# --8<-- [end:ex1-wrong-right-padding-only]


# --8<-- [start:ex2-starter]
def patchify(images, patch_size):
    """Cut images into non-overlapping patches, each flattened.

    images: (batch, channels, height, width), sides multiples of
    patch_size. Returns (batch, n_patches, channels * patch_size**2):
    patches row by row, each flattened channel first, then rows, then
    columns (the order of a convolution kernel's weights).
    """
    b, c, h, w = images.shape
    P = patch_size
    # Your code: this keeps the right shape but mixes up the pixels.
    return images.reshape(b, (h // P) * (w // P), c * P * P)
# --8<-- [end:ex2-starter]


# --8<-- [start:ex2-solution]
def patchify(images, patch_size):
    """Cut images into non-overlapping patches, each flattened.

    images: (batch, channels, height, width), sides multiples of
    patch_size. Returns (batch, n_patches, channels * patch_size**2):
    patches row by row, each flattened channel first, then rows, then
    columns (the order of a convolution kernel's weights).
    """
    b, c, h, w = images.shape
    P = patch_size
    x = images.reshape(b, c, h // P, P, w // P, P)  # split both sides
    x = x.transpose(0, 2, 4, 1, 3, 5)  # (b, rows, cols, c, P, P)
    return x.reshape(b, (h // P) * (w // P), c * P * P)
# --8<-- [end:ex2-solution]


# --8<-- [start:ex2-wrong-channels-last]
# rejected with: flattened channels last
def patchify(images, patch_size):
    b, c, h, w = images.shape
    P = patch_size
    x = images.reshape(b, c, h // P, P, w // P, P).transpose(0, 2, 4, 3, 5, 1)
    return x.reshape(b, (h // P) * (w // P), c * P * P)
# --8<-- [end:ex2-wrong-channels-last]


# --8<-- [start:ex2-wrong-column-order]
# rejected with: in column order
def patchify(images, patch_size):
    b, c, h, w = images.shape
    P = patch_size
    x = images.reshape(b, c, h // P, P, w // P, P).transpose(0, 4, 2, 1, 3, 5)
    return x.reshape(b, (h // P) * (w // P), c * P * P)
# --8<-- [end:ex2-wrong-column-order]


# --8<-- [start:ex2-wrong-no-transpose]
# rejected with: a plain reshape mixes pixels
def patchify(images, patch_size):
    b, c = images.shape[:2]
    return images.reshape(b, -1, c * patch_size * patch_size)
# --8<-- [end:ex2-wrong-no-transpose]


# --8<-- [start:ex3-starter]
def interpolate_positions(table, grid, new_grid):
    """ViT's position table for a new grid of patches.

    table: (1 + grid**2, d), the class token's row first, then the
    patches' rows in reading order; new_grid: (rows, cols). Returns
    (1 + rows * cols, d): the class row, then the patches' square
    resized bicubically (``resize_bicubic`` along each axis).
    """
    # Your code: this returns the trained table as it is.
    return table
# --8<-- [end:ex3-starter]


# --8<-- [start:ex3-solution]
def interpolate_positions(table, grid, new_grid):
    """ViT's position table for a new grid of patches.

    table: (1 + grid**2, d), the class token's row first, then the
    patches' rows in reading order; new_grid: (rows, cols). Returns
    (1 + rows * cols, d): the class row, then the patches' square
    resized bicubically (``resize_bicubic`` along each axis).
    """
    rows, cols = new_grid
    square = table[1:].reshape(grid, grid, -1)          # (grid, grid, d)
    square = resize_bicubic(square, rows, axis=0)       # (rows, grid, d)
    square = resize_bicubic(square, cols, axis=1)       # (rows, cols, d)
    return np.concatenate([table[:1], square.reshape(rows * cols, -1)])
# --8<-- [end:ex3-solution]


# --8<-- [start:ex3-wrong-no-class-row]
# rejected with: the class token's row is missing
def interpolate_positions(table, grid, new_grid):
    rows, cols = new_grid
    square = table[1:].reshape(grid, grid, -1)
    square = resize_bicubic(resize_bicubic(square, rows, 0), cols, 1)
    return square.reshape(rows * cols, -1)
# --8<-- [end:ex3-wrong-no-class-row]


# --8<-- [start:ex3-wrong-swapped-axes]
# rejected with: rows and columns were swapped
def interpolate_positions(table, grid, new_grid):
    rows, cols = new_grid
    square = table[1:].reshape(grid, grid, -1)
    square = resize_bicubic(resize_bicubic(square, cols, 0), rows, 1)
    square = square.transpose(1, 0, 2)
    return np.concatenate([table[:1], square.reshape(rows * cols, -1)])
# --8<-- [end:ex3-wrong-swapped-axes]


# --8<-- [start:ex3-wrong-repeat]
# rejected with: repeated, not interpolated
def interpolate_positions(table, grid, new_grid):
    rows, cols = new_grid
    square = table[1:].reshape(grid, grid, -1)
    square = np.repeat(np.repeat(square, -(-rows // grid), 0),
                       -(-cols // grid), 1)[:rows, :cols]
    return np.concatenate([table[:1], square.reshape(rows * cols, -1)])
# --8<-- [end:ex3-wrong-repeat]

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
