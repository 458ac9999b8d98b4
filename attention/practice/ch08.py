"""Self-checks for the practice exercises of chapter 8 (long contexts).

Each check draws its inputs afresh at every call (head sizes, bases, factors and
windows chosen at random, batch and head axes, float32 and float64), calls the reader's
function through ``attention.practice.verdict.call`` and compares with the package
(``attention.long_context.rope_scaling``, ``attention.kv_cache``; both checked against
Hugging Face in the tests). It prints one verdict and returns True or False; it never
raises, whatever the answer.
"""

import math

import numpy as np

from attention.kv_cache import KVCache, window_mask
from attention.long_context import alibi
from attention.long_context.alibi import alibi_bias, alibi_slopes
from attention.long_context.rope_scaling import (default_inv_freq, linear_inv_freq,
                                                 yarn_inv_freq)
from attention.practice.trials import (Trial, as_array, difference, first_failure,
                                       fresh_rng, matches, redrawable)
from attention.practice.verdict import call, guard_checks, verdict
from attention.softmax import softmax


# Exercise 1 ---------------------------------------------------------------------------

def _yarn_trial(d_head, base, factor, original, beta_fast=32.0, beta_slow=1.0,
                truncate=True, defaults=False):
    label = (f"d_head {d_head}, base {base:g}, factor {factor:g}, {original} "
             f"original positions")
    if defaults:
        return Trial(label + ", beta_fast, beta_slow and truncate left to their defaults",
                     (d_head, base, factor, original))
    if (beta_fast, beta_slow) != (32.0, 1.0):
        label += f", betas {beta_fast:g} and {beta_slow:g}"
    label += "" if truncate else ", truncate=False"
    return Trial(label, (d_head, base, factor, original),
                 {"beta_fast": beta_fast, "beta_slow": beta_slow, "truncate": truncate})


def check_yarn_inv_freq(your_function):
    """Exercise 1: your_function(d_head, base, factor, original_max_positions, *,
    beta_fast, beta_slow, truncate) = YaRN's inverse frequencies (d_head / 2,)."""
    rng = fresh_rng()
    trials = [_yarn_trial(64, 10000.0, 8.0, 2048),
              # the defaults (beta_fast 32, beta_slow 1, truncate True) left to the reader
              _yarn_trial(32, 10000.0, 4.0, 1024, defaults=True),
              # the ramp's top clamped at the last index (base 10: a ramp wider than d/2)
              _yarn_trial(16, 10.0, 4.0, 1000),
              # a ramp of no width (a tiny original context): a step after pair 0
              _yarn_trial(16, 10000.0, 4.0, 4),
              _yarn_trial(128, 500000.0, 32.0, 8192),
              _yarn_trial(int(rng.choice([16, 48, 96])), float(rng.choice([1e4, 1.5e5])),
                          float(rng.choice([4.0, 16.0])), int(rng.choice([512, 4096])),
                          beta_fast=16.0, beta_slow=2.0),
              _yarn_trial(64, 150000.0, 32.0, 4096, truncate=False),  # gpt-oss's
              _yarn_trial(int(rng.choice([6, 10, 14])), 10000.0, 2.5,
                          int(rng.integers(16, 200))),
              _yarn_trial(32, 10000.0, 1.0, 1024)]

    def inverted(d_head, base, factor, original, **kw):  # the fast pairs interpolated
        plain = default_inv_freq(d_head, base)
        if factor == 1:
            return plain
        yarn = yarn_inv_freq(d_head, base, factor, original, **kw)
        ramp = (1 - yarn / plain) / (1 - 1 / factor)  # 0: kept, 1: interpolated
        return plain * ramp + plain / factor * (1 - ramp)

    problem = first_failure(
        your_function, trials, yarn_inv_freq, what="yarn_inv_freq",
        hints=[(lambda d, b, f, o, **kw: linear_inv_freq(d, b, f),
                "every pair is divided by the factor: that is linear interpolation; YaRN "
                "keeps the pairs that turn more than beta_fast times over the original "
                "context"),
               (lambda d, b, f, o, **kw: default_inv_freq(d, b),
                "nothing is scaled: these are plain RoPE's frequencies"),
               (inverted, "the ramp runs the wrong way: the fast pairs (small index, "
                "many turns) keep their frequency, the slow ones are divided by the "
                "factor"),
               (lambda d, b, f, o, **kw: yarn_inv_freq(d, b, f, o, **{
                   **kw, "truncate": not kw["truncate"]}),
                "truncate decides the ramp's edges: True rounds the low edge down and "
                "the high edge up (math.floor, math.ceil); False keeps them "
                "fractional"),
               (lambda d, b, f, o, **kw: yarn_inv_freq(d, b, f, o, **{
                   **kw, "beta_fast": kw["beta_slow"], "beta_slow": kw["beta_fast"]}),
                "beta_fast and beta_slow are swapped: beta_fast (more turns) gives the "
                "low edge of the ramp, the fast pairs")])
    if problem is not None:
        return verdict(False, problem)
    return verdict(True, f"on {len(trials)} configurations (d_head 6 to 128, bases "
                         "10 to 500,000, 4 to 8,192 original positions, factors 1 to "
                         "32, betas 32 and 1 or 16 and 2, truncate True and False, the "
                         "defaults) your frequencies equal the "
                         "package's YaRN (and so Hugging Face's): fast pairs kept, slow "
                         "pairs divided by the factor, a ramp between.")


# Exercise 2 ---------------------------------------------------------------------------

def check_window_mask_after_cache(your_function):
    """Exercise 2: your_function(n_q, n_k, window, n_sinks=0) = the causal
    sliding-window mask, with sinks, of the last n_q of n_k tokens: query i at
    position n_k - n_q + i sees keys j <= position with position - j < window or
    j < n_sinks."""
    rng = fresh_rng()
    sizes = [(3, 8, 4, 0), (1, 9, 3, 2), (5, 5, 2, None), (2, 6, 1, 1), (4, 7, 10, 0),
             (3, 4, 2, 3),  # sinks past the first queries' positions
             (2, 12, 3, 4)] + [
        (int(a), int(a + b), int(w), int(s)) for a, b, w, s in zip(
            rng.integers(1, 7, 3), rng.integers(0, 9, 3), rng.integers(1, 8, 3),
            rng.integers(0, 4, 3))]
    trials = [Trial(f"n_q = {n_q}, n_k = {n_k}, window = {w}, "
                    + ("n_sinks left to its default 0" if s is None else
                       f"n_sinks = {s}"),
                    (n_q, n_k, w) if s is None else (n_q, n_k, w, s))
              for n_q, n_k, w, s in sizes]

    def reference(n_q, n_k, window, n_sinks=0):
        return window_mask(np.arange(n_k - n_q, n_k), np.arange(n_k), window=window,
                           n_sinks=n_sinks)

    def compare(result, expected, trial):
        got, problem = as_array(result, "window_mask_after_cache")
        if problem is None and got.dtype != np.bool_:
            problem = f"the mask has dtype {got.dtype}; it must be boolean (True = may attend)"
        if problem is None and got.shape != expected.shape:
            problem = f"the mask should have shape {expected.shape}, got {got.shape}"
        if problem is not None or np.array_equal(got, expected):
            return problem
        for wrong, message in hints:
            if np.array_equal(got, wrong(*trial.args)):
                return message
        n_q, n_k = trial.args[:2]
        i, j = (int(a) for a in np.argwhere(got != expected)[0])
        return (f"query {i} sits at position {n_k - n_q + i} and "
                f"{'may' if expected[i, j] else 'may not'} see key {j}; your mask says "
                "the opposite")

    def top_left(n_q, n_k, w, s=0):
        return window_mask(np.arange(n_q), np.arange(n_k), window=w, n_sinks=s)

    def after(n_q, n_k):
        return np.arange(n_k - n_q, n_k)[:, None], np.arange(n_k)[None, :]

    hints = [(top_left, "your window starts at query position 0: the queries are the "
                        "last n_q tokens, at positions n_k - n_q + i, after the cache"),
             (lambda n_q, n_k, w, s=0: reference(n_q, n_k, w + 1, s),
              "each query sees window + 1 keys: the window counts the query itself, "
              "keys j with position - j < window"),
             (lambda n_q, n_k, w, s=0: (np.abs(after(n_q, n_k)[0] - after(n_q, n_k)[1])
                                        < w) | reference(n_q, n_k, w, s),
              "the band reaches forward too: a query may not see keys after its own "
              "position"),
             (lambda n_q, n_k, w, s=0: reference(n_q, n_k, w),
              "the sinks are missing: every query also sees the first n_sinks "
              "positions, however far back"),
             (lambda n_q, n_k, w, s=0: reference(n_q, n_k, w) | (after(n_q, n_k)[1] < s)
              & np.ones((n_q, 1), dtype=bool),
              "a query sees a sink after its own position: a sink is a key like the "
              "others, never a key after its own position")]
    for trial in trials:
        result, problem = call(your_function, *trial.args)
        if problem is None:
            problem = compare(result, reference(*trial.args), trial)
        if problem is not None:
            return verdict(False, f"for {trial.label}: {problem}")
    return verdict(True, f"on {len(trials)} sizes (7 chosen, 3 random; decode steps, "
                         "windows of 1 and wider than the cache, 0 to 4 sinks, sinks "
                         "past a query) your mask equals the package's window_mask at "
                         "the queries' positions.")


# Exercise 3 ---------------------------------------------------------------------------

def _kept(cache):
    return cache.keys[0], cache.values[0], cache.positions


def check_roll_cache(your_function):
    """Exercise 3: your_function(k_cache, v_cache, positions, k_new, v_new, window,
    n_sinks) -> (k_cache, v_cache, positions) after appending the new tokens and
    dropping what no later query can see: the first n_sinks positions stay, and the
    last window - 1."""
    rng = fresh_rng()
    runs = [((1, 2), 4, 3, 1, [1] * 9, np.float64),
            ((2, 3), 5, 4, 2, [3, 1, 1, 4, 1, 1], np.float64),
            ((1, 1), 3, 2, 0, [2, 2, 1, 1, 3], np.float64),
            ((2, 2), 6, 6, 4, [5, 3, 1, 2, 1], np.float32),
            ((1, 3), 4, 1, 3, [1, 2, 1, 1, 1, 2], np.float64),
            ((3,), 4, 3, 1, [2, 1, 3, 1], np.float64),  # one head axis
            ((), 5, 2, 2, [1, 3, 2, 1], np.float64)]  # no leading axes
    for lead, d, window, n_sinks, chunks, dtype in runs:
        problem = _roll_run(your_function, rng, lead, d, window, n_sinks, chunks, dtype)
        if problem is not None:
            return verdict(False, problem)
    return verdict(True, f"on {len(runs)} random runs (windows of 1 to 6, 0 to 4 sinks, "
                         "chunks of 1 to 5 tokens, no, one or two leading axes, float32 and "
                         "float64) your cache holds exactly what the package's KVCache "
                         "keeps, in position order.")


def _roll_run(your_function, rng, lead, d, window, n_sinks, chunks, dtype):
    """Feed one sequence in chunks to the reader's function and to KVCache; None, or
    what differed first."""
    cache = KVCache(1, window=window, n_sinks=n_sinks)
    k_kept = np.zeros(lead + (0, d), dtype)
    v_kept, kept_pos = k_kept.copy(), np.zeros(0, np.int64)
    where = (f"with window {window}, {n_sinks} sink{'s' * (n_sinks != 1)} and chunks "
             f"of {chunks}")
    for step, n_new in enumerate(chunks):
        k_new = rng.normal(size=lead + (n_new, d)).astype(dtype)
        v_new = rng.normal(size=lead + (n_new, d)).astype(dtype)
        # KVCache holds (batch, heads, n, d): any leading axes as one head axis
        cache.update(0, *(a.reshape((1, -1) + a.shape[-2:]) for a in (k_new, v_new)))
        cache.advance(n_new)
        want_k, want_v, want_pos = _kept(cache)
        want_k, want_v = (a.reshape(lead + a.shape[-2:]) for a in (want_k, want_v))
        result, problem = call(your_function, k_kept, v_kept, kept_pos, k_new, v_new,
                               window, n_sinks)
        if problem is not None:
            return f"{where}: {problem}"
        try:
            k_kept, v_kept, kept_pos = result
        except (TypeError, ValueError):
            return f"return three things (k_cache, v_cache, positions), got {type(result).__name__}"
        got_pos, problem = as_array(kept_pos, "the returned positions")
        if problem is not None:
            return f"{where}: {problem}"
        up_to = int(want_pos[-1])
        if got_pos.shape != want_pos.shape or not np.array_equal(got_pos, want_pos):
            shown = got_pos.tolist() if got_pos.ndim == 1 else got_pos.shape
            hint = ""
            if got_pos.ndim == 1 and np.array_equal(np.sort(got_pos), want_pos):
                hint = " (the right positions, in the wrong order: keep position order)"
            elif got_pos.ndim == 1 and len(got_pos) == len(want_pos) + 1:
                hint = (f" (one too many: the next query, at {up_to + 1}, sees itself "
                        f"and the {window - 1} positions before it)")
            elif n_sinks and got_pos.ndim == 1 and not np.isin(
                    np.arange(min(n_sinks, up_to + 1)), got_pos).all():
                hint = " (the sinks, the first n_sinks positions, are never dropped)"
            return (f"{where}, after position {up_to} the cache should keep positions "
                    f"{want_pos.tolist()}, you kept {shown}{hint}")
        for name, got, want in (("k_cache", k_kept, want_k), ("v_cache", v_kept, want_v)):
            got, problem = as_array(got, f"the returned {name}")
            if problem is None:
                problem = difference(got, want, np.dtype(dtype))
            if problem is not None:
                return (f"{where}, after position {up_to}, {name} (kept positions "
                        f"{want_pos.tolist()}): {problem}")
        k_kept, v_kept, kept_pos = (np.asarray(a) for a in (k_kept, v_kept, kept_pos))
    return None

# Exercise 4 ---------------------------------------------------------------------------

def alibi_decode_reference(q, k_cache, v_cache, positions, query_position,
                           slopes=None):
    """One ALiBi decode step over cached keys at ``positions`` (the package's
    ``alibi_bias`` and ``softmax``, in float64, cast back to q's dtype); ``slopes``
    replaces the head slopes (to name a mistake)."""
    h, d = q.shape
    pos = np.asarray(positions, dtype=np.int64)
    distance = (np.int64(query_position) - pos).astype(np.float64)  # exact, int64
    m = alibi_slopes(h) if slopes is None else slopes
    scores = (np.einsum("hd,hnd->hn", q.astype(np.float64), k_cache) / np.sqrt(d)
              - m[:, None] * distance)
    out = np.einsum("hn,hnd->hd", softmax(scores, axis=-1), v_cache)
    return out.astype(q.dtype)


@redrawable
def _alibi_trial(rng, h, n, d, layout, dtype=np.float64, *, loud=False):
    """A query at some position, the cache's keys at ``layout``'s positions:
    "packed" (0..n-1), "sinks" (2 sinks then a window far later; n >= 3), "far" (past
    2**32);
    ``loud``: scores spread over ±1000, heads at levels -1500 and +1500."""
    start = {"packed": 0, "sinks": int(rng.integers(100, 5000)),
             "far": int(rng.integers(2**32, 2**33))}[layout]
    positions = np.arange(start, start + n, dtype=np.int64)
    if layout == "sinks":
        positions[:2] = [0, 1]
    query_position = int(positions[-1]) + int(rng.integers(0, 3))
    q = rng.normal(size=(h, d)) * (1000.0 if loud else 1.0)
    k, v = rng.normal(size=(h, n, d)), rng.normal(size=(h, n, d))
    if loud:  # a constant key feature: each head's scores at its own level
        k[..., 0] = 1.0
        q[:, 0] = np.where(np.arange(h) % 2, 1500.0, -1500.0) * math.sqrt(d)
    label = (f"{h} head{'s' * (h != 1)}, {n} cached keys at positions "
             f"{positions[0]}..{positions[-1]}{' (2 sinks first)' if layout == 'sinks' else ''}"
             f", the query at {query_position}, {np.dtype(dtype).name}"
             f"{', scores spread over ±1000, heads at ±1500' if loud else ''}")
    return Trial(label, (q.astype(dtype), k.astype(dtype), v.astype(dtype), positions,
                         query_position), {}, np.dtype(dtype))


def check_alibi_decode(your_function):
    """Exercise 4: your_function(q, k_cache, v_cache, positions, query_position) = one
    ALiBi decode step (h, d_v), any head count, the package's ALiBi forbidden."""
    rng = fresh_rng()
    trials = [_alibi_trial(rng, 8, 6, 4, "packed"), _alibi_trial(rng, 6, 7, 3, "sinks"),
              _alibi_trial(rng, 12, 9, 4, "sinks"), _alibi_trial(rng, 1, 5, 2, "packed"),
              _alibi_trial(rng, 5, 6, 4, "far", np.float32),
              _alibi_trial(rng, 4, 8, 4, "sinks", loud=True),
              _alibi_trial(rng, 3, 6, 8, "sinks", np.float32),
              _alibi_trial(rng, int(rng.integers(1, 21)), int(rng.integers(3, 12)),
                           int(rng.integers(1, 9)), "sinks")]

    def plain_geometric(q, k, v, positions, query_position):
        h = q.shape[0]
        return alibi_decode_reference(q, k, v, positions, query_position,
                                      2.0 ** (-8.0 * np.arange(1, h + 1) / h))

    hints = [(lambda q, k, v, positions, query_position: alibi_decode_reference(
                  q, k, v, np.arange(len(positions)), len(positions) - 1),
              "the distance is query_position minus each key's position in the text, "
              "not its index in the cache"),
             (plain_geometric, "those slopes, 2^(-8h/n), hold for a power-of-two head "
                               "count only; for other counts take the slopes of the "
                               "power of two below, then every other slope of twice it"),
             (lambda q, k, v, positions, query_position: alibi_decode_reference(
                  q, k, v, 2 * query_position - np.asarray(positions), query_position),
              "distant keys are favoured: ALiBi subtracts m_h times the distance"),
             (lambda q, k, v, positions, query_position: alibi_decode_reference(
                  q * math.sqrt(q.shape[-1]), k, v, positions, query_position),
              "the scores q·k are divided by √d before the bias is added")]

    def compare(result, expected, trial):
        got, problem = as_array(result, "alibi_decode")
        if problem is not None:
            return problem
        problem = difference(got, expected, trial.dtype)
        if problem is None:
            return None
        if got.shape == expected.shape and not np.all(np.isfinite(got)):
            return ("some outputs are nan or inf: an exponential overflowed; subtract "
                    "each head's largest score before exp")
        for wrong, message in hints:
            if matches(got, wrong(*trial.args), trial.dtype):
                return message
        return problem

    problem = first_failure(your_function, trials, alibi_decode_reference,
                            what="alibi_decode", compare=compare,
                            forbidden=(alibi, alibi_bias, alibi_slopes))
    if problem is not None:
        return verdict(False, problem)
    return verdict(True, f"on {len(trials)} random caches (1 to 20 heads, powers of "
                         "two and not; positions packed, after sinks and past 2^32; "
                         "float32; scores spread over ±1000, heads at ±1500) your outputs "
                         "equal the package's ALiBi attention.")


# Exercise 5 ---------------------------------------------------------------------------

def blocks_reference(q_start, q_end, block_size, window, n_sinks):
    """The key blocks a chunk of queries q_start..q_end-1 reads with a window and
    sinks, sorted: the window's span of every query together, and the sinks'
    blocks (brute force over the visibility mask in tests/practice/test_ch08.py)."""
    low = max(q_start - window + 1, 0)
    seen = set(range(low // block_size, (q_end - 1) // block_size + 1))
    if n_sinks:
        seen |= set(range(0, (min(n_sinks, q_end) - 1) // block_size + 1))
    return np.array(sorted(seen), dtype=np.int64)


def check_blocks_to_read(your_function):
    """Exercise 5: your_function(q_start, q_end, block_size, window, n_sinks) = the
    sorted indices of the key blocks that a chunk of queries must read."""
    rng = fresh_rng()
    far = int(rng.integers(2**32, 2**33))
    cases = [(40, 48, 16, 20, 0),   # the chunk and the window's first keys
             (40, 41, 16, 4, 2),    # a decode step: the sinks' block and its own
             (5, 9, 4, 100, 0),     # a window longer than the text so far
             (30, 64, 8, 1, 0),     # a window of one: each query sees itself
             (33, 35, 8, 2, 9),     # sinks over two blocks
             (2, 6, 8, 3, 4),       # sinks inside the window's block
             (32, 40, 8, 9, 1),     # the window starts at the block's first key
             (40, 42, 8, 10, 0),    # the window's first key ends its block
             (7, 9, 4, 2, 6),       # a sinks' block the window reads too
             (0, 3, 2, 2, 8),       # more sinks than queries so far
             (3, 5, 1, 10, 0),      # blocks of one key
             (far, far + 5, 16, 50, 4)]  # positions past 2**32
    for _ in range(3):
        q_start = int(rng.integers(0, 200))
        cases.append((q_start, q_start + int(rng.integers(1, 40)),
                      int(rng.integers(1, 17)), int(rng.integers(1, 70)),
                      int(rng.integers(0, 6))))
    for case in cases:
        want = blocks_reference(*case)
        got, problem = call(your_function, *case)
        label = ("queries {} to {}, blocks of {}, window {}, {} sinks"
                 .format(case[0], case[1] - 1, *case[2:]))
        if problem is None:
            got, problem = as_array(got, "blocks_to_read")
        if problem is None and got.dtype.kind not in "iu":
            problem = f"the blocks are {got.dtype}; return integer indices"
        if problem is None and (got.shape != want.shape or not np.array_equal(got, want)):
            missing = sorted(set(want.tolist()) - set(np.ravel(got).tolist()))
            extra = sorted(set(np.ravel(got).tolist()) - set(want.tolist()))
            problem = (f"the blocks to read are {want.tolist()}, you gave "
                       f"{np.ravel(got).tolist()}" + (
                           f"; missing {missing}" if missing else "") + (
                           f"; never read: {extra}" if extra else "") + (
                           " (in order, each once)" if not missing and not extra else ""))
        if problem is not None:
            return verdict(False, f"for {label}: {problem}")
    return verdict(True, f"on {len(cases)} chunks (12 chosen: decode steps, windows of "
                         "1 and longer than the text, sinks across blocks and past the "
                         "queries, blocks of one key, positions "
                         "past 2^32; 3 random) your blocks are exactly those the "
                         "window and the sinks read.")


guard_checks(globals())  # no check raises, whatever the answer (verdict.py)
