"""Self-checks for the practice exercises of chapter 13 (encoders, cross-attention, images).

Each check calls the reader's function on data of its own, drawn afresh at every call,
prints one verdict ("✓ Correct: ..." or "✗ Not yet: ..." saying what is wrong) and
returns True or False. References come from ``attention.encoders``.
"""

import numpy as np

from attention.encoders.vit import interpolate_positions, patchify
from attention.masks import causal_mask
from attention.practice.trials import Trial, fresh_rng, judge, redrawable


# Exercise 1 ---------------------------------------------------------------------------

@redrawable
def _ids_trial(rng, lengths, n, *, pad_id, left=False):
    """A batch of token ids, padded with pad_id to n (on the left if left);
    pad_id never appears among the real tokens. lengths: the real tokens
    per sequence, or an int: that many sequences of lengths drawn at
    random, the first one unpadded (a redraw then pads other places)."""
    drawn = isinstance(lengths, int)
    if drawn:
        lengths = [n] + list(rng.integers(1, n + 1, size=lengths - 1))
    ids = rng.integers(0, 50, size=(len(lengths), n))
    ids[ids == pad_id] = pad_id + 1
    for b, length in enumerate(lengths):
        pads = slice(0, n - length) if left else slice(length, n)
        ids[b, pads] = pad_id
    side = "left" if left else "right"
    which = "random lengths" if drawn else f"lengths {list(lengths)}"
    return Trial(f"ids ({len(lengths)}, {n}) of {which}, padded on the "
                 f"{side} with pad_id {pad_id}", (ids, pad_id))


def _encoder_mask(ids, pad_id):
    return (ids != pad_id)[:, None, None, :]


def check_encoder_mask(your_function):
    """Exercise 1: your_function(ids, pad_id) = (ids != pad_id)[:, None, None, :]."""
    rng = fresh_rng()
    trials = [_ids_trial(rng, 8, 12, pad_id=0),
              _ids_trial(rng, (5, 3, 1), 5, pad_id=0),
              _ids_trial(rng, (4, 6), 6, pad_id=3),
              _ids_trial(rng, (2, 4, 3), 4, pad_id=1, left=True),
              _ids_trial(rng, (7,), 7, pad_id=0)]
    n = lambda ids: ids.shape[1]  # noqa: E731 (a name for the hints below)
    hints = [
        (lambda ids, p: np.ones((len(ids), 1, 1, n(ids)), dtype=bool),
         "every key is allowed, the pads too: mask the keys whose id is pad_id"),
        (lambda ids, p: _encoder_mask(ids, p) & causal_mask(n(ids)),
         "this is a decoder's mask: an encoder has no causal mask, every query "
         "sees the real keys after it too"),
        (lambda ids, p: (ids != p)[:, None, :, None],
         "the pads were masked as queries; mask them as keys (the last axis), so "
         "that no query reads them"),
        (lambda ids, p: (ids == p)[:, None, None, :],
         "True marks the pads; here True means may attend (PyTorch's "
         "nn.MultiheadAttention's key_padding_mask uses the opposite)"),
        (lambda ids, p: (ids != 0)[:, None, None, :],
         "the pads were taken to be token 0; compare with pad_id"),
        (lambda ids, p: (np.arange(n(ids)) < (ids != p).sum(1)[:, None])[
            :, None, None, :],
         "the real tokens were taken to come first; on a left-padded batch they "
         "come last: compare each id with pad_id"),
    ]
    return judge(your_function, trials, _encoder_mask, what="encoder_mask",
                 hints=hints, success="your mask lets every query read every "
                                      "real key and no pad.")


# Exercise 2 ---------------------------------------------------------------------------

@redrawable
def _image_trial(rng, batch, channels, rows, cols, patch):
    images = rng.normal(size=(batch, channels, rows * patch, cols * patch))
    return Trial(f"images {tuple(images.shape)}, patch_size {patch}",
                 (images, patch))


def check_patchify(your_function):
    """Exercise 2: your_function(images, patch_size) = the patches, flattened."""
    rng = fresh_rng()
    trials = [_image_trial(rng, 2, 3, 2, 3, 4), _image_trial(rng, 1, 1, 3, 2, 2),
              _image_trial(rng, 3, 2, 2, 2, 3), _image_trial(rng, 1, 3, 1, 4, 5)]

    def by(order):  # patches flattened in another order of (channel, row, col)
        def wrong(images, P):
            b, c, h, w = images.shape
            x = images.reshape(b, c, h // P, P, w // P, P)
            return x.transpose(order).reshape(b, (h // P) * (w // P), c * P * P)
        return wrong

    hints = [
        (lambda x, P: x.reshape(x.shape[0], -1, x.shape[1] * P * P),
         "a plain reshape mixes pixels of different patches: split height and "
         "width into (patches, patch_size) first, then move the patch axes "
         "forward"),
        (by((0, 2, 4, 3, 5, 1)),
         "each patch was flattened channels last; flatten it channel first "
         "(c, row, column), the order of the convolution kernel's weights"),
        (by((0, 4, 2, 1, 3, 5)),
         "the patches are in column order; read them row by row"),
    ]
    return judge(your_function, trials, patchify, what="patchify", hints=hints,
                 success="your patches, flattened channel first and in reading "
                         "order, are what the convolution multiplies.")


# Exercise 3 ---------------------------------------------------------------------------

@redrawable
def _table_trial(rng, grid, new_grid, d):
    table = rng.normal(size=(1 + grid * grid, d))
    return Trial(f"a table ({1 + grid * grid}, {d}) of a {grid}x{grid} grid, "
                 f"new grid {new_grid}", (table, grid, new_grid))


def check_interpolate_positions(your_function):
    """Exercise 3: your_function(table, grid, new_grid) = the resized table."""
    rng = fresh_rng()
    trials = [_table_trial(rng, 3, (4, 6), 5), _table_trial(rng, 4, (2, 3), 3),
              _table_trial(rng, 2, (5, 5), 4), _table_trial(rng, 3, (3, 3), 2)]

    def resized(table, grid, new_grid):  # the patch rows only
        return interpolate_positions(table, grid, new_grid)[1:]

    def swapped(table, grid, new_grid):
        rows, cols = new_grid
        out = interpolate_positions(table, grid, (cols, rows))
        return np.concatenate([out[:1], out[1:].reshape(cols, rows, -1)
                               .transpose(1, 0, 2).reshape(rows * cols, -1)])

    hints = [
        (resized, "the class token's row is missing: keep row 0 as it is and "
                  "put it first"),
        (swapped, "rows and columns were swapped: resize axis 0 to new_grid[0] "
                  "rows and axis 1 to new_grid[1] columns"),
        (lambda t, g, ng: np.concatenate([t[:1], np.repeat(np.repeat(
            t[1:].reshape(g, g, -1), -(-ng[0] // g), 0), -(-ng[1] // g), 1)[
            :ng[0], :ng[1]].reshape(ng[0] * ng[1], -1)]),
         "the rows were repeated, not interpolated: use resize_bicubic along "
         "each axis"),
    ]
    return judge(your_function, trials, interpolate_positions,
                 what="interpolate_positions", hints=hints,
                 success="your table keeps the class token's row and resizes "
                         "the patches' square bicubically.")
