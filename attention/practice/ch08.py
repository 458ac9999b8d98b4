"""Self-checks for the practice exercises of chapter 8 (long contexts).

Each check draws its inputs afresh at every call (head sizes, bases, factors and
windows chosen at random, batch and head axes, float32 and float64), calls the reader's
function through ``attention.practice.verdict.call`` and compares with the package
(``attention.long_context.rope_scaling``, ``attention.kv_cache``; both checked against
Hugging Face in the tests). It prints one verdict and returns True or False; it never
raises, whatever the answer.
"""

import numpy as np

from attention.kv_cache import KVCache, window_mask
from attention.long_context.rope_scaling import (default_inv_freq, linear_inv_freq,
                                                 yarn_inv_freq)
from attention.practice.trials import Trial, as_array, difference, first_failure, fresh_rng
from attention.practice.verdict import call, guard_checks, verdict


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
    """Exercise 2: your_function(n_q, n_k, window) = the causal sliding-window mask of
    the last n_q of n_k tokens: query i at position n_k - n_q + i sees keys j with
    0 <= position - j < window."""
    rng = fresh_rng()
    sizes = [(3, 8, 4), (1, 9, 3), (5, 5, 2), (2, 6, 1), (4, 7, 10)] + [
        (int(a), int(a + b), int(w)) for a, b, w in zip(
            rng.integers(1, 7, 3), rng.integers(0, 9, 3), rng.integers(1, 8, 3))]
    trials = [Trial(f"n_q = {n_q}, n_k = {n_k}, window = {w}", (n_q, n_k, w))
              for n_q, n_k, w in sizes]

    def reference(n_q, n_k, window):
        return window_mask(np.arange(n_k - n_q, n_k), np.arange(n_k), window=window)

    def compare(result, expected, trial):
        got, problem = as_array(result, "window_mask_after_cache")
        if problem is None and got.dtype != np.bool_:
            problem = f"the mask has dtype {got.dtype}; it must be boolean (True = may attend)"
        if problem is None and got.shape != expected.shape:
            problem = f"the mask should have shape {expected.shape}, got {got.shape}"
        if problem is not None or np.array_equal(got, expected):
            return problem
        n_q, n_k, w = trial.args
        for wrong, message in hints:
            if np.array_equal(got, wrong(n_q, n_k, w)):
                return message
        i, j = (int(a) for a in np.argwhere(got != expected)[0])
        return (f"query {i} sits at position {n_k - n_q + i} and "
                f"{'may' if expected[i, j] else 'may not'} see key {j}; your mask says "
                "the opposite")

    top_left = lambda n_q, n_k, w: window_mask(np.arange(n_q), np.arange(n_k), window=w)  # noqa: E731
    hints = [(top_left, "your window starts at query position 0: the queries are the "
                        "last n_q tokens, at positions n_k - n_q + i, after the cache"),
             (lambda n_q, n_k, w: reference(n_q, n_k, w + 1),
              "each query sees window + 1 keys: the window counts the query itself, "
              "keys j with position - j < window"),
             (lambda n_q, n_k, w: np.abs(np.arange(n_k - n_q, n_k)[:, None]
                                         - np.arange(n_k)) < w,
              "the band reaches forward too: a query may not see keys after its own "
              "position")]
    for trial in trials:
        result, problem = call(your_function, *trial.args)
        if problem is None:
            problem = compare(result, reference(*trial.args), trial)
        if problem is not None:
            return verdict(False, f"for {trial.label}: {problem}")
    return verdict(True, f"on {len(trials)} sizes (5 chosen, 3 random; decode steps, "
                         "windows of 1 and wider than the cache) your mask equals the "
                         "package's window_mask at the queries' positions.")


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


guard_checks(globals())  # no check raises, whatever the answer (verdict.py)
