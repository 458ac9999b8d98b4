"""Self-checks for the practice exercises of chapter 13 (encoders, cross-attention, images).

Each check calls the reader's function on data of its own, drawn afresh at every call,
prints one verdict ("✓ Correct: ..." or "✗ Not yet: ..." saying what is wrong) and
returns True or False. References come from ``attention.encoders``.
"""

import math

import numpy as np

from attention.encoders.cross_attention import cross_attention, memory_kv
from attention.encoders.t5 import relative_position_bucket
from attention.encoders.vit import interpolate_positions, patchify
from attention.masks import causal_mask
from attention.practice.trials import (Trial, as_array, defaulted, difference,
                                       fresh_rng, judge, kind_problem, matches,
                                       redrawable, shape_text)
from attention.practice.verdict import call, guard_checks, verdict


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


# Exercise 4 ---------------------------------------------------------------------------

@redrawable
def _bucket_trial(rng, n_q, n_k, bidirectional, buckets, distance):
    """Relative positions key - query of a (n_q, n_k) score matrix whose
    queries start at a random offset, reaching past max_distance both ways."""
    start = int(rng.integers(0, 3 * distance))
    query = start + np.arange(n_q)[:, None]
    key = np.arange(n_k)[None, :]
    key = key * int(rng.integers(1, 4))  # wide strides: far distances too
    return Trial(f"relative positions {shape_text((n_q, n_k))}, bidirectional="
                 f"{bidirectional}, num_buckets {buckets}, max_distance "
                 f"{distance}", (key - query, bidirectional, buckets, distance))


def _bucket(relative, bidirectional, num_buckets=32, max_distance=128):
    return relative_position_bucket(relative, bidirectional=bidirectional,
                                    num_buckets=num_buckets,
                                    max_distance=max_distance)


def _bucket_mistakes():
    """(wrong function, message) pairs, each a plausible mistake."""
    def unhalved(r, bid, n=32, m=128):  # both directions share every bucket
        return np.where(r > 0, n, 0) * bid + _bucket(np.where(
            bid, -np.abs(r), r), False, n, m)

    def flipped(r, bid, n=32, m=128):  # keys on the left in the upper half
        return _bucket(-r, bid, n, m)

    def unclamped(r, bid, n=32, m=128):
        half = n // 2 if bid else n
        exact = half // 2
        d = np.abs(r) if bid else np.maximum(-r, 0)
        far = exact + (np.log(np.maximum(d, exact) / exact)
                       / math.log(m / exact) * (half - exact)).astype(np.int64)
        return (r > 0) * half * bid + np.where(d < exact, d, far)

    def rounded(r, bid, n=32, m=128):
        half = n // 2 if bid else n
        exact = half // 2
        d = np.abs(r) if bid else np.maximum(-r, 0)
        far = exact + np.round(np.log(np.maximum(d, exact) / exact)
                               / math.log(m / exact) * (half - exact))
        far = np.minimum(far.astype(np.int64), half - 1)
        return (r > 0) * half * bid + np.where(d < exact, d, far)

    def both_ways(r, bid, n=32, m=128):  # the decoder also buckets the future
        return _bucket(r, True, n, m) if not bid else _bucket(r, bid, n, m)

    def own_bucket(r, bid, n=32, m=128):  # no logarithmic buckets at all
        return np.minimum(np.abs(r), n - 1)

    return [
        (own_bucket, "every distance got a bucket of its own: only the first "
                     "half of a direction's buckets are one per distance; "
                     "farther ones share logarithmically wider buckets"),
        (unhalved, "with bidirectional=True each direction has num_buckets // 2 "
                   "buckets: halve them first, then give keys on the right the "
                   "upper half"),
        (flipped, "the halves are swapped: keys to the right of the query "
                  "(relative > 0) take the upper half"),
        (unclamped, "some distances got a bucket past the last one: clamp the "
                    "logarithmic buckets to the last bucket of their half"),
        (rounded, "the logarithmic buckets were rounded; truncate them towards "
                  "zero (astype(int)), as T5 does"),
        (both_ways, "a causal decoder's keys to the right (the future) are never "
                    "seen: they all take bucket 0, and all num_buckets are for "
                    "the past"),
    ]


def check_bucket(your_function):
    """Exercise 4: your_function(relative, bidirectional, num_buckets=32,
    max_distance=128) = T5's relative position buckets."""
    rng = fresh_rng()
    trials = [defaulted(_bucket_trial(rng, 9, 300, True, 32, 128),
                        "max_distance", 128),
              _bucket_trial(rng, 7, 40, True, 8, 12),
              _bucket_trial(rng, 6, 50, False, 8, 12),
              _bucket_trial(rng, 5, 90, False, 16, 40),
              _bucket_trial(rng, 4, 120, True, 64, 100),
              _bucket_trial(rng, 7, 40, True, 8, 12)]  # a shape seen: redrawn
    trials.append(defaulted(defaulted(_bucket_trial(rng, 3, 400, False, 32,
                                                    128), "max_distance", 128),
                            "num_buckets", 32))
    return judge(your_function, trials, _bucket, what="bucket",
                 hints=_bucket_mistakes(),
                 success="your buckets are T5's: exact near the query, "
                         "logarithmic farther, one bucket past max_distance.")


# Exercise 5 ---------------------------------------------------------------------------

def _layer(rng, d_model, dtype):
    return {f"W_{n}": (rng.normal(size=(d_model, d_model)) / math.sqrt(d_model)
                       ).astype(dtype) for n in "qkvo"}


def _steps(rng, batch, n_src, d_model, n_heads, dtype, n_steps=3, *,
           extreme=False):
    """The inputs of n_steps decoding steps over one memory. extreme: W_q
    and W_k the identity, the memory near a·(1, ..., 1) and the queries
    near ±a·(1, ..., 1), so that one query's scores sit near +1000 and the
    next one's near -1000 (a softmax must shift each row by its own max)."""
    memory = rng.normal(size=(batch, n_src, d_model)).astype(dtype)
    valid = np.ones((batch, n_src), bool)
    valid[-1, n_src - 2:] = False  # the last source is padded
    xs = [rng.normal(size=(batch, 2 if i == 0 else 1, d_model)).astype(dtype)
          for i in range(n_steps)]  # two prompt tokens, then one a step
    p = _layer(rng, d_model, dtype)
    if extreme:
        a = math.sqrt(1000 / math.sqrt(d_model // n_heads))
        memory += dtype(a)
        for i, x in enumerate(xs):
            x += dtype(a) * np.where(np.arange(x.shape[1]) % 2 == i % 2, 1, -1
                                     )[:, None].astype(dtype)
        p["W_q"] = p["W_k"] = np.eye(d_model, dtype=dtype)
    return memory, valid, p, xs


def _cross_mistakes(x, memory, valid, p, n_heads):
    """What plausible wrong answers return, with the message naming each."""
    kv = memory_kv(memory, p, n_heads)
    d_model = x.shape[-1]
    return [
        (cross_attention(x, kv, p, n_heads),
         "padded source tokens were read: mask the keys where valid is False"),
        (cross_attention(x, kv, p, n_heads, memory_valid=valid,
                         scale=1 / math.sqrt(d_model)),
         "scale the scores by 1/sqrt(d_head), the size of one head, not "
         "1/sqrt(d_model)"),
    ]


def _one_memory(your_function, rng, batch, n_src, d_model, n_heads, dtype,
                extreme=False):
    memory, valid, p, xs = _steps(rng, batch, n_src, d_model, n_heads, dtype,
                                  extreme=extreme)
    kv = memory_kv(memory, p, n_heads)
    cache = {}
    label = (f"a memory {shape_text(memory.shape)} {np.dtype(dtype).name}, "
             f"{n_heads} heads")
    label += ", scores near +1000 and -1000" if extreme else ""
    for step, x in enumerate(xs):
        given = memory if step == 0 else None  # later steps: the cache only
        got, problem = call(your_function, x, given, valid, p, n_heads, cache,
                            may_change=("cache",))
        if problem is not None:
            if step and "raised" in problem:
                problem += (" (after the first step memory is None: read the keys "
                            "and values from the cache)")
            return f"on {label}, step {step + 1}: {problem}"
        if step == 0:
            problem = _cache_problem(cache, kv, n_heads)
            if problem is not None:
                return f"on {label}: {problem}"
        want = cross_attention(x, kv, p, n_heads, memory_valid=valid)
        arr, problem = as_array(got, "cross_attend")
        if problem is None:
            problem = difference(arr, want, dtype, kind=False)
            for wrong, message in (_cross_mistakes(x, memory, valid, p, n_heads)
                                   if problem else ()):
                if matches(arr, wrong, dtype):
                    problem = message
                    break
        if problem is None:
            problem = kind_problem(got, want, "cross_attend")
        if problem is not None:
            return f"on {label}, step {step + 1} ({shape_text(x.shape)}): {problem}"
    return None


def _cache_problem(cache, kv, n_heads):
    """Whether the cache holds the memory's keys and values, split into heads."""
    if not isinstance(cache, dict) or not {"k", "v"} <= set(cache):
        return ("after the first step the cache should hold cache['k'] and "
                "cache['v'], the memory's keys and values")
    for name, want in zip("kv", kv):
        got, problem = as_array(cache[name], f"cache[{name!r}]")
        if problem is None and got.shape != want.shape:
            problem = (f"cache[{name!r}] should have shape (batch, n_heads={n_heads}"
                       f", n_src, d_head) = {shape_text(want.shape)}, got "
                       f"{shape_text(got.shape)}")
        if problem is None and difference(got, want, want.dtype,
                                          kind=False) is not None:
            problem = (f"cache[{name!r}] should be the memory projected by "
                       f"W_{name} and split into heads")
        if problem is not None:
            return problem
    return None


def check_cross_attend(your_function):
    """Exercise 5: your_function(x, memory, valid, p, n_heads, cache): the
    memory's keys and values projected at the first step, read afterwards."""
    rng = fresh_rng()
    for sizes in ((2, 7, 12, 3), (1, 5, 8, 1), (3, 9, 16, 4), (2, 7, 12, 3)):
        for dtype in (np.float64, np.float32) if sizes[0] == 3 else (np.float64,):
            problem = _one_memory(your_function, rng, *sizes, dtype)
            if problem is not None:
                return verdict(False, problem)
    problem = _one_memory(your_function, rng, 2, 6, 12, 3, np.float64,
                          extreme=True)
    if problem is not None:
        return verdict(False, problem)
    return verdict(True, "on 6 random memories, each over 3 decoding steps with "
                         "1 to 4 heads, float64 and float32, scores near ±1000 "
                         "included: your keys and values come from the memory "
                         "once, and every step's output equals cross-attention "
                         "recomputed from the memory.")


guard_checks(globals())  # no check raises, whatever the answer (verdict.py)
