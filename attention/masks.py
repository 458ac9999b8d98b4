"""Boolean attention masks: True means "this query may attend to this key".

The convention is PyTorch's (``torch.nn.functional.scaled_dot_product_attention`` with a
boolean ``attn_mask``). Two masks cover most uses:

- the causal mask of decoder-only models (Vaswani et al. 2017, section 3.2.3: "prevent
  leftward information flow"), so that position i never sees a later position;
- the padding mask, so that no query takes information from the <pad> tokens that fill
  out the shorter sequences of a batch.
"""

# --8<-- [start:imports]
import numpy as np
# --8<-- [end:imports]


# --8<-- [start:causal_mask]
def causal_mask(n_q: int, n_k: int | None = None) -> np.ndarray:
    """Lower-triangular mask (n_q, n_k): query i may see key j iff j <= its
    position.

    The mask is aligned bottom-right: the n_q queries are taken to be the
    *last* n_q positions of the n_k keys, so query i sits at absolute position
    n_k - n_q + i and sees keys 0 .. n_k - n_q + i. That is what a decoder
    needs when it scores new tokens against a cache of earlier keys. With
    n_q == n_k it is the usual triangle, identical to PyTorch's
    ``is_causal=True``. With n_q < n_k PyTorch's ``is_causal`` aligns top-left
    instead (query 0 sees key 0 only), which is a different mask.
    """
    n_k = n_q if n_k is None else n_k
    for name, n in (("n_q", n_q), ("n_k", n_k)):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"causal_mask: {name} must be a non-negative "
                             f"integer, got {n!r}")
    # Query i may see key j when j <= i + (n_k - n_q): the diagonal, shifted.
    return np.tril(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q)
# --8<-- [end:causal_mask]


# --8<-- [start:padding_mask]
def padding_mask(lengths, n_k: int) -> np.ndarray:
    """Mask (batch, 1, 1, n_k), True on the real tokens of each sequence.

    Sequence b holds ``lengths[b]`` real tokens followed by <pad> tokens up to
    ``n_k``. The two axes of size 1 stand for heads and queries, so the mask
    broadcasts against scores of shape (batch, heads, n_q, n_k): every head and
    every query of sequence b ignores the same padded keys. For scores without a
    head axis, (batch, n_q, n_k), use ``mask[:, 0]`` of shape (batch, 1, n_k).
    """
    if (isinstance(n_k, bool) or not isinstance(n_k, (int, np.integer))
            or n_k < 0):
        raise ValueError(f"padding_mask: n_k must be a non-negative integer, "
                         f"got {n_k!r}")
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or not np.issubdtype(lengths.dtype, np.integer):
        raise ValueError(
            f"padding_mask: lengths must be a 1-D array of integers, got shape "
            f"{lengths.shape} and dtype {lengths.dtype}"
        )
    if np.any(lengths < 0) or np.any(lengths > n_k):
        raise ValueError(f"padding_mask: every length must lie in "
                         f"0..n_k={n_k}, got {lengths}")
    positions = np.arange(n_k)                           # (n_k,)
    real = positions[None, :] < lengths[:, None]         # (batch, n_k)
    return real[:, None, None, :]                        # (batch, 1, 1, n_k)
# --8<-- [end:padding_mask]
