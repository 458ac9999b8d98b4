"""Self-checks for the practice exercises of chapter 5 (attention at scale).

Each check calls the reader's function on data of its own, prints a one-line verdict
("✓ Correct: ..." or "✗ Not yet: ..." saying concretely what is wrong) and returns True
or False. A check never raises because an answer is wrong, so a page can run an unsolved
starter and show the check's message.
"""

import math

import numpy as np

from attention.masks import causal_mask
from attention.scaled_dot_product import attention
from attention.practice.verdict import call, verdict


# Exercise 1 ---------------------------------------------------------------------------

def check_running_max_and_sum(your_function):
    """Exercise 1: your_function(blocks) = (max of all scores, sum of exp(score - max))."""
    rng = np.random.default_rng(5)
    # Three blocks of one row of scores; the maximum rises in every block.
    blocks = [rng.normal(size=4) + shift for shift in (0.0, 1.5, 3.0)]
    row = np.concatenate(blocks)
    m_true = float(row.max())
    l_true = float(np.exp(row - m_true).sum())
    got, problem = call(your_function, [b.copy() for b in blocks])
    if problem:
        return verdict(False, problem)
    try:
        m, l = (float(x) for x in got)
    except (TypeError, ValueError):
        return verdict(False, f"return a pair (m, l) of numbers, got {got!r}")
    if not math.isclose(m, m_true, rel_tol=1e-9):
        return verdict(False, f"m should be the largest score of all blocks, {m_true:.3f}, got {m:.3f}")
    if math.isclose(l, l_true, rel_tol=1e-9):
        return verdict(True, f"3 blocks give m = {m_true:.2f} and l = {l_true:.2f}, "
                              "the softmax normaliser of the whole row, in one pass.")
    unscaled = sum(float(np.exp(b - max(float(np.max(bb)) for bb in blocks[: i + 1])).sum())
                   for i, b in enumerate(blocks))
    if math.isclose(l, unscaled, rel_tol=1e-9):
        return verdict(False, f"l = {l:.3f} but should be {l_true:.3f}: each block's terms were summed "
                               "relative to the maximum of that moment; when the maximum rises from m "
                               "to m_new, multiply the sum so far by exp(m - m_new)")
    return verdict(False, f"l should be sum(exp(score - m)) over all blocks, {l_true:.3f}, got {l:.3f}")


# Exercise 2 ---------------------------------------------------------------------------

def _half(q, k, v):
    """Attention over some keys: the normalised output, the row max and the row sum."""
    scores = q @ k.T / math.sqrt(q.shape[-1])  # (n_q, n_k_half)
    m = scores.max(axis=-1)  # (n_q,)
    p = np.exp(scores - m[:, None])  # (n_q, n_k_half)
    l = p.sum(axis=-1)  # (n_q,)
    return p @ v / l[:, None], m, l


def check_merge(your_function):
    """Exercise 2: your_function(o1, m1, l1, o2, m2, l2) = attention over both key halves."""
    rng = np.random.default_rng(6)
    q, k, v = rng.normal(size=(5, 8)), rng.normal(size=(12, 8)), rng.normal(size=(12, 3))
    k[6:] *= 3.0  # the second half scores higher, so the two maxima differ
    halves = _half(q, k[:6], v[:6]) + _half(q, k[6:], v[6:])  # two halves of 6 keys
    expected = attention(q, k, v)
    got, problem = call(your_function, *halves)
    if problem:
        return verdict(False, problem)
    if got is None:
        return verdict(False, "merge returned None; return the merged output, shape (5, 3)")
    got = np.asarray(got)
    if got.shape != expected.shape:
        return verdict(False, f"the merged output should have shape {expected.shape}, got {got.shape}")
    error = float(np.max(np.abs(got - expected)))
    if error <= 1e-12:
        return verdict(True, "merging the two halves equals attention over all 12 keys (max difference below 1e-12).")
    o1, m1, l1, o2, m2, l2 = halves
    if np.allclose(got, (o1 + o2) / 2):
        return verdict(False, f"the plain average is off by up to {error:.2f}: the halves do not carry equal "
                               "weight; weight each by its share of the softmax mass, l_i * exp(m_i - m)")
    if np.allclose(got, (l1[:, None] * o1 + l2[:, None] * o2) / (l1 + l2)[:, None]):
        return verdict(False, f"off by up to {error:.2f}: l1 and l2 are sums relative to different maxima "
                               "m1 and m2; bring both to m = max(m1, m2) with exp(m_i - m) first")
    return verdict(False, f"your output differs from attention over all keys by up to {error:.2f}")


# Exercise 3 ---------------------------------------------------------------------------

_TILE_SHAPES = [(16, 16, 4, 4), (4, 12, 2, 4), (6, 14, 4, 3), (10, 10, 3, 4)]  # n_q, n_k, bq, bk


def check_tile_kind(your_function):
    """Exercise 3: your_function(q0, q1, k0, k1, n_q, n_k) in {"skip", "full", "diagonal"}."""
    counts = None
    total = 0
    for n_q, n_k, bq, bk in _TILE_SHAPES:
        allowed = causal_mask(n_q, n_k)  # (n_q, n_k), bottom-right aligned
        tally = {"skip": 0, "full": 0, "diagonal": 0}
        for q0 in range(0, n_q, bq):
            q1 = min(q0 + bq, n_q)
            for k0 in range(0, n_k, bk):
                k1 = min(k0 + bk, n_k)
                tile = allowed[q0:q1, k0:k1]
                want = "skip" if not tile.any() else "full" if tile.all() else "diagonal"
                got, problem = call(your_function, q0, q1, k0, k1, n_q, n_k)
                if problem:
                    return verdict(False, problem)
                if got != want:
                    return verdict(False, f"with n_q = {n_q}, n_k = {n_k}, the tile of queries {q0}..{q1 - 1} and "
                                           f"keys {k0}..{k1 - 1} is {want!r}, you said {got!r}: query {q0} sits at "
                                           f"position {n_k - n_q + q0} and sees keys 0..{n_k - n_q + q0}")
                tally[want] += 1
                total += 1
        counts = counts or tally
    return verdict(True, f"all {total} tiles of {len(_TILE_SHAPES)} shapes classified; for n_q = n_k = 16 with "
                          f"4 x 4 tiles: {counts['skip']} skipped, {counts['diagonal']} on the diagonal, "
                          f"{counts['full']} full.")
