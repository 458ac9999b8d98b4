"""Self-checks for the practice exercises of chapter 5 (attention at scale).

Each check calls the reader's function on data of its own, prints a one-line verdict
("✓ Correct: ..." or "✗ Not yet: ..." saying concretely what is wrong) and returns True
or False. A check never raises because an answer is wrong, so a page can run an unsolved
starter and show the check's message.
"""

import math

import numpy as np

from attention.masks import causal_mask
from attention.model import ModelConfig, forward, init_params
from attention.scaled_dot_product import attention
from attention.softmax import logsumexp, softmax
from attention.practice.measure import BlockStream, Counted, kib, peak_memory
from attention.practice.trials import (Trial, as_array, difference, first_failure,
                                       fresh_rng, judge, matches, redrawable,
                                       shape_text)
from attention.practice.verdict import call, guard_checks, num, verdict
from attention.serving.split_kv import chunk_attention


# Exercise 1 ---------------------------------------------------------------------------

_BLOCKS, _BLOCK = 48, 2048  # a stream of 48 blocks of 2,048 scores (16 KiB each)


def _stream_trial(rng, shift):
    """Blocks of one row of scores whose maximum rises (then falls), around ``shift``."""
    rises = np.concatenate([np.linspace(0, 6, _BLOCKS // 2), np.linspace(6, 2, _BLOCKS // 2)])
    return [rng.normal(size=_BLOCK) + r + shift for r in rises]


def check_running_max_and_sum(your_function):
    """Exercise 1: your_function(blocks) = (max of all scores, sum of exp(score - max)),
    in one pass over a stream of blocks.

    "One pass" is measured: the blocks come as a stream that can be walked once; taking
    the next block overwrites the one before with NaN (an answer that keeps blocks to
    read later computes NaN), and the call's peak memory must stay below a few blocks
    (an answer that copies them all, or concatenates them, holds the whole row).
    """
    rng = fresh_rng()
    limit = 8 * _BLOCK * 8 + 64 * 1024
    for shift, what in ((0.0, "scores near 0"), (1000.0, "scores near 1000"),
                        (-1000.0, "scores near -1000")):
        blocks = _stream_trial(rng, shift)
        row = np.concatenate(blocks)
        m_true = float(row.max())
        l_true = float(np.exp(row - m_true).sum())
        stream = BlockStream(blocks)
        label = f"a stream of {_BLOCKS} blocks of {_BLOCK:,} {what}"
        got, problem, peak = peak_memory(your_function, stream)
        if problem:
            return verdict(False, f"on {label}: {problem}" + (
                "; blocks is a stream, not a list: loop over it once, "
                "`for block in blocks`" if "raised" in problem else ""))
        if stream.passes > 1:
            return verdict(False, f"on {label}: your function went over the blocks "
                                  f"{stream.passes} times; do it in one pass: keep m and l up "
                                  "to date block by block")
        try:
            m, l = (float(x) for x in got)
        except (TypeError, ValueError):
            return verdict(False, f"on {label}: return a pair (m, l) of numbers, got "
                                  f"{type(got).__name__}")
        if math.isnan(m) or math.isnan(l):
            return verdict(False, f"on {label}: your result is nan: each block is "
                                  "overwritten with NaN once the next one is taken, so an "
                                  "answer that keeps blocks to read them later computes NaN; "
                                  "use each block as it arrives")
        if peak > limit:
            return verdict(False, f"on {label}: your function held {kib(peak)} at once, the "
                                  f"whole row is {kib(row.nbytes)}: one pass keeps only m, l "
                                  f"and the current block (measured limit {kib(limit)})")
        if not math.isclose(m, m_true, rel_tol=1e-12):
            return verdict(False, f"on {label}: m should be the largest score of all blocks, "
                                  f"{num(m_true)}, got {num(m)}")
        if math.isclose(l, l_true, rel_tol=1e-9):
            continue
        if math.isinf(l):
            return verdict(False, f"on {label}: l overflowed to inf: sum exp(s - m_new), "
                                  "never exp(s) itself")
        return verdict(False, f"on {label}: l should be sum(exp(score - m)) over all "
                              f"blocks, {num(l_true)}, got {num(l)}; when the maximum "
                              "rises from m to m_new, multiply the sum so far by "
                              "exp(m - m_new)")
    return verdict(True, f"on 3 random streams of {_BLOCKS} blocks (scores near 0, 1000 and "
                         "-1000) your m and l equal the softmax normaliser of the whole row, "
                         "in one pass: each block used as it arrived, peak memory a few "
                         "blocks.")


# Exercise 2 ---------------------------------------------------------------------------

def _half(q, k, v, shift=0.0):
    """Attention over some keys: the normalised output, the row max and the row sum
    (scores shifted by ``shift``, which leaves the softmax as it is)."""
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1]) + shift  # (..., n_q, n_k)
    m = scores.max(axis=-1)  # (..., n_q)
    p = np.exp(scores - m[..., None])  # (..., n_q, n_k)
    l = p.sum(axis=-1)  # (..., n_q)
    return p @ v / l[..., None], m, l


@redrawable
def _merge_trial(rng, lead, n_q, n_k, d, d_v, split, shift=0.0, gap=0.0):
    """Two parts of the keys; ``gap`` is added to every score of the second part (its
    maximum then lies ``gap`` above the first's: exp of the difference overflows
    unless taken from the common maximum)."""
    q = rng.normal(size=lead + (n_q, d))
    k = rng.normal(size=lead + (n_k, d))
    v = rng.normal(size=lead + (n_k, d_v))
    k[..., split:, :] *= 3.0  # the second part scores higher: the two maxima differ
    halves = (_half(q, k[..., :split, :], v[..., :split, :], shift)
              + _half(q, k[..., split:, :], v[..., split:, :], shift + gap))
    label = (f"queries {shape_text(lead + (n_q, d))} over {split} + {n_k - split} keys"
             + (f", scores near {shift:g}" if shift else "")
             + (f", the second part's {gap:g} higher" if gap else ""))
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(d)
    scores[..., split:] += gap
    return Trial(label, halves, expected=softmax(scores, axis=-1) @ v)


def check_merge(your_function):
    """Exercise 2: your_function(o1, m1, l1, o2, m2, l2) = attention over both key parts,
    for any leading (batch, head) axes."""
    rng = fresh_rng()
    trials = [_merge_trial(rng, (), 5, 12, 8, 3, 6),
              _merge_trial(rng, (2, 3), 4, 11, 8, 5, 4),
              _merge_trial(rng, (2,), 6, 9, 4, 3, 7, shift=1000.0),
              _merge_trial(rng, (3,), 3, 8, 4, 2, 2, shift=-1000.0),
              _merge_trial(rng, (2,), 4, 7, 4, 3, 3, gap=1500.0)]

    def averaged(o1, m1, l1, o2, m2, l2):
        return (o1 + o2) / 2

    def by_l_only(o1, m1, l1, o2, m2, l2):
        return (l1[..., None] * o1 + l2[..., None] * o2) / (l1 + l2)[..., None]

    def no_common_max(o1, m1, l1, o2, m2, l2):
        w1, w2 = l1 * np.exp(m1), l2 * np.exp(m2)
        return (w1[..., None] * o1 + w2[..., None] * o2) / (w1 + w2)[..., None]

    return judge(
        your_function, trials, None, what="merge",
        success="merging the two parts equals attention over all keys.",
        hints=[(averaged, "the plain average: the parts do not carry equal weight; weight "
                "each by its share of the softmax mass, l_i * exp(m_i - m)"),
               (by_l_only, "l1 and l2 are sums relative to different maxima m1 and m2; "
                "bring both to m = max(m1, m2) with exp(m_i - m) first"),
               (no_common_max, "exp(m_i) overflows (or underflows) at scores near ±1000: "
                "weight by l_i * exp(m_i - m) with the common maximum m = max(m1, m2)")])


# Exercise 3 ---------------------------------------------------------------------------

_TILE_SHAPES = [(16, 16, 4, 4), (4, 12, 2, 4), (6, 14, 4, 3), (10, 10, 3, 4)]  # n_q, n_k, bq, bk


def check_tile_kind(your_function):
    """Exercise 3: your_function(q0, q1, k0, k1, n_q, n_k) in {"skip", "full", "diagonal"}."""
    counts = None
    rng = fresh_rng()
    shapes = _TILE_SHAPES + [(int(n_q), int(n_q + extra), int(bq), int(bk)) for n_q, extra, bq, bk
                             in rng.integers([3, 0, 2, 2], [20, 12, 6, 6], size=(6, 4))]
    for n_q, n_k, bq, bk in shapes:
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
        counts = counts or tally
    return verdict(True, f"every tile of {len(_TILE_SHAPES)} chosen and 6 random shapes "
                          "classified; for n_q = n_k = 16 with "
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
    rng = fresh_rng()
    for n, d, d_v, q0, b_q, block in _TILE_CASES:
        q, k, v = rng.normal(size=(n, d)), rng.normal(size=(n, d)), rng.normal(size=(n, d_v))
        k[:, 0] *= 2.0  # spread the scores so that mistakes show
        # ... and make them grow along the keys, so that every query's maximum rises in
        # a later block and a missing rescale always shows here
        q[:, 0] = np.abs(q[:, 0]) + 0.5
        k[:, 0] += np.linspace(0.0, 4.0, n)
        spread = (n, d, d_v, q0, b_q, block) == _TILE_CASES[-1]
        while spread:  # the tile's first query scores in the thousands, the others near
            q[q0] *= 400.0  # 1: one shift for the whole tile underflows some rows to 0
            s = q[q0:q0 + b_q] @ k.T / math.sqrt(d)  # (b_q, n): one block holds all
            seen = np.where(causal_mask(b_q, q0 + b_q), s[:, :q0 + b_q], -np.inf).max(1)
            # Built in, not left to the draw: rows 800 apart, and no row's largest score
            # on a key it may not see (masking after the exponential stays exact)
            if np.ptp(seen) > 800 and np.all(seen >= s.max(axis=1)):
                break
            q, k = rng.normal(size=(n, d)), rng.normal(size=(n, d))
            q[:, 0] = np.abs(q[:, 0]) + 0.5
            k[:, 0] = 2.0 * k[:, 0] + np.linspace(4.0, 0.0, n)  # the first keys score most
        expected = attention(q, k, v, causal=True)[q0:q0 + b_q]  # (b_q, d_v)
        unseen = -(-(q0 + b_q) // block) * block  # first block that starts after the tile
        k_given, v_given = k.copy(), v.copy()
        k_given[unseen:], v_given[unseen:] = np.nan, np.nan
        where = (f"for the tile of queries {q0}..{q0 + b_q - 1} of a sequence of {n}, "
                 f"with blocks of {block} keys"
                 + (", its first query's scores in the thousands" if spread else ""))
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
    problem = _tile_memory(your_function, rng)
    if problem:
        return verdict(False, problem)
    return verdict(True, f"all {len(_TILE_CASES)} random tiles (one whose queries score "
                         "thousands apart) equal causal attention, no "
                         "block the tile cannot see was read (those keys held NaN), and on "
                         f"a tile of {_BIG[4]} queries over {_BIG[0]:,} keys the peak memory "
                         "stayed that of a few blocks, not of a whole row of scores.")


_BIG = (2048, 16, 8, 2040, 8, 64)  # n, d, d_v, q0, b_q, block: a row of 2,048 scores


def _tile_memory(your_function, rng):
    """Block by block, measured: the peak memory of a call on a long sequence must stay
    below a few blocks' worth (a softmax over every visible key at once holds b_q x n)."""
    n, d, d_v, q0, b_q, block = _BIG
    q, k, v = rng.normal(size=(b_q, d)), rng.normal(size=(n, d)), rng.normal(size=(n, d_v))
    expected = attention(q, k, v, causal=True)  # bottom-right: query i sits at q0 + i
    got, problem, peak = peak_memory(your_function, q, k, v, q0, block)
    where = f"on the tile of queries {q0}..{q0 + b_q - 1} of {n:,} keys, blocks of {block}"
    if problem:
        return f"{where}: {problem}"
    got, problem = as_array(got, "tile_attention")
    if problem is None:
        problem = difference(got, expected)
    if problem:
        return f"{where}: {problem}"
    limit = 8 * b_q * block * 8 + 4 * block * (d + d_v) * 8 + 64 * 1024
    if peak > limit:
        return (f"{where}: your function held {kib(peak)} at once, more than a few blocks "
                f"({kib(limit)}); the scores of the whole row are {kib(b_q * n * 8)}. Go "
                "block by block with the online softmax: keep only m, l, the accumulator and "
                "one block of scores")
    return None


# Exercise 5 ---------------------------------------------------------------------------

@redrawable
def _partial_trial(rng, lead, n_q, n_k, d, d_v, dtype=np.float64, *, shift=0.0,
                   empty=True, levels=None):
    """A random mask with (``empty``) the first query's row all blocked; ``shift``
    puts every score near it, ``levels`` each query's scores near its own level (q
    gets a constant feature, k its match)."""
    q, k = rng.normal(size=lead + (n_q, d)), rng.normal(size=lead + (n_k, d))
    v = rng.normal(size=lead + (n_k, d_v))
    if shift or levels is not None:  # q·k / √d gains the level for every key
        q[..., 0] = shift if levels is None else np.asarray(levels, float)
        k[..., 0] = math.sqrt(d)
    mask = np.broadcast_to(rng.random(size=(n_q, n_k)) < 0.7, lead + (n_q, n_k)).copy()
    mask[..., -1, 0] = True  # a row with a key
    if empty:
        mask[..., 0, :] = False
    label = (f"q {shape_text(q.shape)} over {n_k} keys in {np.dtype(dtype).name}"
             + (", the first query's keys all blocked" if empty else "")
             + (f", scores near {shift:g}" if shift else "")
             + (", each query's scores near its own level, "
                + ", ".join(f"{x:+g}" for x in levels) if levels is not None else ""))
    return Trial(label, tuple(a.astype(dtype) for a in (q, k, v)) + (mask,), {},
                 np.dtype(dtype))


def check_partial_attention(your_function):
    """Exercise 5: your_function(q, k, v, mask) = (output, log-sum-exp) of attention
    over one part of the keys (the package's ``chunk_attention``)."""
    rng = fresh_rng()
    trials = [_partial_trial(rng, (), 4, 6, 8, 3),
              _partial_trial(rng, (2, 3), 3, 5, 4, 2),
              _partial_trial(rng, (2,), 4, 7, 4, 3, shift=1000.0),
              _partial_trial(rng, (2,), 3, 6, 4, 3, shift=-1000.0, empty=False),
              _partial_trial(rng, (3,), 5, 4, 8, 2, np.float32),
              _partial_trial(rng, (), 2, 3, 4, 2, empty=False),
              _partial_trial(rng, (2,), 3, 5, 4, 2, empty=False,
                             levels=(-1500.0, 0.0, 1500.0))]

    def compare(result, expected, trial):
        if not (isinstance(result, tuple) and len(result) == 2):
            return f"return a pair (output, lse), got {type(result).__name__}"
        q, k, v, mask = trial.args
        for i, name in enumerate(("the output", "the log-sum-exp")):
            got, problem = as_array(result[i], f"{name} (item {i} of the pair)")
            if problem is not None:
                return problem
            problem = difference(got, expected[i], trial.dtype)
            if problem is None:
                continue
            if got.shape == expected[i].shape:
                lse = expected[1]
                bad = ~np.isfinite(got) & (np.isfinite(expected[i]) if i else True)
                bad = bad if i else np.any(bad, axis=-1)
                if np.any(bad & np.isfinite(lse)):
                    return (f"{name} is inf or nan in a row with allowed keys: an "
                            "exponential overflowed at scores near 1000; subtract each "
                            "row's largest score first")
                if np.any(bad):
                    return (f"{name} holds nan in a row with no allowed key: there the "
                            "output is 0 and the log-sum-exp -inf (exp(-inf - -inf) "
                            "is nan)")
                scores = np.where(mask, q @ np.swapaxes(k, -1, -2), -np.inf)
                if i and matches(got, np.max(scores, axis=-1) / math.sqrt(q.shape[-1]),
                                 trial.dtype):
                    return ("that is each row's largest score; the log-sum-exp is "
                            "m + log(sum(exp(s - m)))")
                if i and matches(got, logsumexp(scores, axis=-1), trial.dtype):
                    return ("that is the log-sum-exp of the raw q·k; take it of the "
                            "scaled scores q·k / √d, the ones the softmax saw")
            return f"{name}: {problem}"
        return None

    problem = first_failure(your_function, trials, chunk_attention,
                            what="partial_attention", compare=compare)
    if problem is not None:
        return verdict(False, problem)
    return verdict(True, f"on {len(trials)} random parts (no, one and two leading axes; "
                         "rows with no allowed key; scores near ±1000 and rows at "
                         "their own levels; float32) your "
                         "output and log-sum-exp equal the package's chunk_attention.")


# Exercise 6 ---------------------------------------------------------------------------

def check_chunked_attention(your_function):
    """Exercise 6: your_function(q, k, v, chunk) = causal attention computed `chunk`
    queries at a time; the peak memory is measured (a chunk's scores, not all of them)."""
    rng = fresh_rng()
    # (n_q, n_k, d, chunk, scale): chunks of 1 and longer than the queries, and scores
    # spread over thousands (q scaled), where a shift by anything but the row's
    # maximum overflows
    trials = [(7, 7, 4, 3, 1.0), (10, 10, 8, 4, 1.0), (6, 9, 4, 5, 1.0), (5, 8, 4, 1, 1.0),
              (4, 6, 4, 10, 1.0), (6, 6, 4, 4, 800.0), (7, 7, 4, 3, 1.0)]  # the first again
    for n_q, n_k, d, chunk, scale in trials:
        while True:  # when spread: a row whose maximum is 800 above key 0, built in
            q, k, v = (rng.normal(size=(n_q, d)) * scale, rng.normal(size=(n_k, d)),
                       rng.normal(size=(n_k, 3)))
            s = np.where(causal_mask(n_q, n_k), q @ k.T / math.sqrt(d), np.nan)
            if scale == 1 or np.any(np.nanmax(s, 1) - s[:, 0] > 800):
                break
        got, problem = call(your_function, q, k, v, chunk)
        label = f"on {n_q} queries and {n_k} keys in chunks of {chunk}" + (
            ", scores spread over thousands" if scale > 1 else "")
        if problem is None:
            got, problem = as_array(got, "chunked_attention")
        problem = problem or difference(got, attention(q, k, v, causal=True))
        if problem:
            return verdict(False, f"{label}: {problem}")
    n, d, chunk = 1024, 16, 64
    q, k, v = (rng.normal(size=(n, d)) for _ in range(3))
    got, problem, peak = peak_memory(your_function, q, k, v, chunk)
    label = f"on {n:,} queries and keys in chunks of {chunk}"
    if problem is None:
        got, problem = as_array(got, "chunked_attention")
    problem = problem or difference(got, attention(q, k, v, causal=True))
    if problem:
        return verdict(False, f"{label}: {problem}")
    limit = 6 * chunk * n * 8 + 2 * n * d * 8 + 64 * 1024
    if peak > limit:
        return verdict(False, f"{label}: your function held {peak / 2**20:.1f} MiB at once; all the "
                              f"scores take {kib(n * n * 8)}, one chunk's {kib(chunk * n * 8)}. "
                              "Compute the scores of one chunk of queries at a time")
    return verdict(True, f"on {len(trials)} random shapes (n_q ≠ n_k, chunks of 1 and longer "
                         "than the queries, scores spread over thousands included) your "
                         "output equals causal "
                         f"attention, and at {n:,} tokens it held at most {kib(limit)}, not "
                         f"the {kib(n * n * 8)} of every score at once.")


# Exercise 7 ---------------------------------------------------------------------------

def measured_flops(config, n, rng):
    """The FLOPs of forward on one sequence of n tokens, measured: every matrix product
    with the weights counted as it runs (``Counted``), plus q kᵀ and weights @ v from
    the shapes of the attention weights each layer recorded (the package's attention
    computes on plain arrays, which the count does not see)."""
    params = {name: w.view(Counted) for name, w in init_params(config, rng).items()}
    trace = {}
    Counted.flops = 0
    forward(params, config, rng.integers(0, config.vocab_size, size=n), trace=trace)
    attention_flops = sum(2 * w.size * config.d_head * 2  # q kᵀ, then weights @ v
                          for name, w in trace.items() if name.endswith(".weights"))
    return Counted.flops + attention_flops


def _flops_config(rng):
    n_kv = int(rng.integers(1, 4))
    n_heads = n_kv * int(rng.integers(1, 4))
    return ModelConfig(arch="llama", vocab_size=int(rng.integers(11, 60)) | 1,
                       d_model=n_heads * 2 * int(rng.integers(1, 4)), n_heads=n_heads,
                       n_kv_heads=n_kv, n_layers=int(rng.integers(1, 4)),
                       d_ff=int(rng.integers(5, 40)), max_positions=64,
                       tie_embeddings=bool(rng.integers(0, 2)))


def _config_text(c):
    return (f"d_model={c.d_model}, {c.n_layers} layer{'s' * (c.n_layers > 1)}, "
            f"{c.n_heads} heads, {c.n_kv_heads} KV heads, d_ff={c.d_ff}, "
            f"vocab_size={c.vocab_size}, tied={c.tie_embeddings}")


def check_forward_flops(your_function):
    """Exercise 7: your_function(config, n) = the FLOPs of a Llama forward pass over one
    sequence of n tokens: matrix products only, 2 per multiply-add, each query over all
    n keys. Judged against counts measured while forward runs, on random configs."""
    rng = fresh_rng()
    cases = [(ModelConfig(arch="llama", vocab_size=37, d_model=24, n_layers=2,
                          n_heads=6, n_kv_heads=2, d_ff=40, max_positions=64,
                          tie_embeddings=False), 7)]
    cases += [(_flops_config(rng), int(rng.integers(1, 14))) for _ in range(5)]
    cases.append((ModelConfig(**{**_flops_config(rng).__dict__,
                                 "tie_embeddings": True}), 1))
    for config, n in cases:
        want = measured_flops(config, n, rng)
        got, problem = call(your_function, config, n)
        where = f"for {_config_text(config)} and n = {n}"
        if problem is not None:
            return verdict(False, f"{where}: {problem}")
        if isinstance(got, (bool, np.bool_)) or not isinstance(
                got, (int, float, np.integer, np.floating)) or not math.isfinite(got):
            return verdict(False, f"return a number of FLOPs, got {type(got).__name__}")
        if got == want:
            continue
        c, d = config, config.d_head
        layers, attn = c.n_layers, 4 * n * n * c.n_heads * d
        head = 2 * n * c.d_model * c.vocab_size
        kv_as_q = 2 * n * layers * 2 * c.d_model * (c.n_heads - c.n_kv_heads) * d
        hints = {want - layers * attn / 2: "half the n² work: every query here is scored "
                                           "against all n keys, with no causal skip",
                 want + kv_as_q: "W_k and W_v have n_kv_heads heads, d_model x "
                                 "(n_kv_heads d_head) each, not n_heads (GQA)",
                 want - layers * attn: "the n² part is missing: q kᵀ and weights @ v "
                                       "take 2 n² d_head FLOPs each, per head and layer",
                 want - head: "the LM head is missing: 2 n d_model vocab_size (a tied "
                              "head still multiplies by the embedding)",
                 want / 2: "half of it: a multiply-add is 2 FLOPs",
                 want / n: "that is per token; the pass has n tokens (and the n² part "
                           "grows with n²)"}
        hint = next((why for value, why in hints.items()
                     if math.isclose(got, value, rel_tol=1e-12)), "")
        return verdict(False, f"{where}: forward takes {want:,} FLOPs in matrix "
                              f"products (measured), you said {got:,.0f}"
                       + (f" ({hint})" if hint else ""))
    return verdict(True, f"on {len(cases)} configurations ({len(cases) - 1} random, tied "
                         "and untied, GQA, n from 1 to 13) your count equals the matrix-"
                         "product FLOPs measured while forward ran.")


guard_checks(globals())  # no check raises, whatever the answer (verdict.py)
