"""Practice exercises of chapter 13: starters, worked solutions and plausible wrong answers.

Each exercise has an `exN-starter` and an `exN-solution` section (the page includes them
by snippet) and `exN-wrong-<what>` sections that its self-check must reject (never shown;
tests/practice/test_wrong_answers.py runs them). Starter and solution define the same
name on purpose: the reader replaces the one with the other.
"""

# --8<-- [start:imports]
import numpy as np

from attention.encoders.vit import resize_bicubic
from attention.practice.ch13 import (check_encoder_mask,
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
