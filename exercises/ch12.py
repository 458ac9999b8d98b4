"""Practice exercises of chapter 12: starters, worked solutions and plausible wrong answers.

Each exercise has an `exN-starter` and an `exN-solution` section (the page includes them
by snippet) and `exN-wrong-<what>` sections that its self-check must reject (never shown;
tests/practice/test_wrong_answers.py runs them). Starter and solution define the same
name on purpose: the reader replaces the one with the other.
"""

# --8<-- [start:imports]
import numpy as np

from attention.practice.ch12 import check_choose_keys, check_indexer_scores
# --8<-- [end:imports]

# --8<-- [start:ex1-starter]
def choose_keys(scores, k):
    """The k keys each query reads: scores (n_q, n_k), -inf on keys a
    query may not see. Returns (n_q, k) key indices, best first; of two
    equal scores the earlier key comes first."""
    # Your code: this takes the first k keys, whatever their scores.
    return np.tile(np.arange(k), (scores.shape[0], 1))
# --8<-- [end:ex1-starter]


# --8<-- [start:ex1-solution]
def choose_keys(scores, k):
    """The k keys each query reads: scores (n_q, n_k), -inf on keys a
    query may not see. Returns (n_q, k) key indices, best first; of two
    equal scores the earlier key comes first."""
    # Sort the negated scores: the largest come first, and a stable sort
    # keeps equal scores in key order.
    return np.argsort(-scores, axis=-1, kind="stable")[:, :k]
# --8<-- [end:ex1-solution]


# --8<-- [start:ex1-wrong-reversed]
# rejected with: the later key comes first
def choose_keys(scores, k):
    return np.argsort(scores, axis=-1, kind="stable")[:, ::-1][:, :k]
# --8<-- [end:ex1-wrong-reversed]


# --8<-- [start:ex1-wrong-smallest]
# rejected with: the smallest scores
def choose_keys(scores, k):
    return np.argsort(scores, axis=-1, kind="stable")[:, :k]
# --8<-- [end:ex1-wrong-smallest]


# --8<-- [start:ex1-wrong-unordered]
# rejected with: best first
def choose_keys(scores, k):
    return np.sort(np.argsort(-scores, axis=-1, kind="stable")[:, :k], axis=-1)
# --8<-- [end:ex1-wrong-unordered]


# --8<-- [start:ex2-starter]
def indexer_scores(q, w, k):
    """The lightning indexer's scores: q (n_q, heads, d) queries, w
    (n_q, heads) weights, k (n_k, d) keys (one per token, all heads).
    Returns (n_q, n_k): sum over heads of w * ReLU(q . k / sqrt(d))."""
    # Your code: this is one head's plain dot products.
    return q[:, 0] @ k.T
# --8<-- [end:ex2-starter]


# --8<-- [start:ex2-solution]
def indexer_scores(q, w, k):
    """The lightning indexer's scores: q (n_q, heads, d) queries, w
    (n_q, heads) weights, k (n_k, d) keys (one per token, all heads).
    Returns (n_q, n_k): sum over heads of w * ReLU(q . k / sqrt(d))."""
    logits = np.einsum("shd,td->sht", q, k) * q.shape[-1] ** -0.5
    return np.einsum("sh,sht->st", w, np.maximum(logits, 0))
# --8<-- [end:ex2-solution]


# --8<-- [start:ex2-wrong-relu-last]
# rejected with: on each head's product
def indexer_scores(q, w, k):
    logits = np.einsum("shd,td->sht", q, k) * q.shape[-1] ** -0.5
    return np.maximum(np.einsum("sh,sht->st", w, logits), 0)
# --8<-- [end:ex2-wrong-relu-last]


# --8<-- [start:ex2-wrong-unscaled]
# rejected with: divide the products by sqrt(d)
def indexer_scores(q, w, k):
    logits = np.einsum("shd,td->sht", q, k)
    return np.einsum("sh,sht->st", w, np.maximum(logits, 0))
# --8<-- [end:ex2-wrong-unscaled]


# --8<-- [start:ex2-wrong-unweighted]
# rejected with: weight each head by w
def indexer_scores(q, w, k):
    logits = np.einsum("shd,td->sht", q, k) * q.shape[-1] ** -0.5
    return np.maximum(logits, 0).sum(axis=1)
# --8<-- [end:ex2-wrong-unweighted]
