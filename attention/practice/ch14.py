"""Self-checks for the practice exercises of chapter 14 (what attention learns).

Each check calls the reader's function on data of its own, drawn afresh at every call,
prints one verdict ("✓ Correct: ..." or "✗ Not yet: ..." saying what is wrong) and
returns True or False. References come from ``attention.circuits.scores`` and
``attention.multi_head``.
"""

import numpy as np

from attention.circuits.scores import (copying_score, prefix_matching_score,
                                       previous_token_score, uniform_baseline)
from attention.multi_head import merge_heads
from attention.practice.trials import Trial, fresh_rng, judge, redrawable, shape_text
from attention.practice.verdict import guard_checks
from attention.softmax import softmax


def _causal_weights(rng, batch, heads, n, dtype):
    """(batch, heads, n, n) rows of causal attention weights, some of them peaked."""
    scores = rng.normal(size=(batch, heads, n, n)) * rng.uniform(0.5, 4.0)
    scores[..., np.triu(np.ones((n, n), dtype=bool), k=1)] = -np.inf
    return softmax(scores).astype(dtype)


# Exercise 1 ---------------------------------------------------------------------------

@redrawable
def _matching_trial(rng, batch, heads, half, n, dtype=np.float64):
    return Trial(f"weights ({batch}, {heads}, {n}, {n}) in {np.dtype(dtype).name}, "
                 f"half {half}", (_causal_weights(rng, batch, heads, n, dtype), half),
                 {}, np.dtype(dtype))


def check_prefix_matching(your_function):
    """Exercise 1: your_function(weights, half) = each head's mean weight from query i
    (half <= i < n) on key i - half + 1, over those queries and the batch."""
    rng = fresh_rng()
    trials = [_matching_trial(rng, 3, 2, 5, 10), _matching_trial(rng, 2, 4, 6, 11),
              _matching_trial(rng, 1, 3, 4, 7, np.float32),
              _matching_trial(rng, 4, 1, 7, 14)]

    def rows_from(weights, start, offset):
        rows = np.arange(start, weights.shape[-1])
        return weights[..., rows, rows + offset].mean(axis=-1).mean(axis=-2)

    hints = [
        (lambda w, half: rows_from(w, half, 0),
         "that is the weight each query puts on itself (the diagonal); look back to "
         "the token after the earlier occurrence, key i - half + 1"),
        (lambda w, half: rows_from(w, half, -half),
         "that is the weight on the earlier occurrence of the token itself (key "
         "i - half); an induction head looks one further, at the token after it"),
        (lambda w, half: rows_from(w, half - 1, 1 - half),
         "the repeat starts at position half; query half - 1 is the first half's "
         "last token and has no earlier occurrence"),
        (lambda w, half: rows_from(w, half, 1 - half).mean(axis=-1),
         "that averages the heads together; return one score per head"),
    ]
    return judge(your_function, trials, prefix_matching_score,
                 what="prefix_matching", hints=hints,
                 success="your scores equal each head's mean weight on the token "
                         "after the earlier occurrence.")


# Exercise 2 ---------------------------------------------------------------------------

@redrawable
def _previous_trial(rng, batch, heads, n, dtype=np.float64):
    return Trial(f"weights ({batch}, {heads}, {n}, {n}) in {np.dtype(dtype).name}",
                 (_causal_weights(rng, batch, heads, n, dtype),), {}, np.dtype(dtype))


def _previous_excess(weights):
    n = weights.shape[-1]
    return previous_token_score(weights) - uniform_baseline(np.arange(1, n))


def check_previous_excess(your_function):
    """Exercise 2: your_function(weights) = each head's previous-token score minus what a
    uniform causal head would score."""
    rng = fresh_rng()
    trials = [_previous_trial(rng, 2, 3, 6), _previous_trial(rng, 3, 2, 9),
              _previous_trial(rng, 1, 4, 5, np.float32), _previous_trial(rng, 2, 1, 12)]

    def minus(baseline):
        return lambda w: previous_token_score(w) - baseline(w.shape[-1])

    hints = [
        (minus(lambda n: 1.0 / n),
         "a uniform causal head gives query i 1 / (i + 1), not 1 / n: it sees only the "
         "i + 1 positions up to itself"),
        (minus(lambda n: uniform_baseline(np.arange(n))),
         "query 0 has no previous token; the baseline averages queries 1 to n - 1, as "
         "the score does"),
        (minus(lambda n: np.mean(1.0 / np.arange(1, n))),
         "query i sees i + 1 positions (itself included), so uniform attention gives "
         "1 / (i + 1), not 1 / i"),
        (lambda w: np.diagonal(w, axis1=-2, axis2=-1).mean(axis=-1).mean(axis=-2)
         - uniform_baseline(np.arange(w.shape[-1])),
         "that is the weight a query puts on itself (the diagonal); the previous token "
         "is one below it"),
    ]
    return judge(your_function, trials, _previous_excess, what="previous_excess",
                 hints=hints, success="your excess equals the score minus the uniform "
                                      "head's mean of 1 / (i + 1).")


# Exercise 3 ---------------------------------------------------------------------------

def _without_head(o, W_O, head):
    keep = np.ones((o.shape[-3], 1, 1), dtype=o.dtype)
    keep[head] = 0
    return merge_heads(o * keep) @ W_O


@redrawable
def _ablation_trial(rng, batch, heads, n, d_head, d_model, head, dtype=np.float64):
    o = rng.normal(size=(batch, heads, n, d_head)).astype(dtype)
    W_O = rng.normal(size=(heads * d_head, d_model)).astype(dtype)
    return Trial(f"o ({batch}, {heads}, {n}, {d_head}), W_O ({heads * d_head}, "
                 f"{d_model}), head {head}, {np.dtype(dtype).name}", (o, W_O, head), {},
                 np.dtype(dtype))


def check_without_head(your_function):
    """Exercise 3: your_function(o, W_O, head) = the layer's output with one head's
    output zeroed, the inputs left as they are."""
    rng = fresh_rng()
    trials = [_ablation_trial(rng, 2, 3, 4, 2, 5, 1), _ablation_trial(rng, 1, 4, 3, 3, 6, 0),
              _ablation_trial(rng, 2, 2, 5, 4, 3, 1, np.float32),
              _ablation_trial(rng, 3, 4, 2, 2, 4, 3)]

    def zero_columns(o, W_O, head):
        d = o.shape[-1]
        W = W_O.copy()
        W[:, head * d:(head + 1) * d] = 0
        return merge_heads(o) @ W

    def zero_position(o, W_O, head):
        o = o.copy()
        o[..., head, :] = 0
        return merge_heads(o) @ W_O

    hints = [
        (lambda o, W_O, head: merge_heads(o) @ W_O,
         "nothing was zeroed: that is the whole layer's output"),
        (zero_position, "that zeroed a position (axis -2 of o), not a head (axis 1)"),
        (zero_columns, "the head's slice of W_O is its rows head * d_head to "
                       "(head + 1) * d_head, which read its output, not columns"),
        (lambda o, W_O, head: _without_head(o, W_O, head) * o.shape[1]
         / (o.shape[1] - 1), "the other heads are not rescaled: zero one, keep the "
                             "rest as they are"),
    ]
    return judge(your_function, trials, _without_head, what="without_head", hints=hints,
                 success="your output equals the layer's with that head zeroed, "
                         "and your inputs are unchanged.")


# Exercise 4 ---------------------------------------------------------------------------

@redrawable
def _copying_trial(rng, vocab, kind):
    A = rng.normal(size=(vocab, vocab))
    if kind == "copier":
        A = A @ A.T + rng.normal(size=(vocab, vocab)) * 0.3  # mostly positive
    elif kind == "suppressor":
        A = -(A @ A.T) + rng.normal(size=(vocab, vocab)) * 0.3
    elif kind == "complex eigenvalues":  # a ± ib, mixed signs, in a random basis:
        D = np.zeros((vocab, vocab))    # |λ|, |Re λ| and |diagonal| all differ
        for j in range(0, vocab - 1, 2):
            a, b = rng.normal(), rng.uniform(2, 4)
            D[j:j + 2, j:j + 2] = [[a, -b], [b, a]]
        if vocab % 2:
            D[-1, -1] = rng.normal()
        A = A @ D @ np.linalg.inv(A)
    return Trial(f"a ({vocab}, {vocab}) OV circuit{', ' + kind if kind else ''}", (A,),
                 {}, np.dtype(np.float64))


def check_copying_score(your_function):
    """Exercise 4: your_function(ov) = Σλ / Σ|λ| over the eigenvalues of ov."""
    rng = fresh_rng()
    trials = [_copying_trial(rng, 6, "complex eigenvalues"),
              _copying_trial(rng, 6, ""), _copying_trial(rng, 9, "copier"),
              _copying_trial(rng, 7, "suppressor"), _copying_trial(rng, 12, "")]

    def score(ov):
        n = ov.shape[0]
        return copying_score(np.eye(n), ov, np.eye(n), np.eye(n))

    hints = [
        (lambda ov: np.trace(ov) / np.abs(np.diag(ov)).sum(),
         "the diagonal's sum equals the eigenvalues' sum, but Σ|diagonal| is not "
         "Σ|λ|: divide by the sum of the eigenvalues' absolute values"),
        (lambda ov: np.linalg.svd(ov, compute_uv=False).sum()
         / np.abs(np.linalg.eigvals(ov)).sum(),
         "singular values are never negative; the score needs the eigenvalues, whose "
         "signs say copy or suppress"),
        (lambda ov: np.linalg.eigvals(ov).real.sum()
         / np.abs(np.linalg.eigvals(ov).real).sum(),
         "|λ| of a complex eigenvalue is its modulus, not the absolute value of its "
         "real part"),
        (lambda ov: np.linalg.eigvals(ov).real.mean(),
         "that is the mean eigenvalue; divide the sum by Σ|λ| so the score lies in "
         "[-1, 1]"),
    ]
    return judge(your_function, trials, score, what="copying_score", hints=hints,
                 success="your score equals Σλ / Σ|λ|, copiers near 1 and "
                         "suppressors near -1.")


guard_checks(globals())
