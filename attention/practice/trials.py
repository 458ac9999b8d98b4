"""Judging a reader's function by behaviour: random inputs drawn at every call, compared
with the package's implementation (itself checked against PyTorch in the tests).

A check lists its trials (shapes with batch and head axes, odd sizes, float32 and
float64, extreme values); the values are drawn fresh each time the check runs, so an
answer that hard-codes an example cannot pass. ``first_failure`` runs them all and says,
for the first one that fails, what was tried and what differed.

What it judges besides the values (the whole contract, not only the numbers):

* the kind of the result: a NumPy array where one is promised (not a list), float32 out
  for float32 in wherever the package gives float32, a boolean mask where a mask is
  asked for (``kind_problem``);
* answers that remember: a trial made by a builder wrapped in ``redrawable`` is drawn
  again, same shapes and new values, after the others pass, so an answer that caches
  its results by shape gives the old result and is caught;
* uninitialised memory: the reference is computed after the reader's call, from copies
  of the inputs, and every reference result is kept until the verdict, so ``np.empty``
  in the reader's function can never be handed a freed buffer holding the answer.
"""

from __future__ import annotations

import copy
import functools
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
    remake: object = None  # draws the same trial again with new values (redrawable)
    expected: object = None  # the answer, where the check knows it from how it drew


def redrawable(builder):
    """Wrap a trial builder ``builder(rng, ...)`` so that each Trial it makes can be
    drawn again, same shapes and arguments, new values: ``first_failure`` calls the
    answer once more on such a redraw, which catches an answer that caches by shape."""
    @functools.wraps(builder)
    def build(rng, *args, **kwargs):
        trial = builder(rng, *args, **kwargs)
        if isinstance(trial, Trial):  # a builder that returns more is left as it is
            trial.remake = lambda: builder(fresh_rng(), *args, **kwargs)
        return trial
    return build


def defaulted(trial, name, value):
    """The trial with its argument ``name`` (which is ``value``, the exercise's stated
    default) left out of the call: the reader's default is then part of what is judged."""
    if trial.kwargs.get(name) == value:
        trial.kwargs = {k: v for k, v in trial.kwargs.items() if k != name}
    elif trial.args and trial.args[-1] == value:
        trial.args = trial.args[:-1]
    else:
        return trial
    said = f", {name} {value:g}"  # the label named the value: it now says the default
    trial.label = trial.label.replace(said, "") + f", {name} left to its default {value:g}"
    return trial


def normal(rng, shape, dtype=np.float64, scale=1.0, shift=0.0):
    """Random normal numbers of a shape and dtype (scale and shift for extreme values)."""
    return (rng.normal(size=shape) * scale + shift).astype(dtype)


def shape_text(shape) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def kind_problem(result, expected, what: str, *, list_ok=False) -> str | None:
    """What is wrong with the kind of the reader's result, beside its values: a list or
    tuple where an array is promised (unless ``list_ok``), a dtype other than the
    reference's (float32 in, float32 out, as the package does; a boolean mask; integer
    indices); None when the kind is right. A scalar may be a Python or NumPy number.
    Tuples and dicts of results are judged entry by entry."""
    if isinstance(expected, (tuple, list)) and isinstance(result, (tuple, list)):
        for i, (r, e) in enumerate(zip(result, expected)):
            if (why := kind_problem(r, e, f"{what}[{i}]", list_ok=list_ok)) is not None:
                return why
        return None
    if isinstance(expected, dict) and isinstance(result, dict):
        for key in expected.keys() & result.keys():
            why = kind_problem(result[key], expected[key], f"{what}[{key!r}]",
                               list_ok=list_ok)
            if why is not None:
                return why
        return None
    if not isinstance(expected, np.ndarray):
        return None
    if expected.ndim and not isinstance(result, np.ndarray) and not list_ok:
        return (f"{what} returned a {type(result).__name__}, not a NumPy array; "
                "return an array (np.asarray of it, or compute with NumPy)")
    got = np.asarray(result)
    want = expected.dtype
    if want == np.bool_ and got.dtype != np.bool_:
        return (f"{what} returned {got.dtype} values; a mask is boolean (True/False), "
                "as comparisons give")
    if want.kind in "iu" and got.dtype.kind not in "iu":
        return f"{what} returned {got.dtype} values; the answer is integers"
    if want.kind == "f" and got.dtype.kind == "f" and got.dtype != want:
        return (f"{what} returned {got.dtype} for {want} inputs; keep the inputs' dtype "
                f"(the package returns {want}: look for a float64 constant or "
                "np.sqrt of a Python number promoting it)")
    return None


def as_array(result, what: str, *, list_ok=False):
    """The reader's result as an array of real numbers, or (None, why not): a list or a
    tuple is not an array (unless ``list_ok``, where the exercise allows one)."""
    if result is None:
        return None, f"{what} returned None; return a NumPy array"
    if isinstance(result, (list, tuple)) and not list_ok:
        return None, (f"{what} returned a {type(result).__name__}, not a NumPy array; "
                      "return an array (np.asarray of it, or compute with NumPy)")
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


def difference(got, expected, dtype=np.dtype(np.float64), *, kind=True) -> str | None:
    """What differs between two arrays: the shape, the first wrong entry and the
    largest difference, or (with ``kind``, where ``expected`` is an array) the dtype;
    None when they agree within the tolerance of ``dtype``."""
    if kind and isinstance(expected, np.ndarray) and isinstance(got, np.ndarray) and (
            why := kind_problem(got, expected, "your function")) is not None:
        return why
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
    return other.shape == got.shape and difference(got, other, dtype, kind=False) is None


def with_redraw(trials) -> list:
    """The trials, then the first redrawable one drawn again (same shapes, new values):
    what a check loops over, so that an answer that caches by shape is caught."""
    trials = list(trials)
    again = next((t for t in trials if t.remake is not None), None)
    if again is not None:
        redrawn = again.remake()
        redrawn.label += ", drawn again with new values after the others"
        trials.append(redrawn)
    return trials


def first_failure(fn, trials, reference, *, what, hints=(), may_change=(),
                  compare=None, list_ok=False, forbidden=()) -> str | None:
    """Run the reader's ``fn`` on every trial; None if each result equals
    ``reference(*args, **kwargs)`` (or ``trial.expected`` when ``reference`` is None),
    else one line naming the trial and what differed.

    ``hints`` are (wrong_function, message) pairs: when the reader's result equals
    ``wrong_function`` of the same input, the message says which mistake that is.
    ``compare(got, expected, trial)`` replaces the plain comparison where a result is
    not one array (it returns a reason or None). The plain comparison also judges the
    result's kind (``kind_problem``; ``list_ok`` where the exercise allows a list).
    ``forbidden``: what the answer may not call (``verdict.call``). After every trial
    passes, the first redrawable one is drawn again and tried once more.
    """
    kept = []  # every reference result lives until the verdict (no freed buffers)
    for trial in with_redraw(trials):
        inputs = copy.deepcopy((trial.args, trial.kwargs))  # what the reference sees
        result, problem = call(fn, *trial.args, may_change=may_change,
                               forbidden=forbidden, **trial.kwargs)
        expected = (trial.expected if reference is None  # after the call: see above
                    else reference(*inputs[0], **inputs[1]))
        kept.append(expected)
        if problem is None:
            if compare is not None:
                problem = compare(result, expected, trial) or kind_problem(
                    result, expected, what, list_ok=list_ok)
            else:
                got, problem = as_array(result, what)
                if problem is None:
                    problem = difference(got, expected, trial.dtype, kind=False)
                    for wrong, message in hints if problem else ():
                        try:
                            known = wrong(*inputs[0], **inputs[1])
                        except Exception:
                            continue
                        if matches(got, known, trial.dtype):
                            problem = message
                            break
                if problem is None:
                    problem = kind_problem(result, expected, what, list_ok=list_ok)
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
    "spread over thousands": (3000.0, 0.0),
    "rows at -1500, 0 and +1500": (1.0, np.array([[-1500.0], [0.0], [1500.0]])),
    "near +1e6": (1e4, 1e6),
}
# Values near the largest finite float of the trial's dtype: a fraction of it, so that
# a difference of two stays finite while a sum of a row (or its mean) overflows.
NEAR_LIMITS = "near the float limits"


@redrawable
def array_trial(rng, shape, dtype=np.float64, kind="", *, axis=None, neg_inf=0):
    """A trial of one random array (``axis`` passed as a keyword when given);
    ``neg_inf`` entries of each row along the last axis set to -inf. ``kind`` is a key
    of KINDS or NEAR_LIMITS."""
    if kind == NEAR_LIMITS:
        big = float(np.finfo(dtype).max) / 4
        x = (rng.uniform(-1.0, 1.0, size=shape) * big).astype(dtype)
    else:
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
