"""Self-checks for the practice exercises of chapter 12 (sparse and compressed attention).

Each check calls the reader's function on data of its own, drawn afresh at every call,
prints one verdict ("✓ Correct: ..." or "✗ Not yet: ..." saying what is wrong) and
returns True or False. References come from ``attention.sparse``.
"""

import numpy as np

from attention.practice.trials import (Trial, fresh_rng, judge, redrawable,
                                       shape_text)
from attention.practice.verdict import guard_checks
from attention.sparse.indexer import index_scores, top_k_keys


# Exercise 1 ---------------------------------------------------------------------------

@redrawable
def _keys_trial(rng, n_q, n_k, k, *, masked=False):
    # Small integer scores: ties everywhere, at the k-th place too.
    scores = rng.integers(0, 4, size=(n_q, n_k)).astype(np.float64)
    scores[0, :2] = scores[0, -2:] = scores[0].max()  # a tie across the row
    label = f"scores {shape_text(scores.shape)} of few values (many ties), k={k}"
    if masked:  # the future of each query, as a causal mask leaves it
        scores[~np.tril(np.ones((n_q, n_k), bool), n_k - n_q)] = -np.inf
        label += ", -inf above the diagonal"
    return Trial(label, (scores, k))


def _keys(scores, k):
    return top_k_keys(scores, k)[0]


def check_choose_keys(your_function):
    """Exercise 1: your_function(scores, k) = the k best keys, ties to the earlier."""
    rng = fresh_rng()
    trials = [_keys_trial(rng, 4, 9, 3), _keys_trial(rng, 3, 6, 1),
              _keys_trial(rng, 5, 5, 2, masked=True),
              _keys_trial(rng, 2, 12, 5)]
    hints = [
        (lambda s, k: np.tile(np.arange(k), (s.shape[0], 1)),
         "these are the first k keys, whatever their scores: rank each row"),
        (lambda s, k: np.argsort(s, axis=-1, kind="stable")[:, ::-1][:, :k],
         "of two equal scores the later key comes first: reversing an ascending "
         "sort reverses the ties too; sort the negated scores instead"),
        (lambda s, k: np.argsort(s, axis=-1, kind="stable")[:, :k],
         "these are the keys with the smallest scores; take the largest"),
        (lambda s, k: np.sort(_keys(s, k), axis=-1),
         "the right keys in key order; give them best first"),
    ]
    return judge(your_function, trials, _keys, what="choose_keys", hints=hints,
                 success="your keys are the k best of each row, best first, "
                         "ties to the earlier key.")


# Exercise 2 ---------------------------------------------------------------------------

@redrawable
def _scores_trial(rng, n_q, n_k, heads, d, dtype=np.float64):
    q = rng.normal(size=(n_q, heads, d)).astype(dtype)
    w = rng.normal(size=(n_q, heads)).astype(dtype)  # negative weights too
    k = rng.normal(size=(n_k, d)).astype(dtype)
    return Trial(f"q {shape_text(q.shape)}, w {shape_text(w.shape)}, k "
                 f"{shape_text(k.shape)}, {np.dtype(dtype).name}", (q, w, k),
                 dtype=np.dtype(dtype))


def _scores(q, w, k):
    return index_scores(q[None], w[None], k[None])[0]


def _scale(q):
    return q.shape[-1] ** -0.5


def check_indexer_scores(your_function):
    """Exercise 2: your_function(q, w, k) = sum_h w * ReLU(q . k / sqrt(d))."""
    rng = fresh_rng()
    trials = [_scores_trial(rng, 4, 7, 3, 8), _scores_trial(rng, 1, 5, 2, 4),
              _scores_trial(rng, 6, 6, 5, 16, np.float32),
              _scores_trial(rng, 3, 9, 1, 6)]
    hints = [
        (lambda q, w, k: q[:, 0] @ k.T,
         "these are head 0's plain dot products: every head's, scaled by "
         "1/sqrt(d), through the ReLU, weighted by w and summed"),
        (lambda q, w, k: np.maximum(np.einsum(
            "sh,sht->st", w, np.einsum("shd,td->sht", q, k) * _scale(q)), 0),
         "the ReLU goes on each head's product, before the weights: a head "
         "with a negative weight lowers the score"),
        (lambda q, w, k: _scores(q, w, k) / _scale(q),
         "divide the products by sqrt(d), the indexer head's size"),
        (lambda q, w, k: np.maximum(np.einsum("shd,td->sht", q, k)
                                    * _scale(q), 0).sum(axis=1),
         "weight each head by w before summing over the heads"),
    ]
    return judge(your_function, trials, _scores, what="indexer_scores",
                 hints=hints, success="your scores equal the lightning "
                 "indexer's, negative weights and float32 included.")


guard_checks(globals())
