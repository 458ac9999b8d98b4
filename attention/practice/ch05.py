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
from attention.practice.verdict import call, guard_checks, verdict


# Exercise 1 ---------------------------------------------------------------------------

class _CountingList(list):
    """A list that counts how many times it is iterated over."""

    passes = 0

    def __iter__(self):
        self.passes += 1
        return super().__iter__()


def check_running_max_and_sum(your_function):
    """Exercise 1: your_function(blocks) = (max of all scores, sum of exp(score - max))."""
    rng = np.random.default_rng(5)
    # Three blocks of one row of scores; the maximum rises in every block.
    blocks = [rng.normal(size=4) + shift for shift in (0.0, 1.5, 3.0)]
    row = np.concatenate(blocks)
    m_true = float(row.max())
    l_true = float(np.exp(row - m_true).sum())
    # The verdict says "in one pass", so it is checked: the blocks come in a list that
    # counts how many times it is walked through (a two-pass answer, the maximum first and
    # then the sum, walks it twice).
    walks = _CountingList(b.copy() for b in blocks)
    got, problem = call(your_function, walks)
    if problem:
        return verdict(False, problem)
    if walks.passes > 1:
        return verdict(False, f"your function went over the blocks {walks.passes} times; "
                              "do it in one pass: keep m and l up to date block by block")
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


# Exercise 4 ---------------------------------------------------------------------------

_TILE_CASES = [  # n, d, d_v, q0, b_q, block: tiles and key blocks that do not line up
    (10, 4, 3, 4, 4, 3),
    (10, 4, 3, 0, 4, 3),
    (10, 4, 3, 8, 2, 3),
    (9, 4, 2, 3, 3, 4),
    (6, 4, 2, 2, 3, 8),  # one block holds every key
]


def _tile_reference(q_tile, k, v, q0, block, *, offset=True, strict=False,
                    rescale_acc=True, mask=True):
    """The online softmax for one causal query tile, with the mistakes a reader may make."""
    b_q = q_tile.shape[0]
    positions = (q0 if offset else 0) + np.arange(b_q)  # (b_q,) where each query sits
    m = np.full(b_q, -np.inf)
    l = np.zeros(b_q)
    acc = np.zeros((b_q, v.shape[1]))
    for k0 in range(0, min(q0 + b_q, k.shape[0]), block):
        keys = np.arange(k0, min(k0 + block, k.shape[0]))  # positions of this block's keys
        s = q_tile @ k[keys].T / math.sqrt(q_tile.shape[1])  # (b_q, b_k)
        if mask:
            visible = keys[None, :] < positions[:, None] if strict else keys[None, :] <= positions[:, None]
            s = np.where(visible, s, -np.inf)
        m_new = np.maximum(m, s.max(axis=1))
        with np.errstate(invalid="ignore"):
            alpha = np.where(np.isneginf(m_new), 0.0, np.exp(m - m_new))
            p = np.where(np.isneginf(s), 0.0, np.exp(s - m_new[:, None]))
        l = l * alpha + p.sum(axis=1)
        acc = (acc * alpha[:, None] if rescale_acc else acc) + p @ v[keys]
        m = m_new
    with np.errstate(invalid="ignore", divide="ignore"):
        return acc / l[:, None]


def check_tile_attention(your_function):
    """Exercise 4: your_function(q_tile, k, v, q0, block) = causal attention of one query tile.

    The queries of q_tile (b_q, d) sit at positions q0 .. q0 + b_q - 1 of a sequence whose
    keys and values are k (n, d) and v (n, d_v); query i sees keys 0 .. q0 + i. The answer
    must visit the keys `block` at a time with the online softmax and never compute a
    block the whole tile cannot see: the check fills those keys and values with NaN.
    """
    rng = np.random.default_rng(8)
    for n, d, d_v, q0, b_q, block in _TILE_CASES:
        q, k, v = rng.normal(size=(n, d)), rng.normal(size=(n, d)), rng.normal(size=(n, d_v))
        k[:, 0] *= 2.0  # spread the scores so that mistakes show
        expected = attention(q, k, v, causal=True)[q0:q0 + b_q]  # (b_q, d_v)
        unseen = -(-(q0 + b_q) // block) * block  # first block that starts after the tile
        k_given, v_given = k.copy(), v.copy()
        k_given[unseen:], v_given[unseen:] = np.nan, np.nan
        where = (f"for the tile of queries {q0}..{q0 + b_q - 1} of a sequence of {n}, "
                 f"with blocks of {block} keys")
        got, problem = call(your_function, q[q0:q0 + b_q].copy(), k_given, v_given, q0, block)
        if problem:
            return verdict(False, problem)
        if got is None:
            return verdict(False, f"your function returned None; return the tile's output, shape {expected.shape}")
        got = np.asarray(got, dtype=float)
        if got.shape != expected.shape:
            return verdict(False, f"{where}, the output should have shape {expected.shape}, got {got.shape}")
        if np.isnan(got).any():
            clean, _ = call(your_function, q[q0:q0 + b_q].copy(), k.copy(), v.copy(), q0, block)
            try:
                clean = np.asarray(clean, dtype=float)
                read_unseen = clean.shape == expected.shape and not np.isnan(clean).any()
            except (TypeError, ValueError):
                read_unseen = False
            if read_unseen:
                return verdict(False, f"{where}, your output has NaN: the check filled keys {unseen}.. with "
                                      f"NaN, and no query of the tile may see them (the last one sits at "
                                      f"position {q0 + b_q - 1}). Stop the loop after the last block the "
                                      "tile can see")
        with np.errstate(invalid="ignore"):
            diff = np.abs(got - expected)
        error = float(np.nanmax(diff)) if not np.isnan(diff).all() else math.inf
        if np.isnan(got).any():
            rows = sorted(set(np.argwhere(np.isnan(got))[:, 0].tolist()))
            if np.allclose(got, _tile_reference(q[q0:q0 + b_q], k, v, q0, block, strict=True), equal_nan=True):
                return verdict(False, f"{where}, row {rows[0]} of your output is NaN: the query at position "
                                      f"{q0 + rows[0]} sees no key at all. Each query must also see the key "
                                      "at its own position (<=, not <)")
            return verdict(False, f"{where}, rows {rows} of your output are NaN: a row of exp(s - m) with "
                                  "m = -inf, or a sum l of 0, gives 0/0; check the mask and the rescaling")
        if error <= 1e-10:
            continue
        args = (q[q0:q0 + b_q], k, v, q0, block)
        hints = [
            (dict(mask=False), "the keys after each query's position are not masked in the blocks the "
                               "diagonal crosses: give them a score of -inf before taking the maximum"),
            (dict(offset=False), f"query i of the tile sits at position q0 + i = {q0} + i, not at i: "
                                 "compare key positions with that"),
            (dict(strict=True), "each query must also see the key at its own position (<=, not <)"),
            (dict(rescale_acc=False), "when the maximum rises, the accumulator must be multiplied by "
                                      "exp(m - m_new) as well as the sum l"),
        ]
        for mistake, hint in hints:
            with np.errstate(all="ignore"):
                wrong = _tile_reference(*args, **mistake)
            if np.allclose(got, wrong, equal_nan=True):
                return verdict(False, f"{where}, your output is off by up to {error:.2f}: {hint}")
        return verdict(False, f"{where}, your output differs from causal attention by up to {error:.2f}")
    return verdict(True, f"all {len(_TILE_CASES)} tiles equal causal attention, and no block the tile "
                         "cannot see was computed.")


guard_checks(globals())  # no check raises, whatever the answer (verdict.py)
