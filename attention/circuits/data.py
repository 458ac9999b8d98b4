"""Training data for induction heads: a random segment, then the same segment again.

The first half of each sequence is random, so nothing predicts it: the best a model can do
there is about log(vocab_size) nats per token. The second half repeats the first, so from
its second token on each next token is written earlier in the context: a model that finds
the earlier occurrence of the current token and copies what followed it (an induction head,
Elhage et al. 2021; Olsson et al. 2022) predicts it almost exactly. The tokens of a segment
are distinct, so each token of the repeat has exactly one earlier occurrence.
"""

# --8<-- [start:data]
import numpy as np


def repeated_segments(rng, batch, half, vocab_size):
    """(batch, 2 * half) token ids: `half` distinct random tokens, twice."""
    if not (isinstance(half, (int, np.integer)) and 2 <= half <= vocab_size):
        raise ValueError(f"repeated_segments: half must be an int in "
                         f"2..vocab_size={vocab_size}, got {half!r}")
    if not (isinstance(batch, (int, np.integer)) and batch >= 1):
        raise ValueError(f"repeated_segments: batch must be an int >= 1, "
                         f"got {batch!r}")
    # a random permutation of the vocabulary per row, cut to `half`
    order = np.argsort(rng.random((batch, vocab_size)), axis=1)
    segment = order[:, :half]  # (batch, half), distinct per row
    return np.concatenate([segment, segment], axis=1)  # (batch, 2 * half)


def repeat_positions(half):
    """Positions whose next token the repeat determines: half .. 2 half - 2.

    Position half holds the segment's first token again; what followed its
    first occurrence (position 1) follows it now, and so on to the end."""
    return np.arange(half, 2 * half - 1)
# --8<-- [end:data]
