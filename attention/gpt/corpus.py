"""The training text: the course's own pages, some held out for validation.

The held-out pages are whole pages, not random lines: lines of one page
share its words, examples and code, so a line-level split would let the
validation text leak into training. Batches are random windows of n + 1
consecutive tokens of the training stream: the first n are the input, the
last n the targets (each the token after its input).
"""

# --8<-- [start:corpus]
import numpy as np


def windows(ids, n):
    """Non-overlapping (inputs, targets) windows covering ids, (m, n) each."""
    ids = np.asarray(ids, dtype=np.int64)
    m = (len(ids) - 1) // n
    if m < 1:
        raise ValueError(f"windows: {len(ids)} tokens hold no window of "
                         f"{n} + 1")
    inputs = ids[: m * n].reshape(m, n)  # (m, n)
    targets = ids[1: m * n + 1].reshape(m, n)  # (m, n), shifted by one
    return inputs, targets


def random_windows(rng, ids, batch, n):
    """(inputs, targets), (batch, n) each, from random starts in ids."""
    ids = np.asarray(ids, dtype=np.int64)
    if len(ids) < n + 1:
        raise ValueError(f"random_windows: {len(ids)} tokens hold no window "
                         f"of {n} + 1")
    starts = rng.integers(0, len(ids) - n, size=batch)  # (batch,)
    rows = starts[:, None] + np.arange(n + 1)  # (batch, n + 1)
    chunk = ids[rows]
    return chunk[:, :-1], chunk[:, 1:]
# --8<-- [end:corpus]
