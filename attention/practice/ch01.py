"""Self-checks for the practice exercises of chapter 1 (foundations).

Each check calls the reader's function on data of its own, prints a one-line verdict
("✓ Correct: ..." or "✗ Not yet: ..." saying concretely what is wrong) and returns True
or False. A check never raises because an answer is wrong, so a page can run an unsolved
starter and show the check's message. NumPy's overflow warnings from a naive answer are
silenced: the verdict says what went wrong.
"""

import numpy as np

from attention.practice.verdict import call, guard_checks, verdict
from attention.softmax import logsumexp, softmax

_TOL = dict(rtol=1e-10, atol=1e-10)


def _run(fn, *args, **kwargs):
    """Call the reader's function with NumPy's floating-point warnings off."""
    with np.errstate(all="ignore"):
        return call(fn, *args, **kwargs)


def _as_floats(result, what):
    """The reader's result as a float array, or (None, a failure line)."""
    if result is None:
        return None, f"{what} returned None; return a number or a NumPy array"
    try:
        return np.asarray(result, dtype=float), None
    except (TypeError, ValueError):
        return None, f"{what} returned {type(result).__name__}, not numbers"


def _same(got, expected):
    """Equal shapes and values (inf equal to inf; nan never equal)."""
    return got.shape == expected.shape and bool(
        np.allclose(got, expected, **_TOL))


def _fmt(a):
    return np.array2string(np.asarray(a), precision=3, suppress_small=True)


# Exercise 1 ---------------------------------------------------------------------------

def _lse_cases():
    """(description, x, axis) from easy to hard; each catches a plausible mistake."""
    rng = np.random.default_rng(11)
    square = rng.normal(scale=3, size=(4, 4)) + np.arange(4)[:, None] * 5
    return [
        ("[1, 2, 3]", np.array([1.0, 2.0, 3.0]), -1),
        ("[1000, 999, 998]", np.array([1000.0, 999.0, 998.0]), -1),
        ("[-1000, -999, -998]", np.array([-1000.0, -999.0, -998.0]), -1),
        ("rows near 1000, 0 and -1000 (shape (3, 4))",
         np.array([[1000.0, 999.0, 998.0, 990.0], [0.0, 1.0, 2.0, 3.0],
                   [-1000.0, -1001.0, -998.0, -999.0]]), -1),
        ("a (4, 4) array whose rows differ", square, -1),
        ("a (2, 3, 4) array along axis 0", rng.normal(size=(2, 3, 4)), 0),
        ("a (2, 3, 4) array along axis 1", rng.normal(size=(2, 3, 4)), 1),
        ("[0, -inf, 1]", np.array([0.0, -np.inf, 1.0]), -1),
        ("rows [0, 1] and [-inf, -inf]",
         np.array([[0.0, 1.0], [-np.inf, -np.inf]]), -1),
    ]


def _lse_hint(x, axis, got):
    """Name the mistake behind a wrong log-sum-exp, if it is a known one."""
    with np.errstate(all="ignore"):
        m_row = np.max(x, axis=axis, keepdims=True)
        expected = logsumexp(x, axis=axis)
        if x.ndim > 1 and axis != -1:
            along_last = logsumexp(x, axis=-1)
            if along_last.shape == got.shape and np.allclose(got, along_last):
                return f"use the axis you are given ({axis}), not always -1"
        if got.shape != expected.shape:
            return "the axis summed over should be gone from the result"
        m_all = np.max(x)
        one_max = np.log(np.sum(np.exp(x - m_all), axis=axis)) + m_all
        if x.ndim > 1 and np.allclose(got, one_max, equal_nan=True):
            return ("you shifted every row by the largest entry of the whole "
                    "array; rows far below it underflow to log(0) = -inf: "
                    "shift each row by its own maximum, np.max(x, axis=axis, "
                    "keepdims=True)")
        if not np.all(np.isfinite(got)) and np.all(np.isfinite(expected)):
            if np.max(np.abs(x)) >= 700:
                return ("exp overflows or underflows at scores near ±1000: "
                        "subtract the largest entry m before exp, then add m "
                        "back after the log")
        if np.isnan(got).any() and not np.isnan(expected).any():
            return ("a row of all -inf should give -inf (the log of an empty "
                    "sum), not nan: where the maximum is -inf, shift by 0 "
                    "instead (-inf - (-inf) is nan)")
        without_m = np.log(np.sum(np.exp(x - m_row), axis=axis))
        if got.shape == expected.shape and np.allclose(got, without_m):
            return ("you subtracted the maximum m but did not add it back: "
                    "log Σ exp(x) = m + log Σ exp(x - m)")
        if x.ndim == 2 and x.shape[0] == x.shape[1] and axis == -1:
            m = np.max(x, axis=-1)  # no keepdims: lines up with the columns
            misaligned = np.log(np.sum(np.exp(x - m), axis=-1)) + m
            if np.allclose(got, misaligned):
                return ("each row was shifted by the columns' maxima: keep the "
                        "reduced axis, np.max(x, axis=axis, keepdims=True)")
    return None


def check_logsumexp(your_function):
    """Exercise 1: your_function(x, axis) = log(sum(exp(x))) along axis, stably."""
    for what, x, axis in _lse_cases():
        expected = logsumexp(x, axis=axis)
        got, problem = _run(your_function, x.copy(), axis=axis)
        if problem is None:
            got, problem = _as_floats(got, f"my_logsumexp({what})")
        if problem:
            if "broadcast" in problem:
                problem += ("; keep the reduced axis: np.max(x, axis=axis, "
                            "keepdims=True)")
            return verdict(False, problem)
        if _same(got, expected):
            continue
        hint = _lse_hint(x, axis, got)
        if got.shape != expected.shape:
            line = (f"for {what} the result should have shape "
                    f"{expected.shape}, got {got.shape}")
        else:
            line = (f"for {what} the answer is {_fmt(expected)}, "
                    f"you returned {_fmt(got)}")
        return verdict(False, f"{line}: {hint}" if hint else line)
    return verdict(True, "stable at ±1000, along any axis, with -inf entries "
                         "and a row of all -inf (-inf).")


# Exercise 2 ---------------------------------------------------------------------------

def _softmax_cases():
    rng = np.random.default_rng(12)
    batch = rng.normal(size=(2, 3, 4, 5))  # (batch, n_heads, n_q, n_k)
    far = rng.normal(size=(2, 3, 4, 5))
    far[0] += 1000.0  # one sequence's scores near +1000, the other's near -1000
    far[1] -= 1000.0
    square = rng.normal(scale=3, size=(4, 4)) + np.arange(4)[:, None] * 5
    return [
        ("scores of shape (2, 3, 4, 5) along axis -1", batch, -1),
        ("the same scores along axis 1 (over the heads)", batch, 1),
        ("the same scores along axis 0", batch, 0),
        ("the same scores along axis -2 (over the queries)", batch, -2),
        ("a (4, 4) array whose rows differ, along axis -1", square, -1),
        ("scores near +1000 in sequence 0 and -1000 in sequence 1", far, -1),
    ]


def _softmax_hint(x, axis, got):
    with np.errstate(all="ignore"):
        if np.isnan(got).any() or np.isinf(got).any():
            if np.max(np.abs(x)) >= 700:
                return ("exp overflows or underflows: subtract each row's own "
                        "maximum, np.max(x, axis=axis, keepdims=True), before "
                        "exp (not the maximum of the whole array)")
        if np.isclose(np.sum(got), 1.0):
            return ("your weights sum to one over the whole array: sum along "
                    "the axis only, with keepdims=True")
        if got.shape == x.shape and axis != -1:
            if np.allclose(got, softmax(x, axis=-1)):
                return f"use the axis you are given ({axis}), not always -1"
        sums = np.sum(got, axis=axis)
        if x.ndim == 2 and not np.allclose(sums, 1.0):
            return ("the weights along the axis do not sum to one: a max or "
                    "sum without keepdims=True lines up with the wrong axis")
    return None


def check_softmax_along(your_function):
    """Exercise 2: your_function(x, axis) = softmax along axis, stable."""
    for what, x, axis in _softmax_cases():
        expected = softmax(x, axis=axis)
        got, problem = _run(your_function, x.copy(), axis=axis)
        if problem is None:
            got, problem = _as_floats(got, "softmax_along")
        if problem:
            if "broadcast" in problem:
                problem += ("; keep the reduced axis: keepdims=True in the max "
                            "and in the sum")
            return verdict(False, problem)
        if got.shape != x.shape:
            return verdict(False, f"for {what} the weights should have the "
                                  f"input's shape {x.shape}, got {got.shape}")
        if _same(got, expected):
            continue
        hint = _softmax_hint(x, axis, got) or "compare with the softmax formula"
        return verdict(False, f"for {what} your weights are wrong: {hint}")
    return verdict(True, "every axis of a (2, 3, 4, 5) batch sums to one, and "
                         "scores of ±1000 give no nan.")


# Exercise 3 ---------------------------------------------------------------------------

# (a_shape, b_shape, why): the expected answer comes from NumPy itself.
_PRODUCTS = [
    ((3, 4), (4, 5), "the inner 4s match and disappear"),
    ((5, 4), (5, 4), "the inner sizes 4 and 5 differ (transpose b)"),
    ((2, 3, 4), (4, 5), "b is broadcast over a's batch of 2"),
    ((4, 5), (2, 5, 3), "a is broadcast over b's batch of 2"),
    ((2, 12, 5, 64), (2, 12, 64, 7), "12 heads of 2 sequences: (5, 64) @ (64, 7)"),
    ((2, 1, 5, 64), (12, 64, 7), "batch axes (2, 1) and (12,) broadcast to (2, 12)"),
    ((2, 3, 4), (3, 4, 5), "the batch sizes 2 and 3 differ and neither is 1"),
    ((7, 1, 3, 4), (6, 4, 2), "batch axes (7, 1) and (6,) broadcast to (7, 6)"),
    ((2, 3, 4), (2, 5, 4), "the inner sizes 4 and 5 differ (forgot a transpose)"),
]


def _numpy_product_shape(a_shape, b_shape):
    try:
        return np.matmul(np.zeros(a_shape), np.zeros(b_shape)).shape
    except ValueError:
        return None


def check_product_shape(your_function):
    """Exercise 3: your_function(a_shape, b_shape) = (a @ b).shape, or None."""
    for a_shape, b_shape, why in _PRODUCTS:
        expected = _numpy_product_shape(a_shape, b_shape)
        got, problem = _run(your_function, a_shape, b_shape)
        call_text = f"product_shape({a_shape}, {b_shape})"
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
    return verdict(True, f"all {len(_PRODUCTS)} products predicted, the "
                         "refused ones included.")


guard_checks(globals())  # no check raises, whatever the answer (verdict.py)
