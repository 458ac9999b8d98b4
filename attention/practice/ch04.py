"""Self-checks for the practice exercises of chapter 4 (how LLMs generate text).

Each check calls the reader's function on data of its own, prints a one-line verdict
("✓ Correct: ..." or "✗ Not yet: ..." saying concretely what is wrong) and returns True
or False. A check never raises because an answer is wrong, so a page can run an unsolved
starter and show the check's message.
"""

import numpy as np

from attention.beam_search import beam_search
from attention.kv_cache import kv_cache_bytes, sliding_window_mask, window_mask
from attention.practice.trials import (Trial, as_array, difference, fresh_rng, judge,
                                       matches, redrawable, shape_text, with_redraw)
from attention.practice.verdict import call, guard_checks, verdict
from attention.sampling import (
    apply_temperature, filter_min_p, filter_top_k, filter_top_p, probabilities,
    sample_next)
from attention.scaled_dot_product import attention
from attention.softmax import log_softmax, softmax


def _array(got, shape, what):
    """got as a float array of `shape`, or a failure line (a list is not an array)."""
    if isinstance(got, (list, tuple)):
        return None, f"{what} should be a NumPy array of shape {shape}, got a {type(got).__name__}"
    try:
        a = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return None, f"{what} should be an array of shape {shape}, got {type(got).__name__}"
    if a.shape != shape:
        return None, f"{what} should have shape {shape}, got {a.shape}"
    return a, None


# Exercise 1 ---------------------------------------------------------------------------

def check_top_p_filter(your_function):
    """Exercise 1: your_function(logits, p) keeps the nucleus, -inf elsewhere."""
    rng = fresh_rng()
    while True:  # first a row whose nucleus at p = 0.5 is exactly its 3 most likely tokens
        first = rng.normal(size=10) * 1.5
        top = np.sort(probabilities(first))[::-1]
        if top[:2].sum() < 0.45 and top[:3].sum() > 0.55:
            break
    cases = [(first, 0.5)] + [(rng.normal(size=10) * 2, p) for p in (0.5, 0.8, 0.95)]
    cases += [(rng.normal(size=int(rng.integers(5, 40))) * 3, float(rng.uniform(0.1, 0.99)))
              for _ in range(3)]
    # Four equal logits: probabilities exactly 1/4, and 2 of them reach p = 0.5 exactly.
    # p = 0 must still keep the most likely token.
    cases += [(np.zeros(4), 0.5), (rng.normal(size=6), 0.0)]
    for logits, p in cases:
        got, problem = call(your_function, logits.copy(), p)
        if problem:
            return verdict(False, problem)
        got, problem = _array(got, logits.shape, "the filtered logits")
        if problem:
            return verdict(False, problem)
        probs = probabilities(logits)
        kept, n_want = np.isfinite(got), int(np.isfinite(filter_top_p(logits, p)).sum())
        most_likely = kept.all() or not kept.any() or probs[kept].min() >= probs[~kept].max()
        if kept.sum() != n_want or not most_likely:
            rank = np.argsort(np.argsort(-logits, kind="stable"), kind="stable") + 1
            return verdict(False, f"with p = {p} you keep {kept.sum()} tokens (ranks "
                                  f"{sorted(rank[kept].tolist())}, mass "
                                  f"{probs[kept].sum():.3f}); the nucleus is the {n_want} "
                                  f"most likely, the fewest whose mass reaches p "
                                  f"(at least one)")
        removed = ~kept
        if not np.all(np.isneginf(got[removed])):
            bad = got[removed][~np.isneginf(got[removed])][0]
            return verdict(False, f"with p = {p} a removed token holds {bad}; a removed "
                                  "token's logit must be -inf, so that softmax gives it "
                                  "probability exactly 0 (+inf or nan would win or poison "
                                  "the softmax)")
        if not np.array_equal(got[kept], logits[kept]):
            return verdict(False, "the kept tokens should keep their logits unchanged "
                                  "(renormalising is softmax's job)")
    return verdict(True, "the nucleus is the fewest most likely tokens whose "
                         "probabilities reach p, the token that crosses p included.")


# Exercise 2 ---------------------------------------------------------------------------

def check_decode_step(your_function):
    """Exercise 2: your_function(q, k, v, k_cache, v_cache) -> (out, k_cache, v_cache)."""
    rng = fresh_rng()
    for n_heads, n, d in ((2, 5, 4), (3, 8, 6), (2, 5, 4)):  # the last: sizes seen
        problem = _decode_once(your_function, rng, n_heads, n, d)
        if problem:
            return verdict(False, problem)
    return verdict(True, "one new query against the cached keys plus its own gives "
                         "the same output as recomputing the whole sequence.")


def _decode_once(your_function, rng, n_heads, n, d):
    q_all, k_all, v_all = (rng.normal(size=(n_heads, n + 1, d)) for _ in range(3))
    want = attention(q_all, k_all, v_all, causal=True)[:, -1:]  # (n_heads, 1, d)
    args = (q_all[:, -1:], k_all[:, -1:], v_all[:, -1:], k_all[:, :-1], v_all[:, :-1])
    got, problem = call(your_function, *(a.copy() for a in args))
    if problem:
        return problem
    try:
        out, k_cache, v_cache = got
    except (TypeError, ValueError):
        return f"return three things (out, k_cache, v_cache), got {type(got).__name__}"
    out, problem = _array(out, (n_heads, 1, d), "out")
    if problem:
        return problem
    if not np.allclose(out, want, atol=1e-12):
        seen = [j for j in range(1, n + 2)
                if np.allclose(out, attention(q_all[:, -1:], k_all[:, :j], v_all[:, :j]))]
        if seen:
            return (f"your new token attended to the first {seen[0]} of the {n + 1} "
                    f"keys; it should see all {n + 1}: the {n} cached ones and its own")
        return (f"out differs from the last row of causal attention over all {n + 1} "
                "tokens (is the scale 1/sqrt(d_head)?)")
    for name, cache, full in (("k_cache", k_cache, k_all), ("v_cache", v_cache, v_all)):
        cache, problem = _array(cache, (n_heads, n + 1, d), f"the returned {name}")
        if problem:
            return problem + " (the old cache plus the new token)"
        if not np.array_equal(cache, full):
            return (f"the returned {name} should be the old cache with the new token "
                    "appended at the end, in order")
    return None


# Exercise 3 ---------------------------------------------------------------------------

def check_kv_cache_size(your_function):
    """Exercise 3: your_function(config, n_tokens, bytes_per_value) -> bytes."""
    from types import SimpleNamespace

    configs = {  # name: (n_layers, n_heads, n_kv_heads, d_model)
        "Llama 3 8B": (32, 32, 8, 4096),
        "Llama 3 70B": (80, 64, 8, 8192),
        "GPT-2 small": (12, 12, 12, 768),
    }
    rng = fresh_rng()
    for i in range(2):  # and two the reader has not seen
        n_kv = int(rng.choice([1, 2, 4]))
        n_heads = n_kv * int(rng.choice([2, 4]))
        configs[f"a random configuration ({i + 1})"] = (
            int(rng.integers(2, 40)), n_heads, n_kv, n_heads * int(rng.choice([32, 64, 128])))
    for name, (n_layers, n_heads, n_kv_heads, d_model) in configs.items():
        config = SimpleNamespace(n_layers=n_layers, n_heads=n_heads,
                                 n_kv_heads=n_kv_heads, d_model=d_model)
        # (a million tokens: past what int32 holds; None: bytes_per_value left to its
        # default, 2)
        for n_tokens, bpv in ((8192, 2), (1, 4), (1_000_000, 1), (3, None)):
            want = kv_cache_bytes(n_layers, n_kv_heads, d_model // n_heads, n_tokens,
                                  bytes_per_value=bpv or 2)
            got, problem = call(your_function, config, n_tokens,
                                *(() if bpv is None else (bpv,)))
            bpv = bpv or "the default 2"
            if problem:
                return verdict(False, problem)
            if isinstance(got, (float, np.floating)) and got == int(got):
                return verdict(False, f"{name}: you returned {got!r}, a float; a number "
                                      "of bytes is a whole number: keep it an int (d_model "
                                      "// n_heads, not /)")
            if not isinstance(got, (int, np.integer)) or isinstance(got, bool):
                return verdict(False, f"return a whole number of bytes (an int), got "
                                      f"{type(got).__name__}")
            if got != want:
                ratio = got / want
                hint = {0.5: "half of it: the cache keeps keys AND values",
                        float(n_heads // n_kv_heads): "n_heads / n_kv_heads times too "
                                                      "much: each of the n_kv_heads heads "
                                                      "stores d_head = d_model / n_heads "
                                                      "values per token",
                        float(n_heads): "d_model per head? each head stores d_head values",
                        1.0 / n_layers: "every layer has its own cache"}.get(ratio, "")
                return verdict(False, f"{name}, {n_tokens} tokens, {bpv} bytes per value: "
                                      f"{want:,} bytes, you said {got:,.0f}"
                                      + (f" ({hint})" if hint else ""))
    return verdict(True, "2 x layers x kv heads x d_head x bytes per value, "
                         "per token: Llama 3 8B in bf16 keeps 128 KiB per token, "
                         "1 GiB at 8,192 tokens.")


# Exercise 4 ---------------------------------------------------------------------------

def check_window_cache_step(your_function):
    """Exercise 4: a rolling cache under a sliding window, fed in chunks."""
    rng = fresh_rng()
    for n, d, window, chunk in ((11, 4, 4, 3), (9, 4, 1, 2), (10, 3, 2, 4), (12, 4, 5, 5)):
        problem = _window_run(your_function, rng, n, d, window, chunk)
        if problem:
            return verdict(False, problem)
    window, chunk = 4, 3
    return verdict(True, f"for windows of 1, 2, 4 and 5 and chunks of 2 to 5 on random "
                         f"inputs: with chunks of {chunk} under a window of {window} each "
                         f"chunk sees window + chunk - 1 = {window + chunk - 1} keys, the "
                         f"cache keeps {window - 1}, and the output equals the banded full "
                         "attention.")


def _window_run(your_function, rng, n, d, window, chunk):
    """Feed one sequence in chunks; None, or what went wrong."""
    q, k, v = (rng.normal(size=(n, d)) for _ in range(3))
    want = attention(q, k, v, mask=sliding_window_mask(n, window))  # (n, d)
    k_kept, v_kept = k[:0], v[:0]
    where = f"with a window of {window} and chunks of {chunk}"
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        got, problem = call(your_function, k_kept, v_kept, k[start:stop], v[start:stop],
                            window)
        if problem:
            return f"{where}: {problem}"
        try:
            if any(isinstance(a, (list, tuple)) for a in got):
                raise TypeError("a list is not an array")
            keys, values, k_kept, v_kept = (np.asarray(a, dtype=np.float64) for a in got)
        except (TypeError, ValueError):
            return "return four NumPy arrays (keys, values, k_kept, v_kept)"
        if keys.ndim != 2 or keys.shape != values.shape or k_kept.ndim != 2 \
                or k_kept.shape != v_kept.shape:
            return (f"keys/values and k_kept/v_kept should be (m, {d}) arrays in pairs, "
                    f"got {keys.shape}, {values.shape}, {k_kept.shape}, {v_kept.shape}")
        # The keys hold the latest positions up to the chunk's last: stop - m .. stop - 1.
        key_pos = np.arange(stop - len(keys), stop)
        q_pos = np.arange(start, stop)
        mask = (key_pos[None] <= q_pos[:, None]) & (q_pos[:, None] - key_pos[None] < window)
        out = attention(q[start:stop], keys, values, mask=mask)
        if not np.allclose(out, want[start:stop], atol=1e-12):
            needed = window + (stop - start) - 1
            return (f"{where}, the chunk of queries {start}..{stop - 1} attended to "
                    f"{len(keys)} keys; its first query reaches back to position "
                    f"{max(start - window + 1, 0)}, so it needs the last "
                    f"{min(needed, stop)} (window + chunk - 1)")
        if len(k_kept) > window - 1:
            return (f"{where}, after position {stop - 1} you keep {len(k_kept)} keys; later "
                    f"queries can only ever see the last window - 1 = {window - 1} of them")
    return None


# Exercise 5 ---------------------------------------------------------------------------

@redrawable
def _logits_trial(rng, shape, k=None, ties=False, dtype=np.float64):
    logits = (rng.integers(-3, 4, size=shape).astype(float) if ties
              else rng.normal(size=shape) * 2).astype(dtype)
    if ties and k is not None and k < shape[-1]:  # every row ties at its k-th logit
        order = np.argsort(-logits, axis=-1, kind="stable")  # (..., n)
        kth = np.take_along_axis(logits, order[..., k - 1:k], -1)  # (..., 1)
        np.put_along_axis(logits, order[..., k:k + 1], kth, -1)
    label = f"logits {shape_text(shape)}" + (" with ties" if ties else "")
    return Trial(label + (f", k = {k}" if k is not None else ""), (logits,) + (
        (k,) if k is not None else ()), {}, np.dtype(dtype))


def check_top_k_filter(your_function):
    """Exercise 5: your_function(logits, k) keeps the k largest logits of each row (and
    any tied with the k-th), -inf elsewhere, over any leading axes."""
    rng = fresh_rng()
    trials = [_logits_trial(rng, (10,), 3), _logits_trial(rng, (3, 12), 5),
              _logits_trial(rng, (4, 8), 2, ties=True), _logits_trial(rng, (2, 6), 9),
              _logits_trial(rng, (2, 3, 7), 1, dtype=np.float32)]

    def strict(logits, k):
        order = np.argsort(-logits, axis=-1, kind="stable")[..., :k]
        out = np.full_like(logits, -np.inf)
        np.put_along_axis(out, order, np.take_along_axis(logits, order, -1), -1)
        return out

    return judge(your_function, trials, filter_top_k, what="top_k_filter",
                 success="your filter equals Hugging Face's top-k (ties with the k-th "
                         "logit kept, k larger than the vocabulary keeps all).",
                 hints=[(lambda logits, k: np.where(logits < np.sort(logits, axis=None)[-k],
                                                    -np.inf, logits),
                         "you kept the k largest logits of the whole array; keep the k "
                         "largest of each row (sort along the last axis)"),
                        (strict, "a token tied with the k-th largest logit is kept too "
                                 "(logits < the k-th value are removed, not all but k)"),
                        (lambda logits, k: np.where(logits < np.sort(logits)[..., -k:-k + 1],
                                                    np.inf, logits), "removed tokens must "
                                 "be -inf")])


# Exercise 6 ---------------------------------------------------------------------------

@redrawable
def _min_p_trial(rng, shape, p):
    trial = _logits_trial(rng, shape)
    trial.args += (p,)
    trial.label += f", p = {p:g}"
    return trial


def check_min_p_filter(your_function):
    """Exercise 6: your_function(logits, p) keeps the tokens whose probability is at least
    p times the most likely token's, -inf elsewhere, over any leading axes."""
    rng = fresh_rng()
    # First a row where a threshold of p itself and of p times the top
    # probability keep different tokens, so that mistake is always caught first.
    trials = [Trial("logits (4,), p = 0.2", (np.log([0.5, 0.3, 0.15, 0.05]), 0.2))]
    for shape, p in (((40,), 0.1), ((3, 12), 0.05), ((2, 4, 9), 0.3), ((5,), 0.0)):
        trials.append(_min_p_trial(rng, shape, p))
    # Rows of different peaks, built in: a threshold from the largest probability of
    # the whole batch (not of each row) removes every token of the flat row.
    peaked = np.array([[5.0, 0.0, 0.5, -1.0, 0.0], [0.2, 0.0, 0.1, 0.0, -0.1]])
    trials.append(Trial("logits (2, 5), one row peaked and one flat, p = 0.3",
                        (peaked + 0.01 * rng.normal(size=(2, 5)), 0.3)))
    # The high edge, p = 1: only the top token stays (both, when two tie at the top).
    trials.append(Trial("logits (6,) with two tied at the top, p = 1",
                        (np.array([2.0, -1.0, 2.0, 0.5, 1.0, 0.0]), 1.0)))
    return judge(your_function, trials, filter_min_p, what="min_p_filter",
                 success="your filter equals min-p sampling's (Nguyen et al., 2024; Hugging "
                         "Face's MinPLogitsWarper).",
                 hints=[(lambda logits, p: np.where(probabilities(logits) < p, -np.inf, logits),
                         "the threshold is p times the top token's probability, not p "
                         "itself"),
                        (lambda logits, p: np.where(logits < p * logits.max(-1, keepdims=True),
                                                    -np.inf, logits),
                         "compare probabilities, not logits: p · max applies after softmax")])


# Exercise 7 ---------------------------------------------------------------------------

def packed_reference(doc_ids, window):
    """The mask of packed documents from its definition, key by key."""
    n = len(doc_ids)
    return np.array([[doc_ids[j] == doc_ids[i] and i - window < j <= i
                      for j in range(n)] for i in range(n)])


def _packed_trial(rng, lengths, window):
    ids = np.repeat(np.arange(len(lengths)), lengths)
    if rng.random() < 0.5:  # ids need not be 0, 1, 2, ...: any label per document
        ids = rng.permutation(50)[ids]
    return Trial(f"documents of {list(lengths)} tokens, window = {window}", (ids, window))


@redrawable
def _random_documents_trial(rng, n, window):
    """Documents of random lengths, n tokens in all: drawn again, the mask changes."""
    cuts = np.sort(rng.choice(np.arange(1, n), size=int(rng.integers(1, 4)),
                              replace=False))
    ids = np.repeat(np.arange(len(cuts) + 1), np.diff(np.concatenate([[0], cuts, [n]])))
    return Trial(f"documents of random lengths, {n} tokens in all, window = {window}",
                 (rng.permutation(50)[ids], window))


def check_sliding_window_mask(your_function):
    """Exercise 7: your_function(doc_ids, window) = the causal sliding-window mask of
    packed documents (n, n): query i sees keys of its own document i - window + 1..i."""
    rng = fresh_rng()
    cases = [([6], 3), ([3, 4], 2), ([2, 5, 3], 4), ([1, 1, 4], 1), ([4, 3], 10),
             ([5, 6], 5), ([1, 7], 3)]
    trials = [_packed_trial(rng, lengths, w) for lengths, w in cases] + [
        _random_documents_trial(rng, 10, 3)]
    band = lambda ids, w: ((ids[:, None] == ids[None, :])  # noqa: E731
                           & (np.abs(np.arange(len(ids))[:, None] - np.arange(len(ids)))
                              < w))
    return judge(your_function, trials, packed_reference, what="packed_window_mask",
                 success="your mask keeps each document to itself, causal and banded: "
                         "each query sees itself and the window - 1 keys before it.",
                 hints=[(band, "the band reaches forward too: a bidirectional window "
                               "used in a decoder lets a query see later tokens"),
                        (lambda ids, w: packed_reference(ids, w + 1), "the window is "
                         "one too wide: query i sees keys i - window + 1 .. i, window "
                         "keys in all"),
                        (lambda ids, w: packed_reference(np.zeros_like(ids), w),
                         "a query sees keys of the document before it: no attention "
                         "across documents")])


# Exercise 8 ---------------------------------------------------------------------------

class _Replay(np.random.Generator):
    """A generator whose ``random`` hands back fixed uniforms: ``sample_next`` then
    draws with exactly the numbers the reader's function was given."""

    def __init__(self, u):
        super().__init__(np.random.PCG64(0))
        self._u = u

    def random(self, size=None, dtype=np.float64, out=None):
        return np.reshape(self._u, size)


def _inverse_transform(probs, u):
    """The token each u falls on: the first whose cumulative probability exceeds u
    (for the hints, which replay a mistake on the same uniforms)."""
    cumulative = np.cumsum(probs, axis=-1)  # (..., vocab)
    ids = np.sum(cumulative <= np.asarray(u)[..., None], axis=-1)  # (...)
    return np.minimum(ids, probs.shape[-1] - 1)


@redrawable
def _temperature_trial(rng, shape, temperature, kind="", dtype=np.float64):
    logits = rng.normal(size=shape) * 2.0
    if kind == "spread over ±1000":
        logits = rng.normal(size=shape) * 600.0
    if kind == "some -inf":
        logits[rng.random(size=shape) < 0.3] = -np.inf
        logits[..., 0] = 0.0  # every row keeps a token
    logits = logits.astype(dtype)
    u = rng.random(size=shape[:-1])
    # Keep each u away from the boundaries of its row, where float32 and float64
    # roundings of the cumulative probabilities could pick neighbouring tokens.
    cumulative = np.cumsum(probabilities(apply_temperature(
        logits.astype(np.float64), temperature)), axis=-1)
    near = np.any(np.abs(cumulative - u[..., None]) < 1e-5, axis=-1)
    u = np.where(near, np.clip(u + 3e-5, 0.0, 1.0 - 1e-9), u)
    label = (f"logits {shape_text(shape)} in {np.dtype(dtype).name}"
             + (f", {kind}" if kind else "") + f", T = {temperature:g}")
    return Trial(label, (logits, temperature, u), {}, np.dtype(dtype))


def _sampled(logits, temperature, u):
    return sample_next(logits, _Replay(u[..., None]), temperature=temperature)


def _rounded_down_trial(rng):
    """A row whose probabilities add up, in floating point, to just under 1, and u just
    under 1 past that sum: the draw is the last token, not one past the end."""
    u = np.nextafter(1.0, 0.0)
    while True:
        logits = rng.normal(size=(1, 7))
        if np.cumsum(softmax(logits, axis=-1), axis=-1)[0, -1] < u:
            return Trial("logits (1, 7) whose probabilities add up to just under 1, "
                         "u just under 1", (logits, 1.0, np.array([u])))


def check_temperature_sample(your_function):
    """Exercise 8: your_function(logits, temperature, u) = the token of each row that
    the uniform u falls on, at temperature T (inverse-transform sampling), over any
    leading axes; equal to sample_next given the same uniforms."""
    rng = fresh_rng()
    trials = [_temperature_trial(rng, (400, 10), 0.5),
              _temperature_trial(rng, (2, 3, 100, 17), 2.0),
              _temperature_trial(rng, (300, 9), 1.3, dtype=np.float32),
              _temperature_trial(rng, (300, 8), 0.8, kind="some -inf"),
              _temperature_trial(rng, (200, 6), 0.05, kind="spread over ±1000"),
              _temperature_trial(rng, (5,), 1.0),
              # u = 0 on rows whose first tokens have probability 0: never drawn
              Trial("logits (3, 5) whose first two tokens are -inf, u = 0",
                    (np.concatenate([np.full((3, 2), -np.inf), rng.normal(size=(3, 3))], -1),
                     1.0, np.zeros(3))),
              _rounded_down_trial(rng)]

    def drawn(probs_of):
        return lambda logits, temperature, u: _inverse_transform(
            probs_of(logits.astype(np.float64), temperature), u)

    def compare(result, expected, trial):
        got, problem = as_array(result, "sample_with_temperature")
        if problem is not None:
            return problem
        if got.shape != expected.shape:
            return (f"return one token id per row, shape {shape_text(expected.shape)}; "
                    f"got {shape_text(got.shape)}")
        if np.array_equal(got, expected):
            return None
        logits, temperature, u = trial.args
        for wrong, message in hints:
            if matches(got, wrong(logits, temperature, u)):
                return message
        wrong_rows = int(np.sum(got != expected))
        first = tuple(int(i) for i in np.argwhere(got != expected)[0])
        return (f"{wrong_rows} of {expected.size} rows differ; row {list(first)} with "
                f"u = {float(u[first]):.4f} should give token {int(expected[first])}, "
                f"got {got[first]} (the first token whose cumulative probability at "
                "T exceeds u)")

    hints = [
        (lambda logits, temperature, u: np.argmax(logits, axis=-1),
         "you always pick the most likely token: that is greedy decoding, the limit "
         "T -> 0; pick the token u falls on in softmax(logits / T)"),
        (drawn(lambda z, t: probabilities(z)),
         "your tokens are those of T = 1: the temperature is not applied"),
        (drawn(lambda z, t: probabilities(z * t)),
         "your tokens are those of logits x T: divide the logits by T (T < 1 "
         "sharpens the distribution, T > 1 flattens it)"),
        (drawn(lambda z, t: probabilities(z) / t),
         "you divided the probabilities by T after the softmax (they no longer sum "
         "to 1); divide the logits before it, softmax(logits / T)"),
        (drawn(lambda z, t: probabilities(z) ** t),
         "you raised the probabilities to the power T; softmax(logits / T) is "
         "p ** (1 / T), renormalised"),
    ]
    problem = None
    for trial in with_redraw(trials):
        result, problem = call(your_function, *trial.args)
        if problem is None:
            problem = compare(result, _sampled(*trial.args), trial)
        if problem is not None:
            return verdict(False, f"on {trial.label}: {problem}")
    return verdict(True, f"on {len(trials)} random inputs (" + "; ".join(
        t.label for t in trials) + ") every token equals sample_next's given the same "
        "uniforms, so your tokens follow softmax(logits / T).")


# Exercise 9 ---------------------------------------------------------------------------

def _top(totals, width):
    """(beam, token, score) of the ``width`` largest totals (..., n_beams, vocab),
    for the hints, which rank a mistake's totals the same way."""
    flat = totals.reshape(totals.shape[:-2] + (-1,))  # (..., n_beams * vocab)
    best = np.argsort(-flat, axis=-1, kind="stable")[..., :width]  # (..., width)
    beam, token = np.divmod(best, totals.shape[-1])
    return beam, token, np.take_along_axis(flat, best, axis=-1)


@redrawable
def _beam_trial(rng, lead, n_beams, vocab, width, kind="", dtype=np.float64):
    while True:  # totals at least 1e-4 apart: float32 and float64 rank them alike
        scores = -np.abs(rng.normal(size=lead + (n_beams,))) * 3.0  # log-probs <= 0
        logits = rng.normal(size=lead + (n_beams, vocab)) * 2.0
        if kind == "near +1000":
            logits = logits + 1000.0
        elif kind == "some -inf":  # tokens 0 and 1 stay: at least 2 per beam
            logits[..., 2:][rng.random(size=logits[..., 2:].shape) < 0.3] = -np.inf
        totals = scores[..., None] + log_softmax(logits, axis=-1)
        ranked = np.sort(totals.reshape(lead + (-1,)), axis=-1)[..., ::-1]
        gaps = -np.diff(ranked[..., :width + 1], axis=-1)
        if np.all(gaps > 1e-4):
            break
    label = (f"{n_beams} beam{'s' if n_beams > 1 else ''}, logits "
             f"{shape_text(logits.shape)} in {np.dtype(dtype).name}"
             + (f", {kind}" if kind else "")
             + f", beam_width {width}")
    return Trial(label, (scores.astype(dtype), logits.astype(dtype), width), {},
                 np.dtype(dtype))


def _beam_reference(scores, logits, beam_width):
    """(beam, token, score), each (..., beam_width): two steps of the package's
    beam_search, whose first step hands out the beams' scores (so that its beam b
    ends in token b) and whose second gives beam b the log-softmax of its logits."""
    lead, (n_beams, vocab) = scores.shape[:-1], logits.shape[-2:]
    beam = np.zeros(lead + (beam_width,), np.int64)
    token, total = np.zeros_like(beam), np.zeros(lead + (beam_width,))
    for at in np.ndindex(*lead):
        log_probs = log_softmax(logits[at].astype(np.float64), axis=-1)

        def model(sequences, s=scores[at].astype(np.float64), lp=log_probs):
            if sequences.shape[1] == 1:  # step 1: the beams, as tokens 0 .. n_beams - 1
                return s[None, :]
            return lp[sequences[:, 1]]  # step 2: beam b's next-token log-probs

        seqs, found = beam_search(model, [0], beam_width=max(beam_width, n_beams),
                                  max_new_tokens=2)
        beam[at], token[at] = seqs[:beam_width, 1], seqs[:beam_width, 2]
        total[at] = found[:beam_width]
    return beam, token, total.astype(np.result_type(scores, logits))  # float32 stays


def check_beam_step(your_function):
    """Exercise 9: your_function(scores, logits, beam_width) -> (beam, token, score),
    the beam_width best one-token extensions of the beams, best first, over any
    leading axes (a batch of prompts)."""
    rng = fresh_rng()
    trials = [_beam_trial(rng, (), 1, 9, 4), _beam_trial(rng, (), 3, 7, 3),
              _beam_trial(rng, (), 4, 5, 6, kind="some -inf"),
              _beam_trial(rng, (2,), 3, 11, 3), _beam_trial(rng, (), 2, 6, 2,
                                                            kind="near +1000"),
              _beam_trial(rng, (2, 3), 5, 8, 4, dtype=np.float32)]

    def raw(scores, logits, w):
        return _top(scores[..., None] + logits.astype(np.float64), w)

    def no_scores(scores, logits, w):
        return _top(log_softmax(logits.astype(np.float64), axis=-1), w)

    hints = [(raw, "you added the raw logits; each beam's logits become "
                   "log-probabilities first, log_softmax(logits) = logits - "
                   "logsumexp(logits)"),
             (no_scores, "you ranked the extensions by this step's log-probabilities "
                         "alone; a beam's total is its score plus the new token's "
                         "log-probability")]

    for trial in with_redraw(trials):
        scores, logits, width = trial.args
        want = _beam_reference(scores, logits, width)
        result, problem = call(your_function, *trial.args)
        if problem is None:
            problem = _beam_difference(result, want, trial, hints)
        if problem is not None:
            return verdict(False, f"on {trial.label}: {problem}")
    return verdict(True, f"on {len(trials)} random inputs (" + "; ".join(
        t.label for t in trials) + ") your beams, tokens and scores equal two steps of "
        "the package's beam_search.")


def _beam_difference(result, want, trial, hints):
    """What differs between the reader's (beam, token, score) and the package's."""
    try:
        beam, token, score = result
    except (TypeError, ValueError):
        return f"return three arrays (beam, token, score), got {type(result).__name__}"
    got = []
    for name, value, expected in zip(("beam", "token", "score"), (beam, token, score),
                                     want):
        value, problem = as_array(value, f"the {name} array")
        if problem is not None:
            return problem
        if value.shape != expected.shape:
            n_beams = trial.args[0].shape[-1]
            one_each = (value.shape[-1:] == (n_beams,) and n_beams < expected.shape[-1])
            return (f"{name} should have shape {shape_text(expected.shape)} (the "
                    f"beam_width best, per prompt), got {shape_text(value.shape)}"
                    + ("; one per beam? Two extensions of one beam can both be among "
                       "the best" if one_each else ""))
        got.append(value)
    if (np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
            and difference(got[2], want[2], trial.dtype) is None):
        return None
    scores, logits, width = trial.args
    for wrong, message in hints:
        other = wrong(scores, logits, width)
        if (np.array_equal(got[0], other[0]) and np.array_equal(got[1], other[1])
                and matches(got[2], other[2], trial.dtype)):
            return message
    n_beams, vocab = logits.shape[-2:]
    flat = want[0] * vocab + want[1]  # (..., width): where each best total lies
    if np.array_equal(got[0], flat % n_beams) and np.array_equal(got[1],
                                                                 flat // n_beams):
        return ("the flat index of (beam, token) in the (n_beams, vocab_size) totals "
                "is beam * vocab_size + token: beam = index // vocab_size, token = "
                "index % vocab_size")
    if np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]):
        return "the beams and tokens are right; the scores: " + difference(
            got[2], want[2], trial.dtype)
    at = tuple(int(i) for i in np.argwhere((got[0] != want[0]) | (got[1] != want[1]))[0])
    return (f"extension {list(at)} should be beam {int(want[0][at])}, token "
            f"{int(want[1][at])} (total {float(want[2][at]):.4f}); you gave beam "
            f"{int(got[0][at])}, token {int(got[1][at])}")


# Exercise 10 --------------------------------------------------------------------------

@redrawable
@redrawable
def _padded_trial(rng, B, h, n_q, n_k, d, dtype=np.float64, scale=1.0):
    """A batch after a cache, left-padded: sequence 0 without padding, the last one
    padded up to its first new token, the others at random."""
    q = (rng.normal(size=(B, h, n_q, d)) * scale).astype(dtype)
    k, v = (rng.normal(size=(B, h, n_k, d)).astype(dtype) for _ in range(2))
    pad = rng.integers(0, n_k - n_q + 1, size=B)
    pad[0], pad[-1] = 0, n_k - n_q
    return Trial(f"q {shape_text(q.shape)} after {n_k - n_q} cached tokens, k "
                 f"{shape_text(k.shape)}, left-padded by 0 to {n_k - n_q} in "
                 f"{np.dtype(dtype).name}"
                 + (", the scores near ±1000" if scale != 1.0 else ""),
                 (q, k, v, pad), {}, np.dtype(dtype))


def padded_reference(q, k, v, pad, *, start=None, causal=True, pads=True,
                     left=True):
    """Attention of the last n_q tokens of left-padded sequences (the package's
    window_mask and attention). The keywords make a mistake, to name it: the queries
    at positions from ``start``, no causal mask, no pads, pads on the right; these
    give NaN rows where no key is left, as a reader's softmax does."""
    n_q, n_k = q.shape[-2], k.shape[-2]
    first = n_k - n_q if start is None else start
    allowed = (window_mask(np.arange(first, first + n_q), np.arange(n_k)) if causal
               else np.ones((n_q, n_k), dtype=bool))
    j, pad = np.arange(n_k), np.asarray(pad)[:, None]
    if pads:
        real = j >= pad if left else j < n_k - pad
        allowed = allowed & real[:, None, None, :]
    if start is None and causal and pads and left:
        return attention(q, k, v, mask=allowed)
    with np.errstate(all="ignore"):
        scores = np.where(allowed, q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]),
                          -np.inf)
        w = np.exp(scores - scores.max(axis=-1, keepdims=True))
        return (w / w.sum(axis=-1, keepdims=True)) @ v


def check_cached_causal(your_function):
    """Exercise 10: your_function(q, k, v, pad) = causal attention of the n_q newest
    tokens of left-padded sequences over all n_k (the cache's and their own)."""
    rng = fresh_rng()
    trials = [_padded_trial(rng, 3, 2, 3, 7, 8), _padded_trial(rng, 2, 3, 1, 6, 8),
              _padded_trial(rng, 4, 1, 3, 8, 4), _padded_trial(rng, 2, 2, 5, 7, 16),
              _padded_trial(rng, 3, 2, 2, 9, 8, np.float32),
              _padded_trial(rng, 3, 4, 3, 8, 8, scale=600.0)]
    return judge(
        your_function, trials, padded_reference, what="padded_cached_attention",
        success="each new query sees the real cached keys and the new ones up to its "
                "own position, never a pad.",
        hints=[(lambda q, k, v, pad: padded_reference(q, k, v, pad, start=0),
                "your mask puts query i at position i, as if nothing were cached: the "
                "queries are the last n_q tokens, at positions n_k - n_q + i"),
               (lambda q, k, v, pad: padded_reference(
                   q, k, v, pad, start=k.shape[-2] - q.shape[-2] + 1),
                "each query also sees the key after its own: key j is allowed when "
                "j <= the query's position n_k - n_q + i"),
               (lambda *a: padded_reference(*a, causal=False),
                "every query sees all the real keys, the later tokens of its own chunk "
                "included: block the keys after each query's position"),
               (lambda *a: padded_reference(*a, pads=False),
                "the padding is attended: the first pad[b] keys of sequence b are no "
                "tokens at all"),
               (lambda *a: padded_reference(*a, left=False),
                "the pads are at the start of each sequence (left padding), not at the "
                "end")])


guard_checks(globals())  # no check raises, whatever the answer (verdict.py)
