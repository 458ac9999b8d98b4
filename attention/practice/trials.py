"""Judging a reader's function by behaviour: random inputs drawn at every call, compared
with the package's implementation (itself checked against PyTorch in the tests).

A check lists its trials (shapes with batch and head axes, odd sizes, float32 and
float64, extreme values); the values are drawn fresh each time the check runs, so an
answer that hard-codes an example cannot pass. ``first_failure`` runs them all and says,
for the first one that fails, what was tried and what differed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attention.practice.verdict import call, num, verdict

# (relative, absolute) tolerance of a comparison, by the dtype the trial computes in.
TOLERANCE = {np.dtype(np.float64): (1e-9, 1e-10), np.dtype(np.float32): (2e-4, 2e-5)}


def fresh_rng() -> np.random.Generator:
    """A generator seeded from the operating system: new values at every check."""
    return np.random.default_rng()


@dataclass
class Trial:
    """One call of the reader's function: what it is called (for the verdict) and with what."""

    label: str  # "a (2, 3, 5, 7) float32 input": says what was tried
    args: tuple
    kwargs: dict = field(default_factory=dict)
    dtype: np.dtype = np.dtype(np.float64)  # sets the tolerance


def normal(rng, shape, dtype=np.float64, scale=1.0, shift=0.0):
    """Random normal numbers of a shape and dtype (scale and shift for extreme values)."""
    return (rng.normal(size=shape) * scale + shift).astype(dtype)


def shape_text(shape) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def as_array(result, what: str):
    """The reader's result as an array of real numbers, or (None, why not)."""
    if result is None:
        return None, f"{what} returned None; return a NumPy array"
    try:
        got = np.asarray(result)
    except Exception as error:  # a ragged list, an object that refuses
        return None, f"{what} returned something that is not an array ({type(error).__name__})"
    if got.dtype == object or not (np.issubdtype(got.dtype, np.number)
                                   or got.dtype == np.bool_):
        return None, (f"{what} returned {type(result).__name__} of {got.dtype}, "
                      "not an array of numbers")
    if np.iscomplexobj(got):
        return None, f"{what} returned complex numbers; the answer is real"
    return got, None


def difference(got, expected, dtype=np.dtype(np.float64)) -> str | None:
    """What differs between two arrays: the shape, or the first wrong entry and the
    largest difference; None when they agree within the tolerance of ``dtype``."""
    expected = np.asarray(expected)
    if got.shape != expected.shape:
        return f"the result should have shape {shape_text(expected.shape)}, got {shape_text(got.shape)}"
    rtol, atol = TOLERANCE.get(np.dtype(dtype), TOLERANCE[np.dtype(np.float64)])
    g, e = got.astype(np.float64), expected.astype(np.float64)
    close = np.isclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
    if np.all(close):
        return None
    where = tuple(int(i) for i in np.argwhere(~close)[0]) if got.ndim else ()
    finite = np.isfinite(g) & np.isfinite(e)
    largest = float(np.max(np.abs(g - e)[finite])) if finite.any() else float("nan")
    entry = f"entry {list(where)}" if where else "it"
    return (f"{entry} is {num(g[where])}, expected {num(e[where])} "
            f"(largest difference {num(largest)}, tolerance {rtol:g} relative)")


def matches(got, other, dtype=np.dtype(np.float64)) -> bool:
    """Whether ``got`` equals another (wrong) result, to name the mistake."""
    try:
        other = np.asarray(other, dtype=np.float64)
    except Exception:
        return False
    return other.shape == got.shape and difference(got, other, dtype) is None


def first_failure(fn, trials, reference, *, what, hints=(), may_change=(),
                  compare=None) -> str | None:
    """Run the reader's ``fn`` on every trial; None if each result equals
    ``reference(*args, **kwargs)``, else one line naming the trial and what differed.

    ``hints`` are (wrong_function, message) pairs: when the reader's result equals
    ``wrong_function`` of the same input, the message says which mistake that is.
    ``compare(got, expected, trial)`` replaces the plain comparison where a result is
    not one array (it returns a reason or None).
    """
    for trial in trials:
        expected = reference(*trial.args, **trial.kwargs)
        result, problem = call(fn, *trial.args, may_change=may_change, **trial.kwargs)
        if problem is None:
            if compare is not None:
                problem = compare(result, expected, trial)
            else:
                got, problem = as_array(result, what)
                if problem is None:
                    problem = difference(got, expected, trial.dtype)
                    for wrong, message in hints if problem else ():
                        try:
                            known = wrong(*trial.args, **trial.kwargs)
                        except Exception:
                            continue
                        if matches(got, known, trial.dtype):
                            problem = message
                            break
        if problem is not None:
            return f"on {trial.label}: {problem}"
    return None


def tried(trials) -> str:
    """What a passing answer was tried on, for the ✓ verdict: the labels, joined."""
    labels = [t.label for t in trials]
    return f"{len(labels)} random inputs ({'; '.join(labels)})"


def judge(fn, trials, reference, *, what, success, **options) -> bool:
    """The verdict of a check that compares with a reference on its trials: ✗ with the
    first failure, or ✓ saying what was tried and ``success``."""
    problem = first_failure(fn, trials, reference, what=what, **options)
    if problem is not None:
        return verdict(False, problem)
    return verdict(True, f"on {tried(trials)} {success}")


KINDS = {  # how the values of a trial are drawn: (scale, shift)
    "": (1.0, 0.0), "near +1000": (3.0, 1000.0), "near -1000": (3.0, -1000.0),
    "spread over ±1000": (600.0, 0.0),
    "rows at -1500, 0 and +1500": (1.0, np.array([[-1500.0], [0.0], [1500.0]])),
}


def array_trial(rng, shape, dtype=np.float64, kind="", *, axis=None, neg_inf=0):
    """A trial of one random array (``axis`` passed as a keyword when given);
    ``neg_inf`` entries of each row along the last axis set to -inf."""
    scale, shift = KINDS[kind]
    x = normal(rng, shape, dtype, scale, shift)
    if neg_inf:
        x[..., :neg_inf] = -np.inf
    label = f"a {shape_text(shape)} {np.dtype(dtype).name} input"
    label += f" {kind}" if kind else ""
    label += f" with {neg_inf} entries of -inf per row" if 0 < neg_inf < shape[-1] else (
        " whose rows are all -inf" if neg_inf else "")
    kwargs = {} if axis is None else {"axis": axis}
    label += f", axis={axis}" if axis is not None else ""
    return Trial(label, (x,), kwargs, np.dtype(dtype))
