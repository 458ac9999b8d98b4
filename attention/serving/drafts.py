"""Drafts without weights: prompt lookup and an n-gram table, built offline.

A draft pays when its step costs little beside a target call and it guesses often.
On a small model on a CPU a draft model's step costs a good part of the target's
(chapter 11 measures it); a table lookup costs microseconds. Two guesses:

- prompt lookup (Saxena, "Prompt Lookup Decoding", 2023; Yang et al., "Inference
  with Reference", 2023): if the last n - 1 tokens occurred earlier in the
  context, propose the token that followed them there (the latest occurrence);
- an n-gram table from the training tokens: the token that most often followed
  the last n - 1 tokens, backing off to shorter contexts, down to the most
  frequent token overall.

The draft's q is one-hot at its guess for greedy decoding; for sampling it is the
table's counts, normalized, or one-hot at a prompt-lookup match. The accept/reject
rule makes the output the target's whatever q is, so q only changes the speed.
"""

# --8<-- [start:ngram]
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


class NgramDraft:
    """Guesses the next token from the context (n,) by prompt lookup, then
    by counts of n-grams in tokens (the training ids), for ``speculate``.
    lookup=False leaves out the prompt lookup."""

    def __init__(self, tokens, vocab_size, *, n=3, lookup=True):
        tokens = _check_ngram(tokens, vocab_size, n)
        self.vocab_size, self.n, self.lookup = int(vocab_size), n, lookup
        # (context of m tokens) -> (next ids, their counts), most frequent
        # first, for m = n - 1 down to 0 (m = 0: the unigram, key ())
        self.table = {}
        for m in range(n - 1, -1, -1):
            grams, counts = np.unique(sliding_window_view(tokens, m + 1),
                                      axis=0, return_counts=True)
            starts = np.flatnonzero(np.r_[True, np.any(
                grams[1:, :m] != grams[:-1, :m], axis=1)])
            for a, b in zip(starts, np.r_[starts[1:], len(grams)]):
                order = np.argsort(-counts[a:b], kind="stable")  # ties: low id
                self.table[tuple(grams[a, :m].tolist())] = (
                    grams[a:b, m][order], counts[a:b][order])

    def guess(self, context):
        """(next ids, weights) after context (n,): a prompt-lookup match
        (one id), else the table row of the longest context it knows."""
        context = np.asarray(context)
        m = self.n - 1
        if self.lookup and len(context) > m:
            # starts s < len - m where context[s:s + m] is the last m tokens
            found = np.ones(len(context) - m, bool)
            for j in range(m):
                found &= context[j:len(context) - m + j] == context[j - m]
            hits = np.flatnonzero(found)
            if len(hits):
                return context[hits[-1] + m:hits[-1] + m + 1], np.ones(1)
        for m in range(min(m, len(context)), -1, -1):
            row = self.table.get(tuple(context[len(context) - m:].tolist()))
            if row is not None:
                return row
        raise AssertionError("the unigram row () is always in the table")

    def distribution(self, context, *, temperature=0.0, top_k=None,
                     top_p=None):
        """The draft's q (vocab,) after context: one-hot at its guess for
        temperature 0, else the guessed row's counts, normalized (top_k and
        top_p are the target's settings; any q keeps the output exact)."""
        ids, weights = self.guess(context)
        q = np.zeros(self.vocab_size)
        if temperature == 0:
            q[ids[0]] = 1.0
        else:
            q[ids] = weights / weights.sum()
        return q

    def rewind(self, n):
        """Nothing to forget: the guesses read the context each time."""
# --8<-- [end:ngram]


def _check_ngram(tokens, vocab_size, n):
    """NgramDraft's arguments; returns tokens as a 1-D integer array."""
    if (isinstance(vocab_size, bool)
            or not isinstance(vocab_size, (int, np.integer)) or vocab_size < 1):
        raise ValueError(f"NgramDraft: vocab_size must be a positive integer, "
                         f"got {vocab_size!r}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"NgramDraft: n must be an integer >= 2, got {n!r}")
    tokens = np.asarray(tokens)
    if tokens.ndim != 1 or tokens.dtype.kind not in "iu" or len(tokens) < n:
        raise ValueError(f"NgramDraft: tokens must be at least n = {n} "
                         f"integer ids in one dimension, got dtype "
                         f"{tokens.dtype} and shape {tokens.shape}")
    if tokens.min() < 0 or tokens.max() >= vocab_size:
        raise ValueError(f"NgramDraft: tokens must lie in 0..{vocab_size - 1}"
                         f", got ids from {tokens.min()} to {tokens.max()}")
    return tokens
