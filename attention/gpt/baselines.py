"""What a model must beat: a unigram and a bigram model of the same tokens.

A unigram model predicts every token with its frequency in the training
text; a bigram model with its frequency after the previous token. Both are
smoothed (add-α), so a pair never seen in training still gets a little
probability and the validation loss stays finite.
"""

# --8<-- [start:baselines]
import numpy as np


def _check_ids(fn, train_ids, val_ids, vocab_size, least):
    """Both streams as 1-D integer arrays of ids in [0, vocab_size); val_ids
    of at least `least` tokens. -1 would read the last row, not fail."""
    if isinstance(vocab_size, bool) or not isinstance(
            vocab_size, (int, np.integer)) or vocab_size < 1:
        raise ValueError(f"{fn}: vocab_size must be a positive integer, "
                         f"got {vocab_size!r}")
    streams = []
    for name, ids in (("train_ids", train_ids), ("val_ids", val_ids)):
        ids = np.asarray(ids)
        if ids.ndim != 1 or ids.size and not np.issubdtype(ids.dtype,
                                                           np.integer):
            raise ValueError(f"{fn}: {name} must be a 1-D sequence of "
                             f"integers, got dtype {ids.dtype} and shape "
                             f"{ids.shape}")
        bad = np.flatnonzero((ids < 0) | (ids >= vocab_size))
        if bad.size:
            raise ValueError(f"{fn}: {name}[{bad[0]}] = {ids[bad[0]]} is not "
                             f"a token id in [0, {vocab_size})")
        streams.append(ids.astype(np.intp, copy=False))  # bincount wants intp
    if len(streams[1]) < least:
        raise ValueError(f"{fn}: val_ids needs at least {least} tokens, "
                         f"got {len(streams[1])}")
    return streams


def unigram_loss(train_ids, val_ids, vocab_size, *, alpha=1.0):
    """Mean -log p(token) over val_ids, p from train_ids' counts."""
    train_ids, val_ids = _check_ids("unigram_loss", train_ids, val_ids,
                                    vocab_size, least=1)
    counts = np.bincount(train_ids, minlength=vocab_size) + alpha
    log_p = np.log(counts / counts.sum())  # (vocab,)
    return float(-log_p[val_ids].mean())


def bigram_loss(train_ids, val_ids, vocab_size, *, alpha=0.1):
    """Mean -log p(next | previous) over val_ids' pairs."""
    train_ids, val_ids = _check_ids("bigram_loss", train_ids, val_ids,
                                    vocab_size, least=2)
    counts = np.full((vocab_size, vocab_size), alpha)  # (previous, next)
    np.add.at(counts, (train_ids[:-1], train_ids[1:]), 1)
    log_p = np.log(counts / counts.sum(axis=1, keepdims=True))
    return float(-log_p[val_ids[:-1], val_ids[1:]].mean())
# --8<-- [end:baselines]
