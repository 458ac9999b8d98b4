"""Positions: telling attention where each token is.

References: Vaswani et al., "Attention Is All You Need" (2017), section 3.5
(sinusoidal encodings); Radford et al., "Language Models are Unsupervised Multitask
Learners" (2019) (GPT-2's learned position table, a plain lookup, see
``attention.model``); Su et al., "RoFormer: Enhanced Transformer with Rotary Position
Embedding" (2021) (RoPE).

RoPE has two layouts in real code. Both rotate d_head / 2 pairs of features, pair i by
the angle position * base ** (-2i / d_head); they differ in which features form a pair:
- "interleaved": pair i is features (2i, 2i + 1) (GPT-J, Meta's original Llama code);
- "halves": pair i is features (i, i + d_head / 2) (GPT-NeoX, Hugging Face's
  ``rotate_half``).
A model trained in one layout runs in the other once the columns of W_q and W_k are
permuted inside every head (``rope_weights_to_layout``).
"""

# --8<-- [start:imports]
import numpy as np
# --8<-- [end:imports]


# --8<-- [start:checks]
LAYOUTS = ("halves", "interleaved")


def _check_d(fn, name, d):
    if (isinstance(d, bool) or not isinstance(d, (int, np.integer))
            or d < 2 or d % 2):
        raise ValueError(f"{fn}: {name} must be an even integer >= 2, "
                         f"got {d!r}")


def _check_base(fn, base):
    # base ** (-2i / d) must be a frequency: base 0 or < 0 gives inf or NaN
    if (isinstance(base, bool) or not isinstance(base, (int, float, np.number))
            or not 0 < base < np.inf):
        raise ValueError(f"{fn}: base must be a finite number > 0, "
                         f"got {base!r}")
# --8<-- [end:checks]


# --8<-- [start:sinusoidal]
def sinusoidal_positions(n, d_model, base=10000.0):
    """The fixed encodings of Vaswani et al. (3.5), shape (n, d_model).

    Feature 2i of position p is sin(p * w_i), feature 2i + 1 is cos(p * w_i),
    with w_i = base ** (-2i / d_model): one frequency per pair of features.
    """
    _check_d("sinusoidal_positions", "d_model", d_model)
    _check_base("sinusoidal_positions", base)
    p = np.arange(n, dtype=np.float64)[:, None]                 # (n, 1)
    w = base ** (-np.arange(0, d_model, 2) / d_model)          # (d_model/2,)
    angles = p * w                                              # (n, d_model/2)
    pe = np.empty((n, d_model))
    pe[:, 0::2] = np.sin(angles)  # even features
    pe[:, 1::2] = np.cos(angles)  # odd features
    return pe
# --8<-- [end:sinusoidal]


# --8<-- [start:rope_angles]
def rope_angles(positions, d_head, base=10000.0):
    """Angle of every (position, pair): positions * base ** (-2i / d_head).

    positions: integers (n,) (or (..., n): one row per sequence). Returns
    (..., n, d_head / 2), in float64.
    """
    _check_d("rope_angles", "d_head", d_head)
    _check_base("rope_angles", base)
    # 1 / base**(2i/d), written as Hugging Face writes it: base**(-2i/d) can
    # differ in the last bit, which position 8,000 turns into 1e-12.
    inv_freq = 1.0 / base ** (np.arange(0, d_head, 2) / d_head)  # (d_head/2,)
    positions = np.asarray(positions, dtype=np.float64)        # (..., n)
    return positions[..., None] * inv_freq            # (..., n, d_head/2)
# --8<-- [end:rope_angles]


# --8<-- [start:rope]
def rope(x, positions, *, base=10000.0, layout="halves", scaling=None):
    """Rotate each pair of features of x by its position's angle (RoPE).

    x: (..., n, d_head), queries or keys; positions: integers (n,), or a
    shape that broadcasts against x.shape[:-1] (a row per sequence).
    layout "halves": pair i = features (i, i + d_head/2) (Hugging Face);
    layout "interleaved": pair i = features (2i, 2i + 1) (GPT-J, Meta).
    scaling: a chapter-8 ``RopeScaling``: its ``angles`` replace the plain
    ones and its attention factor multiplies cos and sin; None: plain RoPE.
    Returns an array of x's shape and dtype.
    """
    x = np.asarray(x)
    if layout not in LAYOUTS:
        raise ValueError(
            f"rope: layout must be one of {LAYOUTS}, got {layout!r}")
    p_shape = np.shape(positions)
    try:
        fits = (x.ndim >= 2 and len(p_shape) >= 1 and p_shape[-1] == x.shape[-2]
                and np.broadcast_shapes(p_shape, x.shape[:-1]) == x.shape[:-1])
    except ValueError:  # shapes that do not broadcast at all
        fits = False
    if not fits:
        raise ValueError(
            f"rope: x must be (..., n, d_head) and positions (n,) or broadcast "
            f"to x.shape[:-1], got x {x.shape} and positions {p_shape}")
    if scaling is None:
        angles, factor = rope_angles(positions, x.shape[-1], base), 1.0
    else:
        _check_d("rope", "d_head", x.shape[-1])
        if not callable(getattr(scaling, "angles", None)):
            raise TypeError(f"rope: scaling must be a RopeScaling or None, "
                            f"got {scaling!r}")
        angles, factor = scaling.angles(positions, x.shape[-1], base)
    # angles: (..., n, d_head/2); factor 1 but for YaRN.
    cos = (np.cos(angles) * factor).astype(x.dtype, copy=False)
    sin = (np.sin(angles) * factor).astype(x.dtype, copy=False)
    if layout == "halves":
        half = x.shape[-1] // 2
        a, b = x[..., :half], x[..., half:]     # (..., n, d_head/2) each
    else:
        a, b = x[..., 0::2], x[..., 1::2]       # (..., n, d_head/2) each
    # The 2-D rotation of every pair (a, b) by its angle.
    ra, rb = a * cos - b * sin, a * sin + b * cos
    if layout == "halves":
        return np.concatenate([ra, rb], axis=-1)    # (..., n, d_head)
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = ra, rb         # (..., n, d_head)
    return out
# --8<-- [end:rope]


# --8<-- [start:rope_permutation]
def rope_permutation(d_head):
    """Feature order that turns the interleaved layout into halves.

    ``q[..., rope_permutation(d)]`` moves features (0, 2, 4, ...) to the
    first half and (1, 3, 5, ...) to the second, so that interleaved pair
    (2i, 2i + 1) becomes the halves pair (i, i + d/2).
    """
    _check_d("rope_permutation", "d_head", d_head)
    return np.concatenate([np.arange(0, d_head, 2), np.arange(1, d_head, 2)])


def rope_weights_to_layout(W, n_heads, *, to="halves"):
    """Permute the columns of W_q or W_k, head by head, into another layout.

    W: (d_model, n_heads * d_head), applied as x @ W. to="halves" converts
    an interleaved model to halves; to="interleaved" undoes it. RoPE then
    rotates the same pairs, only stored at other indices: q_m . k_n, and so
    the attention weights, are unchanged.
    """
    W = np.asarray(W)
    if to not in LAYOUTS:
        raise ValueError(f"rope_weights_to_layout: to must be one of {LAYOUTS}")
    if W.ndim != 2 or W.shape[1] % n_heads:
        raise ValueError(
            f"rope_weights_to_layout: W must be (d_model, n_heads * d_head), "
            f"got {W.shape} with n_heads = {n_heads}")
    d_head = W.shape[1] // n_heads
    perm = rope_permutation(d_head)
    if to == "interleaved":
        perm = np.argsort(perm)  # the inverse permutation
    W = W.reshape(W.shape[0], n_heads, d_head)     # (d_model, h, d_head)
    return W[:, :, perm].reshape(W.shape[0], -1)   # (d_model, h * d_head)
# --8<-- [end:rope_permutation]
