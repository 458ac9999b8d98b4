"""Checking a gradient with finite differences: slow, approximate, and
independent of the code it checks.

For a scalar function f and one entry x_i of its input,

    ∂f/∂x_i ≈ (f(x + h e_i) - f(x - h e_i)) / (2h),

with an error of order h² from the Taylor series and of order ε·|f|/h from
rounding (ε ≈ 1.1e-16 in float64). h = 1e-6 balances the two: about 1e-10
relative. A hand-written backward pass that is right agrees to about that;
one with a bug is off by a factor, a sign or a missing term, far beyond it.
Check in float64: in float32 rounding alone is of order 1e-3.
"""

# --8<-- [start:gradcheck]
import numpy as np


def numerical_gradient(f, x, *, h=1e-6, entries=None, seed=0):
    """Central differences of the number f(x) in each entry of x (float64).

    x is nudged in place one entry at a time and restored. ``entries``:
    check only this many entries, chosen at random (seeded); the others
    are NaN in the result.
    """
    if not isinstance(x, np.ndarray) or x.dtype != np.float64:
        raise TypeError(f"numerical_gradient: use a float64 array (finite "
                        f"differences need the precision), got "
                        f"{getattr(x, 'dtype', type(x).__name__)}")
    if (entries is not None and (isinstance(entries, bool) or not isinstance(
            entries, (int, np.integer)) or entries < 1)):
        raise ValueError(f"numerical_gradient: entries must be None (all) or "
                         f"a positive integer, got {entries!r}")
    grad = np.full(x.shape, np.nan)
    flat_x, flat_grad = x.reshape(-1), grad.reshape(-1)  # views
    if not np.shares_memory(flat_x, x):
        raise ValueError("numerical_gradient: x must be contiguous, so its "
                         "entries can be nudged in place")
    chosen = range(x.size)
    if entries is not None and entries < x.size:
        rng = np.random.default_rng(seed)
        chosen = rng.choice(x.size, size=entries, replace=False)
    for i in chosen:
        old = flat_x[i]
        flat_x[i] = old + h
        f_plus = float(f(x))
        flat_x[i] = old - h
        f_minus = float(f(x))
        flat_x[i] = old  # restore
        if not (np.isfinite(f_plus) and np.isfinite(f_minus)):
            raise ValueError(f"numerical_gradient: f returned {f_plus} and "
                             f"{f_minus} with entry {int(i)} of x nudged by "
                             f"+-{h}; finite differences need finite values")
        flat_grad[i] = (f_plus - f_minus) / (2 * h)
    return grad


def gradient_check(f, x, grad, *, h=1e-6, tol=1e-6, entries=None, seed=0):
    """Compare an analytic ``grad`` of f at x with central differences.

    Returns (ok, error): error is the largest difference over the checked
    entries, relative to the largest gradient entry; ok is error <= tol.
    A grad holding NaN or inf is never ok; an f that returns them raises.
    """
    grad = np.asarray(grad)
    if grad.shape != x.shape:
        raise ValueError(f"gradient_check: grad {grad.shape} must have the "
                         f"shape of x {x.shape}")
    numeric = numerical_gradient(f, x, h=h, entries=entries, seed=seed)
    checked = ~np.isnan(numeric)
    worst = np.max(np.abs(grad[checked] - numeric[checked]), initial=0.0)
    size = max(np.max(np.abs(numeric[checked]), initial=0.0),
               np.max(np.abs(grad[checked]), initial=0.0), 1e-300)
    error = float(worst / size)
    if not np.isfinite(grad[checked]).all():
        error = float("inf")  # a NaN or inf gradient is wrong, not close
    return error <= tol, error
# --8<-- [end:gradcheck]
