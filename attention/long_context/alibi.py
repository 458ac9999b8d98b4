"""ALiBi: no position embedding at all, a linear penalty on distance instead.

Press et al., "Train Short, Test Long: Attention with Linear Biases Enables Input Length
Extrapolation" (2022), section 3: head h adds -m_h * (i - j) to the score of query i for
key j, with one fixed slope m_h per head. The slopes form a geometric sequence: with
n heads a power of two, m_h = 2 ** (-8 h / n) for h = 1..n. For other head counts the
paper's code (and Bloom's, in Hugging Face's ``modeling_bloom``) takes the slopes of the
power of two p just below n, then every other slope of 2p for the remaining n - p heads.

Bloom adds m_h * j instead of -m_h * (i - j). The two differ by m_h * i, the same number
for every key of a row, and softmax does not change when a row is shifted: the weights
are the same (the tests check both).
"""

# --8<-- [start:imports]
import math

import numpy as np
# --8<-- [end:imports]


# --8<-- [start:slopes]
def alibi_slopes(n_heads):
    """The slope m_h of each head, shape (n_heads,), largest first."""
    if (isinstance(n_heads, bool) or not isinstance(n_heads, (int, np.integer))
            or n_heads < 1):
        raise ValueError(f"alibi_slopes: n_heads must be a positive integer, "
                         f"got {n_heads!r}")

    def geometric(n):  # the n slopes of a power-of-two head count n
        return 2.0 ** (-8.0 * np.arange(1, n + 1) / n)

    p = 2 ** math.floor(math.log2(n_heads))    # power of two <= n_heads
    extra = geometric(2 * p)[0::2][:n_heads - p]  # every other slope of 2p
    return np.concatenate([geometric(p), extra])
# --8<-- [end:slopes]


# --8<-- [start:bias]
def alibi_bias(n_heads, query_positions, key_positions):
    """The additive bias -m_h * (i - j) = m_h * (j - i), (n_heads, n_q, n_k).

    Pass it as ``attention(..., mask=bias, causal=True)``: ALiBi penalises
    distance and leaves causality to the mask.
    """
    i = np.asarray(query_positions)
    j = np.asarray(key_positions)
    if (i.ndim != 1 or j.ndim != 1 or not np.issubdtype(i.dtype, np.integer)
            or not np.issubdtype(j.dtype, np.integer)):
        raise ValueError(
            f"alibi_bias: query_positions and key_positions must be 1-D "
            f"integers, got dtypes {i.dtype}, {j.dtype} and shapes "
            f"{i.shape}, {j.shape}")
    # In float64: j - i of unsigned positions would wrap (0 - 1 = 2**64 - 1),
    # and of narrow ones overflow; exact for every position below 2**53.
    offset = j.astype(np.float64)[None, :] - i[:, None]  # (n_q, n_k): -distance
    slopes = alibi_slopes(n_heads)[:, None, None]         # (h, 1, 1)
    return slopes * offset                                # (h, n_q, n_k)
# --8<-- [end:bias]
