"""What a model must beat: a unigram and a bigram model of the same tokens.

A unigram model predicts every token with its frequency in the training
text; a bigram model with its frequency after the previous token. Both are
smoothed (add-α), so a pair never seen in training still gets a little
probability and the validation loss stays finite.
"""

# --8<-- [start:baselines]
import numpy as np


def unigram_loss(train_ids, val_ids, vocab_size, *, alpha=1.0):
    """Mean -log p(token) over val_ids, p from train_ids' counts."""
    counts = np.bincount(train_ids, minlength=vocab_size) + alpha
    log_p = np.log(counts / counts.sum())  # (vocab,)
    return float(-log_p[val_ids].mean())


def bigram_loss(train_ids, val_ids, vocab_size, *, alpha=0.1):
    """Mean -log p(next | previous) over val_ids' pairs."""
    train_ids, val_ids = np.asarray(train_ids), np.asarray(val_ids)
    counts = np.full((vocab_size, vocab_size), alpha)  # (previous, next)
    np.add.at(counts, (train_ids[:-1], train_ids[1:]), 1)
    log_p = np.log(counts / counts.sum(axis=1, keepdims=True))
    return float(-log_p[val_ids[:-1], val_ids[1:]].mean())
# --8<-- [end:baselines]
