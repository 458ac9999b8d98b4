"""Self-checks for the practice exercises of chapter 1 (foundations).

Each check draws random inputs of its own at every call (batch axes, odd sizes, float32
and float64, scores near ±1000), calls the reader's function through
``attention.practice.verdict.call`` and compares with the package's implementation,
itself checked against PyTorch in the tests. It prints one verdict, "✓ Correct: ..." or
"✗ Not yet: ..." with what was tried and what differed, and returns True or False; it
never raises, whatever the answer.
"""

import numpy as np

from attention.practice.trials import (Trial, array_trial, fresh_rng, judge, normal,
                                       redrawable, shape_text)
from attention.practice.verdict import call, guard_checks, verdict
from attention.softmax import log_softmax, logsumexp, softmax


def _naive_softmax(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def _global_shift_softmax(x, axis=-1):
    e = np.exp(x - np.max(x))
    return e / e.sum(axis=axis, keepdims=True)


# Exercise 1 ---------------------------------------------------------------------------

def check_stable_softmax(your_function):
    """Exercise 1: your_function(x, axis=-1) = softmax along axis, no overflow."""
    rng = fresh_rng()
    trials = [
        array_trial(rng, (3, 5), kind="near +1000"),
        array_trial(rng, (7,)),
        array_trial(rng, (3, 7), np.float32),
        array_trial(rng, (2, 3, 4, 6), axis=-1),
        array_trial(rng, (4, 6), axis=0),
        array_trial(rng, (2, 5), kind="near -1000"),
        array_trial(rng, (3, 9), kind="rows at -1500, 0 and +1500"),
        array_trial(rng, (2, 6), np.float32, kind="near +1000"),
        array_trial(rng, (3, 5), neg_inf=2),
        array_trial(rng, (4, 8), kind="spread over thousands"),
        array_trial(rng, (3, 6), kind="near the float limits"),
    ]
    return judge(
        your_function, trials, lambda x, axis=-1: softmax(x, axis=axis),
        what="stable_softmax",
        success="your softmax equals attention.softmax: stable, and along the axis asked.",
        hints=[(_naive_softmax, "exp overflows to inf at scores near 1000 (inf / inf is "
                "nan): subtract each row's maximum before exp, which changes nothing "
                "else since softmax(x - c) = softmax(x)"),
               (_global_shift_softmax, "you shifted by the largest entry of the whole "
                "array: rows far below it underflow to 0 / 0; shift each row by its own "
                "maximum, np.max(x, axis=axis, keepdims=True)"),
               (lambda x, axis=-1: softmax(x, axis=-1), "use the axis you are given, "
                "not always -1")])


# Exercise 2 ---------------------------------------------------------------------------

def check_log_softmax(your_function):
    """Exercise 2: your_function(x, axis=-1) = log softmax along axis, finite where it is."""
    rng = fresh_rng()
    trials = [
        array_trial(rng, (3, 8), kind="spread over ±1000"),
        array_trial(rng, (6,)),
        array_trial(rng, (2, 3, 7), np.float32),
        array_trial(rng, (5, 4), axis=0),
        array_trial(rng, (2, 4, 3, 5), kind="near +1000"),
        array_trial(rng, (3, 6), neg_inf=2),
        array_trial(rng, (4, 8), kind="spread over thousands"),
        array_trial(rng, (3, 6), kind="near the float limits"),
    ]
    return judge(
        your_function, trials, lambda x, axis=-1: log_softmax(x, axis=axis),
        what="log_softmax",
        success="your log-softmax equals attention.log_softmax, finite wherever the "
                "answer is.",
        hints=[(lambda x, axis=-1: np.log(softmax(x, axis=axis)), "the log of a softmax "
                "that underflowed to 0 is -inf; compute x - logsumexp(x) instead, "
                "which never exponentiates the gap between two scores"),
               (lambda x, axis=-1: x - np.max(x, axis=axis, keepdims=True),
                "you subtracted the maximum but not log Σ exp(x - m)"),
               (lambda x, axis=-1: log_softmax(x, axis=-1),
                "use the axis you are given, not always -1")])


# Exercise 3 ---------------------------------------------------------------------------

@redrawable
def _lse_trial(rng, shape, axis, keepdims, dtype=np.float64, kind="", neg_inf=0):
    """A log-sum-exp trial; axis and keepdims None: left to their defaults."""
    trial = array_trial(rng, shape, dtype, kind, axis=axis, neg_inf=neg_inf)
    if keepdims is not None:
        trial.kwargs["keepdims"] = keepdims
        trial.label += f", keepdims={keepdims}"
    else:
        trial.label += ", axis and keepdims left to their defaults"
    return trial


def check_logsumexp(your_function):
    """Exercise 3: your_function(x, axis=-1, keepdims=False) = log Σ exp(x), stably."""
    rng = fresh_rng()
    trials = [
        _lse_trial(rng, (3, 5), -1, False, kind="near +1000"),
        _lse_trial(rng, (2, 3, 6), 1, True),
        _lse_trial(rng, (4, 7), 0, False, np.float32),
        _lse_trial(rng, (2, 5), -1, False, kind="near -1000"),
        _lse_trial(rng, (3, 4), -1, True, neg_inf=4),
        _lse_trial(rng, (1, 4, 5), -1, False),  # a size-1 axis that must stay
        _lse_trial(rng, (2, 2, 3, 5), -1, False, neg_inf=2),
        _lse_trial(rng, (2, 4, 8), None, None, kind="spread over thousands"),
        _lse_trial(rng, (3, 6), 0, True, kind="near the float limits"),
    ]

    def reference(x, axis=-1, keepdims=False):
        return logsumexp(x, axis=axis, keepdims=keepdims)

    def no_add_back(x, axis=-1, keepdims=False):
        m = np.max(x, axis=axis, keepdims=True)
        return np.log(np.sum(np.exp(x - m), axis=axis, keepdims=keepdims))

    def nan_rows(x, axis=-1, keepdims=False):
        m = np.max(x, axis=axis, keepdims=True)
        out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
        return out if keepdims else np.squeeze(out, axis=axis)

    return judge(
        your_function, trials, reference, what="logsumexp",
        success="your log-sum-exp equals attention.logsumexp, rows of -inf and "
                "keepdims included.",
        hints=[(lambda x, axis=-1, keepdims=False: np.log(np.sum(
                    np.exp(x), axis=axis, keepdims=keepdims)),
                "exp overflows to inf at scores near 1000: subtract the largest entry m "
                "before exp, then add m back after the log"),
               (nan_rows, "a row of all -inf should give -inf (the log of an empty sum), "
                "not nan: where the maximum is -inf, shift by 0 (-inf - (-inf) is nan)"),
               (no_add_back, "you subtracted the maximum m but did not add it back: "
                "log Σ exp(x) = m + log Σ exp(x - m)")])


# Exercise 4 ---------------------------------------------------------------------------

# (a_shape, b_shape, why): the expected answer comes from NumPy itself.
_PRODUCTS = [
    ((3, 4), (4, 5), "the inner 4s match and disappear"),
    ((5, 4), (5, 4), "the inner sizes 4 and 5 differ (transpose b)"),
    ((2, 3, 4), (4, 5), "b is broadcast over a's batch of 2"),
    ((4, 5), (2, 5, 3), "a is broadcast over b's batch of 2"),
    ((4, 5), (3, 5, 2), "a is broadcast over b's batch of 3"),
    ((3, 4, 5), (5, 2), "b is broadcast over a's batch of 3"),
    ((2, 12, 5, 64), (2, 12, 64, 7), "12 heads of 2 sequences: (5, 64) @ (64, 7)"),
    ((2, 1, 5, 64), (12, 64, 7), "batch axes (2, 1) and (12,) broadcast to (2, 12)"),
    ((2, 3, 4), (3, 4, 5), "the batch sizes 2 and 3 differ and neither is 1"),
    ((7, 1, 3, 4), (6, 4, 2), "batch axes (7, 1) and (6,) broadcast to (7, 6)"),
    ((2, 3, 4), (2, 5, 4), "the inner sizes 4 and 5 differ (forgot a transpose)"),
]


def _random_products(rng, count=12):
    """Shapes the reader has not seen: random batch axes, some of them 1."""
    found = []
    for _ in range(count):
        a_batch = list(rng.choice([1, 2, 3, 5], size=rng.integers(0, 3)))
        b_batch = list(rng.choice([1, 2, 3, 5], size=rng.integers(0, 3)))
        n, d, m = (int(s) for s in rng.integers(2, 9, size=3))
        d_b = d if rng.random() < 0.8 else d + 1
        found.append((tuple(int(s) for s in a_batch) + (n, d),
                      tuple(int(s) for s in b_batch) + (d_b, m), "a random product"))
    return found


def _numpy_product_shape(a_shape, b_shape):
    try:
        return np.matmul(np.zeros(a_shape), np.zeros(b_shape)).shape
    except ValueError:
        return None


def check_product_shape(your_function):
    """Exercise 4: your_function(a_shape, b_shape) = (a @ b).shape, or None, without
    calling NumPy (the page asks for the rule, not NumPy's answer: a call of numpy
    is refused)."""
    cases = _PRODUCTS + _random_products(fresh_rng())
    for a_shape, b_shape, why in cases:
        expected = _numpy_product_shape(a_shape, b_shape)
        got, problem = call(your_function, a_shape, b_shape, forbidden=(np,))
        call_text = f"product_shape({shape_text(a_shape)}, {shape_text(b_shape)})"
        if problem:
            return verdict(False, f"{call_text}: {problem}")
        if got is not None:
            try:
                got = tuple(int(size) for size in got)
            except (TypeError, ValueError):
                return verdict(False, f"{call_text} returned {got!r}: return a "
                                      "tuple of ints, or None")
        if got == expected:
            continue
        if expected is None:
            return verdict(False, f"{call_text} returned {got}, but NumPy "
                                  f"refuses this product: {why}")
        return verdict(False, f"{call_text} should be {expected} ({why}), "
                              f"you returned {got}")
    return verdict(True, f"{len(_PRODUCTS)} chosen products and {len(cases) - len(_PRODUCTS)} "
                         "random ones predicted, the refused ones included.")


# Exercise 5 ---------------------------------------------------------------------------

@redrawable
def _scores_trial(rng, q_shape, k_shape, dtype=np.float64):
    q, k = normal(rng, q_shape, dtype), normal(rng, k_shape, dtype)
    return Trial(f"q {shape_text(q_shape)} and k {shape_text(k_shape)} in "
                 f"{np.dtype(dtype).name}", (q, k), {}, np.dtype(dtype))


def _reference_scores(q, k):
    return (q @ np.swapaxes(k, -1, -2)) / np.sqrt(np.asarray(q.shape[-1], q.dtype))


def check_attention_scores(your_function):
    """Exercise 5: your_function(q, k) = q kᵀ / √d over the last two axes, batched."""
    rng = fresh_rng()
    trials = [
        _scores_trial(rng, (5, 8), (7, 8)),
        _scores_trial(rng, (2, 3, 5, 8), (2, 3, 6, 8)),
        _scores_trial(rng, (2, 4, 3, 16), (2, 1, 9, 16), np.float32),
        _scores_trial(rng, (3, 1, 7), (3, 4, 7)),
    ]
    return judge(
        your_function, trials, _reference_scores, what="attention_scores",
        success="your scores equal q kᵀ / √d over the last two axes, broadcasting "
                "the batch and head axes.",
        hints=[(lambda q, k: q @ np.swapaxes(k, -1, -2), "the scores are not scaled: "
                "divide by √d, d = q.shape[-1]"),
               (lambda q, k: q @ np.swapaxes(k, -1, -2) / q.shape[-1],
                "you divided by d; divide by √d")])


# Exercise 6 ---------------------------------------------------------------------------

@redrawable
def _distribution_trial(rng, shape, zeros=0, one_hot=False):
    p = softmax(normal(rng, shape, scale=2.0), axis=-1)
    if zeros:
        p[..., :zeros] = 0.0
        p /= p.sum(axis=-1, keepdims=True)
    if one_hot:
        p[0] = 0.0
        p[0, ..., -1] = 1.0
    label = f"{shape_text(shape)} distributions along the last axis"
    label += f" with {zeros} zero probabilities per row" if zeros else ""
    label += ", the first one-hot" if one_hot else ""
    return Trial(label, (p,))


def _entropy(p):
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0), axis=-1)


def check_entropy(your_function):
    """Exercise 6: your_function(p) = -Σ p log p along the last axis, in nats, 0 log 0 = 0."""
    rng = fresh_rng()
    trials = [_distribution_trial(rng, (4, 6), zeros=2),
              _distribution_trial(rng, (5,)),
              _distribution_trial(rng, (2, 3, 7), zeros=1),
              _distribution_trial(rng, (3, 5), one_hot=True)]
    return judge(
        your_function, trials, _entropy, what="entropy",
        success="your entropies equal -Σ p log p in nats, with 0 log 0 = 0.",
        hints=[(lambda p: -np.sum(p * np.log(p), axis=-1), "a zero probability gives "
                "0 · log 0 = 0 · (-inf) = nan; its term is 0 (the limit of p log p)"),
               (lambda p: _entropy(p) / np.log(2), "that is in bits (log base 2); the "
                "exercise asks for nats, the natural log"),
               (lambda p: -_entropy(p), "the sign: log p <= 0, so -Σ p log p >= 0")])


guard_checks(globals())  # no check raises, whatever the answer (verdict.py)
