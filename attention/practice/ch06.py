"""Self-checks for the practice exercises of chapter 6 (backpropagation through attention).

Each check calls the reader's function on data of its own, prints one verdict
("✓ Correct: ..." or "✗ Not yet: ..." saying what is wrong) and returns True or False.
It never raises because an answer is wrong. References come from ``attention.backward``.
"""

import math

import numpy as np

from attention.backward import attention_backward, softmax_backward
from attention.masks import causal_mask
from attention.practice.verdict import call, guard_checks, verdict
from attention.softmax import softmax


def _as_array(got, shape, what):
    """(array, None) if got is a float array of this shape, else (None, a failure line)."""
    try:
        got = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return None, f"{what} should be an array of shape {shape}, got {type(got).__name__}"
    if got.shape != shape:
        return None, f"{what} should have shape {shape}, got {got.shape}"
    if not np.all(np.isfinite(got)):
        return None, f"{what} holds NaN or inf"
    return got, None


def _close(a, b, tol=1e-10):
    return float(np.max(np.abs(a - b), initial=0.0)) <= tol * max(1.0, float(np.max(np.abs(b), initial=0.0)))


# Exercise 1 ---------------------------------------------------------------------------

def check_softmax_vjp(your_function):
    """Exercise 1: your_function(g, p) = ∂L/∂s for p = softmax(s) along the last axis."""
    rng = np.random.default_rng(61)
    p = softmax(rng.normal(size=(3, 6)) * 2.0)  # three rows of six weights
    g = rng.normal(size=(3, 6))
    expected = softmax_backward(g, p)
    got, problem = call(your_function, g.copy(), p.copy())
    if problem:
        return verdict(False, problem)
    got, problem = _as_array(got, expected.shape, "the result")
    if problem:
        return verdict(False, problem)
    if _close(got, expected):
        jacobian_entries = 3 * 6 * 6
        return verdict(True, f"equal to the Jacobian product for 3 rows of 6, using 3 x 6 numbers "
                             f"instead of the Jacobian's {jacobian_entries}.")
    row_dot = np.sum(g * p, axis=-1, keepdims=True)
    if _close(got, p * g):
        return verdict(False, "p * g is only the diagonal of the Jacobian, diag(p); subtract each "
                              "row's p (g·p) for the -p pᵀ part")
    if _close(got, p * (g - g.sum(axis=-1, keepdims=True))):
        return verdict(False, "subtract g·p, the sum of g weighted by p, not the plain sum of g")
    if _close(got, g - row_dot):
        return verdict(False, "close: multiply (g - g·p) by p, entry by entry")
    if _close(got, p * (g - np.sum(g * p, axis=0, keepdims=True))):
        return verdict(False, "the dot product g·p runs along each row (axis -1), not down the columns")
    return verdict(False, f"off by up to {np.max(np.abs(got - expected)):.3g}; the answer is "
                          "p_j (g_j - g·p) in every row")


# Exercise 2 ---------------------------------------------------------------------------

def check_dv_and_dq(your_function):
    """Exercise 2: your_function(d_out, q, k, v) = (dv, dq) for one head, no mask."""
    rng = np.random.default_rng(62)
    n_q, n_k, d, d_v = 5, 7, 8, 3  # n_q != n_k, so a misplaced transpose shows
    q, k, v, d_out = (rng.normal(size=s) for s in ((n_q, d), (n_k, d), (n_k, d_v), (n_q, d_v)))
    dq_true, _, dv_true = attention_backward(d_out, q, k, v)
    got, problem = call(your_function, d_out.copy(), q.copy(), k.copy(), v.copy())
    if problem:
        return verdict(False, problem)
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return verdict(False, f"return a pair (dv, dq), got {type(got).__name__}")
    dv, problem = _as_array(got[0], dv_true.shape, "dv")
    if problem:
        return verdict(False, problem)
    if not _close(dv, dv_true):
        if not np.any(dv):
            return verdict(False, "dv is still all zeros: O = P V, so dV = Pᵀ dO")
        return verdict(False, f"dv is off by up to {np.max(np.abs(dv - dv_true)):.3g}: O = P V, so dV = Pᵀ dO")
    dq, problem = _as_array(got[1], dq_true.shape, "dq")
    if problem:
        return verdict(False, "dv is right; " + problem)
    if _close(dq, dq_true):
        return verdict(True, "dv and dq equal the hand-derived backward (and autograd's) "
                             "to 1e-10 for 5 queries and 7 keys.")
    if not np.any(dq):
        return verdict(False, "dv is right; dq is still all zeros: dS = P ⊙ (dP - rowsum(dP ⊙ P)), "
                              "then dQ = dS K / √d")
    if _close(dq, dq_true * math.sqrt(d)):
        return verdict(False, f"dv is right; dq is √d = {math.sqrt(d):.2f} times too large: the scores "
                              "are q kᵀ / √d, so the 1/√d comes back in dQ")
    p = softmax(q @ k.T / math.sqrt(d))
    if _close(dq, (p * (d_out @ v.T)) @ k / math.sqrt(d)):
        return verdict(False, "dv is right; dq misses the softmax's correction: "
                              "dS = P ⊙ (dP - rowsum(dP ⊙ P)), not P ⊙ dP")
    return verdict(False, f"dv is right; dq is off by up to {np.max(np.abs(dq - dq_true)):.3g}")


# Exercise 3 ---------------------------------------------------------------------------

def _smooth_loss(x):
    """A loss with real curvature: one-sided differences are visibly off on it."""
    w = np.linspace(-1.0, 2.0, x.size).reshape(x.shape)
    return float(np.sum(np.exp(x) * w) + np.sum(softmax(x) ** 2))


def _smooth_loss_grad(x):
    w = np.linspace(-1.0, 2.0, x.size).reshape(x.shape)
    p = softmax(x)
    return np.exp(x) * w + softmax_backward(2 * p, p)


def check_numerical_gradient(your_function):
    """Exercise 3: your_function(f, x, h) = central-difference gradient of f at x."""
    x = np.random.default_rng(63).normal(size=(3, 4)) + 0.5
    before = x.copy()
    expected = _smooth_loss_grad(x)
    got, problem = call(your_function, _smooth_loss, x, 1e-6)
    if problem:
        return verdict(False, problem)
    if not np.array_equal(x, before):
        return verdict(False, "x was left changed: restore each entry after nudging it, or the "
                              "later entries are measured at the wrong point")
    got, problem = _as_array(got, expected.shape, "the gradient")
    if problem:
        return verdict(False, problem)
    error = float(np.max(np.abs(got - expected)) / np.max(np.abs(expected)))
    if error <= 1e-8:
        return verdict(True, f"within {error:.0e} (relative) of the exact gradient for all 12 entries.")
    if not np.any(got):
        return verdict(False, "the gradient is still all zeros: set entry i to "
                              "(f(x + h e_i) - f(x - h e_i)) / (2h)")
    if _close(got, 2 * expected, tol=1e-6):
        return verdict(False, "twice the gradient: the two points x + h and x - h are 2h apart")
    if error <= 1e-4:
        return verdict(False, f"off by {error:.0e} (relative): that is the error of a one-sided "
                              "difference, of order h; the central difference "
                              "(f(x + h) - f(x - h)) / (2h) is off by order h² only")
    return verdict(False, f"off by {error:.2g} (relative) from the exact gradient")


# Exercise 4 ---------------------------------------------------------------------------

def check_fixed_backward(your_function):
    """Exercise 4: your_function(d_out, q, k, v) = (dq, dk, dv) of causal self-attention."""
    rng = np.random.default_rng(64)
    n, d = 6, 4
    q, k, v, d_out = (rng.normal(size=(n, d)) for _ in range(4))
    expected = attention_backward(d_out, q, k, v, causal=True)
    got, problem = call(your_function, d_out.copy(), q.copy(), k.copy(), v.copy())
    if problem:
        return verdict(False, problem)
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        return verdict(False, f"return (dq, dk, dv), got {type(got).__name__}")
    wrong = []
    for name, g, e in zip(("dq", "dk", "dv"), got, expected):
        g, problem = _as_array(g, e.shape, name)
        if problem:
            return verdict(False, problem)
        if not _close(g, e):
            wrong.append(name)
    if not wrong:
        return verdict(True, "dq, dk and dv all equal autograd's for causal self-attention "
                             "over 6 tokens: the bug is fixed.")
    right = [name for name in ("dq", "dk", "dv") if name not in wrong]
    said = f"{' and '.join(wrong)} {'is' if len(wrong) == 1 else 'are'} wrong"
    if right:
        said += f" ({' and '.join(right)} right)"
    if wrong == ["dk"]:
        said += ": the bug is in a line that dq does not use; in S = Q Kᵀ a key's scores form a column"
    elif wrong == ["dq"]:
        said += ": in S = Q Kᵀ a query's scores form a row of dS, and dQ = dS K"
    elif "dq" in wrong and "dk" in wrong:
        said += ": both come from dS, so the bug is at or before dS"
    return verdict(False, said)


guard_checks(globals())  # no check raises, whatever the answer (verdict.py)
