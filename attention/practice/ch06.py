"""Self-checks for the practice exercises of chapter 6 (backpropagation through attention).

Each check calls the reader's function on data of its own, prints one verdict
("✓ Correct: ..." or "✗ Not yet: ..." saying what is wrong) and returns True or False.
It never raises because an answer is wrong. References come from ``attention.backward``.
"""

import math

import numpy as np

from attention.backward import attention_backward, softmax_backward
from attention.backward.norms import layer_norm_backward, layer_norm_stats
from attention.loss import cross_entropy_backward
from attention.optim import adam_step
from attention.masks import causal_mask
from attention.practice.measure import kib, peak_memory
from attention.practice.trials import (Trial, as_array, difference, first_failure,
                                       fresh_rng, judge, redrawable, shape_text, tried)
from attention.practice.verdict import call, guard_checks, verdict
from attention.softmax import softmax


def _as_array(got, shape, what):
    """(array, None) if got is a float array of this shape, else (None, a failure line)."""
    if isinstance(got, (list, tuple)):
        return None, f"{what} should be a NumPy array of shape {shape}, got a {type(got).__name__}"
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

@redrawable
def _vjp_trial(rng, shape, dtype=np.float64):
    p = softmax(rng.normal(size=shape) * 2.0).astype(dtype)  # rows of weights
    g = rng.normal(size=shape).astype(dtype)
    return Trial(f"g and p of shape {shape_text(shape)} in {np.dtype(dtype).name}", (g, p),
                 {}, np.dtype(dtype))


_BIG_VJP = (4, 1024)  # one row's Jacobian: 1024 x 1024 floats, 8 MiB


def check_softmax_vjp(your_function):
    """Exercise 1: your_function(g, p) = ∂ℒ/∂s for p = softmax(s) along the last axis,
    without forming the Jacobian (measured: the peak memory at rows of 1,024)."""
    rng = fresh_rng()
    trials = [_vjp_trial(rng, (3, 6)), _vjp_trial(rng, (2, 3, 5, 7)),
              _vjp_trial(rng, (4, 5, 9), np.float32), _vjp_trial(rng, (8,))]

    def reference(g, p):
        return softmax_backward(g, p)

    problem = first_failure(your_function, trials, reference, what="softmax_vjp", hints=[
        (lambda g, p: p * g, "p * g is only the diagonal of the Jacobian, diag(p); subtract "
         "each row's p (g·p) for the -p pᵀ part"),
        (lambda g, p: p * (g - g.sum(axis=-1, keepdims=True)),
         "subtract g·p, the sum of g weighted by p, not the plain sum of g"),
        (lambda g, p: g - np.sum(g * p, axis=-1, keepdims=True),
         "close: multiply (g - g·p) by p, entry by entry"),
        (lambda g, p: p * (g - np.sum(g * p, axis=0, keepdims=True)),
         "the dot product g·p runs along each row (the last axis), not down axis 0"),
        (lambda g, p: p * (g - np.sum(g * p, axis=1, keepdims=True)),
         "the dot product g·p runs along each row (the last axis), not along axis 1")])
    if problem:
        return verdict(False, problem)
    g, p = _vjp_trial(rng, _BIG_VJP).args
    got, problem, peak = peak_memory(your_function, g, p)
    rows, n = _BIG_VJP
    limit = 16 * g.nbytes + 64 * 1024
    where = f"on g and p of shape {shape_text(_BIG_VJP)}"
    if problem is None:
        got, problem = as_array(got, "softmax_vjp")
    if problem is None:
        problem = difference(got, reference(g, p))
    if problem:
        return verdict(False, f"{where}: {problem}")
    if peak > limit:
        return verdict(False, f"{where}: your function held {kib(peak)} at once; one row's "
                              f"Jacobian is {kib(n * n * 8)}, the input {kib(g.nbytes)}. "
                              "Compute p (g - g·p) without forming diag(p) - p pᵀ")
    return verdict(True, f"on {tried(trials)} your VJP equals the Jacobian product, and at "
                         f"rows of {n:,} it used at most {kib(limit)}, less than one row's "
                         f"Jacobian ({kib(n * n * 8)}).")


# Exercise 2 ---------------------------------------------------------------------------

@redrawable
def _backward_trial(rng, lead, n_q, n_k, d, d_v, dtype=np.float64):
    shapes = (lead + (n_q, d_v), lead + (n_q, d), lead + (n_k, d), lead + (n_k, d_v))
    d_out, q, k, v = (rng.normal(size=s).astype(dtype) for s in shapes)
    axes = f"with leading axes {shape_text(lead)}" if lead else "without leading axes"
    return Trial(f"{n_q} queries and {n_k} keys {axes} in "
                 f"{np.dtype(dtype).name}", (d_out, q, k, v), {}, np.dtype(dtype))


def _compare_gradients(names):
    """A compare function for first_failure: a tuple of arrays, each against its own."""
    def compare(result, expected, trial):
        if not isinstance(result, (tuple, list)) or len(result) != len(names):
            return f"return ({', '.join(names)}), got {type(result).__name__}"
        wrong = {}
        for name, got, want in zip(names, result, expected):
            got, problem = as_array(got, name)
            problem = problem or difference(got, want, trial.dtype)
            if problem:
                wrong[name] = problem
        if not wrong:
            return None
        right = [n for n in names if n not in wrong]
        first = next(iter(wrong))
        return (f"{first}: {wrong[first]} ({', '.join(wrong)} wrong"
                + (f"; {', '.join(right)} right)" if right else ")"))
    return compare


def check_attention_grads(your_function):
    """Exercise 2: your_function(d_out, q, k, v) = (dq, dk, dv) of unmasked attention,
    over any leading batch and head axes."""
    rng = fresh_rng()
    trials = [_backward_trial(rng, (), 5, 7, 8, 3),
              _backward_trial(rng, (2, 3), 4, 6, 8, 5),
              _backward_trial(rng, (2,), 3, 9, 4, 2, np.float32)]
    problem = first_failure(your_function, trials,
                            lambda d_out, q, k, v: attention_backward(d_out, q, k, v),
                            what="attention_grads",
                            compare=_compare_gradients(("dq", "dk", "dv")))
    if problem:
        return verdict(False, problem)
    return verdict(True, f"on {tried(trials)} dq, dk and dv equal the package's backward "
                         "(checked against autograd in the tests).")


# Exercise 3 ---------------------------------------------------------------------------

def _smooth_loss(x):
    """A loss with real curvature: one-sided differences are visibly off on it."""
    w = np.linspace(-1.0, 2.0, x.size).reshape(x.shape)
    return float(np.sum(np.exp(x) * w) + np.sum(softmax(x) ** 2))


def _smooth_loss_grad(x):
    w = np.linspace(-1.0, 2.0, x.size).reshape(x.shape)
    p = softmax(x)
    return np.exp(x) * w + softmax_backward(2 * p, p)


def _wavy_loss(x):
    """Another loss, Σ x sin 3x, for the step where f itself varies."""
    return float(np.sum(x * np.sin(3.0 * x)))


def _one_sided(f, x, h):
    grad, f_x = np.zeros_like(x), f(x)
    for i in range(x.size):
        nudged = x.copy()
        nudged.flat[i] += h
        grad.flat[i] = (f(nudged) - f_x) / h
    return grad


def _central(f, x, h):
    """The central difference of f at x with step h, entry by entry."""
    grad = np.zeros_like(x)
    for i in range(x.size):
        up, down = x.copy(), x.copy()
        up.flat[i] += h
        down.flat[i] -= h
        grad.flat[i] = (f(up) - f(down)) / (2 * h)
    return grad


def check_numerical_gradient(your_function):
    """Exercise 3: your_function(f, x, h) = central-difference gradient of f at x."""
    rng = fresh_rng()
    # The last: a large step, where the answer is the central difference at that h
    # (off the exact gradient by order h²), so an h of the reader's own shows.
    # It also has a loss of its own (f is an argument too, not always the same).
    for shape, h in (((3, 4), 1e-6), ((2, 3, 2), 1e-5), ((5,), 1e-6), ((3, 4), 1e-6),
                     ((4,), 0.1)):
        x = rng.normal(size=shape) + 0.5
        f = _smooth_loss if h < 1e-3 else _wavy_loss
        expected = _smooth_loss_grad(x) if h < 1e-3 else _central(f, x, h)
        label = f"on x of shape {shape_text(shape)} with h = {h:g}"
        label += ", f = Σ x sin 3x" if f is _wavy_loss else ""
        got, problem = call(your_function, f, x, h)
        if problem:
            if "changed its input x" in problem:
                problem += ("; here nudging x is fine, but restore each entry exactly "
                            "(keep the old value) after nudging it")
            return verdict(False, f"{label}: {problem}")
        got, problem = _as_array(got, expected.shape, "the gradient")
        if problem:
            return verdict(False, f"{label}: {problem}")
        error = float(np.max(np.abs(got - expected)) / np.max(np.abs(expected)))
        if error <= 1e-8:
            continue
        if not np.any(got):
            return verdict(False, f"{label}: the gradient is still all zeros: set entry i to "
                                  "(f(x + h e_i) - f(x - h e_i)) / (2h)")
        if _close(got, 2 * expected, tol=1e-6):
            return verdict(False, f"{label}: twice the gradient: the two points x + h and "
                                  "x - h are 2h apart")
        if _close(got, _one_sided(f, x, h), tol=1e-7):
            return verdict(False, f"{label}: off by {error:.0e} (relative), as a one-sided "
                                  "difference (f(x + h) - f(x)) / h is, with an error of order "
                                  "h; the central difference (f(x + h) - f(x - h)) / (2h) is "
                                  "off by order h² only")
        return verdict(False, f"{label}: off by {error:.0e} (relative) from "
                              + ("the exact gradient; a central difference with the h "
                                 "given is within 1e-8" if h < 1e-3 else
                                 "the central difference at this large h") +
                              ": use that h, and both points x + h and x - h")
    return verdict(True, "on 4 random points (shapes (3, 4) twice, (2, 3, 2) and (5,), "
                         "h = 1e-6 and 1e-5) your central differences are within 1e-8 (relative) of "
                         "the exact gradient, at h = 0.1 (on another f) they equal the "
                         "central difference at that step, and x is left as it was.")


# Exercise 4 ---------------------------------------------------------------------------

def check_fixed_backward(your_function):
    """Exercise 4: your_function(d_out, q, k, v) = (dq, dk, dv) of causal self-attention."""
    rng = fresh_rng()
    for n, d in ((6, 4), (9, 5), (6, 4)):  # the last: sizes seen, new values
        q, k, v, d_out = (rng.normal(size=(n, d)) for _ in range(4))
        expected = attention_backward(d_out, q, k, v, causal=True)
        got, problem = call(your_function, d_out, q, k, v)
        if problem:
            return verdict(False, problem)
        if not isinstance(got, (tuple, list)) or len(got) != 3:
            return verdict(False, f"return (dq, dk, dv), got {type(got).__name__}")
        wrong = []
        for name, g, e in zip(("dq", "dk", "dv"), got, expected):
            g, problem = _as_array(g, e.shape, name)
            if problem:
                return verdict(False, f"for {n} tokens: {problem}")
            if not _close(g, e):
                wrong.append(name)
        if wrong:
            break
    if not wrong:
        return verdict(True, "dq, dk and dv all equal autograd's for causal self-attention "
                             "over 6 and 9 random tokens: the bug is fixed.")
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


# Exercise 5 ---------------------------------------------------------------------------

@redrawable
def _norm_trial(rng, shape, dtype=np.float64, shift=0.0, eps=None):
    """A LayerNorm backward trial; eps None: left to its default."""
    x = (rng.normal(size=shape) * 2.0 + shift).astype(dtype)
    d_y = rng.normal(size=shape).astype(dtype)
    weight = (1.0 + 0.3 * rng.normal(size=shape[-1])).astype(dtype)
    label = f"x of shape {shape_text(shape)} in {np.dtype(dtype).name}"
    label += f" around {shift:g}" if shift else ""
    label += f", eps {eps:g}" if eps is not None else ""
    return Trial(label, (d_y, x, weight), {} if eps is None else {"eps": eps},
                 np.dtype(dtype))


def _layer_norm_grads(d_y, x, weight, eps=1e-5):
    mean, rstd = layer_norm_stats(x, eps=eps)
    return layer_norm_backward(d_y, x, weight, mean, rstd)


def check_layer_norm_backward(your_function):
    """Exercise 5: your_function(d_y, x, weight, eps=1e-5) = (dx, d_weight, d_bias)."""
    rng = fresh_rng()
    trials = [_norm_trial(rng, (4, 8)), _norm_trial(rng, (2, 3, 6)),
              _norm_trial(rng, (3, 5), np.float32), _norm_trial(rng, (5, 7), shift=50.0),
              _norm_trial(rng, (3, 6), eps=0.5)]  # an eps that shows
    problem = first_failure(your_function, trials, _layer_norm_grads,
                            what="layer_norm_backward",
                            compare=_compare_gradients(("dx", "d_weight", "d_bias")))
    if problem:
        return verdict(False, problem)
    return verdict(True, f"on {tried(trials)} dx, d_weight and d_bias equal the package's "
                         "LayerNorm backward (checked against autograd in the tests).")


# Exercise 6 ---------------------------------------------------------------------------

@redrawable
def _ce_trial(rng, shape, vocab, ignored=0, shift=0.0, dtype=np.float64):
    logits = (rng.normal(size=shape + (vocab,)) * 3.0 + shift).astype(dtype)
    targets = rng.integers(0, vocab, size=shape)
    targets.flat[:ignored] = -100
    label = f"logits {shape_text(shape + (vocab,))} in {np.dtype(dtype).name}"
    label += f" with {ignored} targets -100" if ignored else ""
    label += f" around {shift:g}" if shift else ""
    return Trial(label, (logits, targets), {}, np.dtype(dtype))


def check_cross_entropy_grad(your_function):
    """Exercise 6: your_function(logits, targets) = ∂(mean cross-entropy)/∂logits,
    targets of -100 ignored (they count neither in the sum nor in the mean)."""
    rng = fresh_rng()
    trials = [_ce_trial(rng, (6,), 5), _ce_trial(rng, (2, 4), 7, ignored=3),
              _ce_trial(rng, (5,), 9, shift=1000.0), _ce_trial(rng, (3, 3), 4, dtype=np.float32),
              _ce_trial(rng, (4,), 6, ignored=3)]  # one counted row: the mean over 1

    def reference(logits, targets):
        return cross_entropy_backward(logits, targets)

    def summed(logits, targets):
        counted = max(int(np.sum(targets != -100)), 1)
        return cross_entropy_backward(logits, targets) * counted

    def mean_over_all(logits, targets):
        counted = max(int(np.sum(targets != -100)), 1)
        return cross_entropy_backward(logits, targets) * counted / targets.size

    def sign_flipped(logits, targets):
        return -cross_entropy_backward(logits, targets)

    return judge(your_function, trials, reference, what="cross_entropy_grad",
                 success="your gradient equals (softmax - one-hot) / N with N the targets "
                         "counted.",
                 hints=[(summed, "that is the gradient of the summed loss: divide by N, the "
                                 "number of targets counted"),
                        (mean_over_all, "divide by the number of targets counted, not by all "
                                        "of them: ignored targets are not in the mean"),
                        (sign_flipped, "the sign: the gradient is softmax - one-hot")])


# Exercise 7 ---------------------------------------------------------------------------

def _adam_reference(p, g, m, v, t, lr, beta1, beta2, eps):
    params, state = {"p": p.copy()}, {"step": t - 1, "m": {"p": m.copy()}, "v": {"p": v.copy()}}
    adam_step(params, {"p": g}, state, lr=lr, betas=(beta1, beta2), eps=eps)
    return params["p"], state["m"]["p"], state["v"]["p"]


def check_adam_update(your_function):
    """Exercise 7: your_function(p, g, m, v, t, lr, beta1, beta2, eps) = (p, m, v) after
    Adam's step t (t counts from 1), without changing the arrays it is given."""
    rng = fresh_rng()
    trials = []
    # (shape, t, beta1, beta2, eps); the last: the first's sizes again, new values
    for shape, t, beta1, beta2, eps in (((4, 3), 1, 0.9, 0.95, 1e-8),
                                        ((2, 3, 5), 2, 0.9, 0.999, 1e-8),
                                        ((7,), 10, 0.8, 0.999, 1e-3),
                                        ((4, 3), 1, 0.9, 0.95, 1e-8)):
        p, g = rng.normal(size=shape), rng.normal(size=shape)
        m, v = 0.1 * rng.normal(size=shape), np.abs(0.1 * rng.normal(size=shape))
        if t == 1:
            m, v = np.zeros(shape), np.zeros(shape)
        lr = float(rng.uniform(1e-3, 1e-1))
        trials.append(Trial(f"step t = {t} of a {shape_text(shape)} parameter "
                            f"(betas {beta1} and {beta2}"
                            + (f", eps {eps:g})" if eps != 1e-8 else ")"),
                            (p, g, m, v, t, lr, beta1, beta2, eps)))
    problem = first_failure(your_function, trials, _adam_reference, what="adam_update",
                            compare=_compare_gradients(("p", "m", "v")))
    if problem:
        return verdict(False, problem)
    return verdict(True, f"on {tried(trials)} your step equals torch.optim.Adam's (as the "
                         "package's adam_step, checked against it in the tests).")


guard_checks(globals())  # no check raises, whatever the answer (verdict.py)
