"""Self-checks for the practice exercises of chapter 12 (sparse and compressed attention).

Each check calls the reader's function on data of its own, drawn afresh at every call,
prints one verdict ("✓ Correct: ..." or "✗ Not yet: ..." saying what is wrong) and
returns True or False. References come from ``attention.sparse`` and
``attention.families``.
"""

import math

import numpy as np

from attention.families.moe import qwen3_moe_dense_layers
from attention.norms import rms_norm
from attention.practice.trials import (Trial, defaulted, first_failure, fresh_rng,
                                       judge, redrawable, shape_text, tried)
from attention.practice.verdict import guard_checks, verdict
from attention.softmax import softmax
from attention.sparse.differential import differential_lambda, lambda_init


# Exercise 5 ---------------------------------------------------------------------------

def _pair(a1, a2, v, lambdas, layer, eps=1e-5, *, start_layer=None, exp=True,
          scale="init", eps_inside=True):
    """The pair's output, or one of its plausible mistakes (the keywords)."""
    q1, k1, q2, k2 = lambdas
    start = lambda_init(layer if start_layer is None else start_layer)
    dots = (q1 @ k1, q2 @ k2)
    lam = ((np.exp(dots[0]) - np.exp(dots[1])) if exp
           else dots[0] - dots[1]) + start
    out = (a1 - lam * a2) @ v                           # (..., n_q, 2d)
    if eps_inside:
        out = rms_norm(out, np.ones(out.shape[-1], out.dtype), eps=eps)
    else:
        out = out / (np.sqrt((out * out).mean(axis=-1, keepdims=True)) + eps)
    factor = {"init": 1 - start, "lambda": 1 - lam, "none": 1.0}[scale]
    return factor * out


def _reference_pair(a1, a2, v, lambdas, layer, eps=1e-5):
    names = [f"attn.lambda_{x}" for x in ("q1", "k1", "q2", "k2")]
    lam = differential_lambda(dict(zip(names, lambdas)), layer)
    out = (a1 - lam * a2) @ v                           # (..., n_q, 2d)
    gain = np.ones(out.shape[-1], out.dtype)
    return (1 - lambda_init(layer)) * rms_norm(out, gain, eps=eps)


@redrawable
def _pair_trial(rng, lead, n_q, n_k, d, layer, eps, dtype=np.float64,
                value_scale=1.0):
    a1, a2 = (softmax(2.0 * rng.normal(size=(*lead, n_q, n_k))).astype(dtype)
              for _ in range(2))
    v = (value_scale * rng.normal(size=(*lead, n_k, 2 * d))).astype(dtype)
    lambdas = (0.5 * rng.normal(size=(4, d))).astype(dtype)
    axes = f"leading axes {shape_text(lead)}" if lead else "no leading axes"
    small = f", values near {value_scale:g}" if value_scale != 1.0 else ""
    return Trial(f"{n_q} queries, {n_k} keys, d {d}, layer {layer}, eps {eps:g}, "
                 f"{axes}{small}, {np.dtype(dtype).name}",
                 (a1, a2, v, lambdas, layer), {"eps": eps}, np.dtype(dtype))


def check_differential_pair(your_function):
    """Exercise 5: your_function(a1, a2, v, lambdas, layer, eps=1e-5) =
    (1 - λ_init) RMSNorm((a1 - λ a2) v), λ re-parameterised."""
    rng = fresh_rng()
    trials = [defaulted(_pair_trial(rng, (), 4, 6, 3, 0, 1e-5), "eps", 1e-5),
              _pair_trial(rng, (2, 3), 5, 5, 2, 3, 1e-5),
              _pair_trial(rng, (2,), 3, 7, 4, 7, 1e-6, np.float32),
              _pair_trial(rng, (), 4, 4, 3, 1, 1e-4, value_scale=1e-3)]
    hints = [
        (lambda *a, **k: _pair(*a, **k, start_layer=a[4] + 1),
         "λ_init used layer + 1; the paper numbers layers from 1 and writes l - 1, "
         "the code counts layers from 0: λ_init = 0.8 - 0.6 exp(-0.3 layer)"),
        (lambda *a, **k: _pair(*a, **k, exp=False),
         "λ used the dot products themselves; λ = exp(λ_q1 · λ_k1) - "
         "exp(λ_q2 · λ_k2) + λ_init, exponentials of the dot products"),
        (lambda *a, **k: _pair(*a, **k, scale="none"),
         "the normalised difference was left as it is; the output is "
         "(1 - λ_init) RMSNorm(...): times 1 - λ_init"),
        (lambda *a, **k: _pair(*a, **k, scale="lambda"),
         "the output was multiplied by 1 - λ, which moves as λ is learned; it is "
         "a fixed scale, 1 - λ_init"),
        (lambda *a, **k: _pair(*a, **k, eps_inside=False),
         "eps was added to the root mean square; eps goes inside the square root: "
         "sqrt(mean(x²) + eps)"),
        (lambda a1, a2, v, lambdas, layer, eps=1e-5:
         (a1 - lambda_init(layer) * a2) @ v,
         "λ was its starting value alone and the difference was not normalised; "
         "add the learned exp(λ_q1 · λ_k1) - exp(λ_q2 · λ_k2), then RMSNorm"),
    ]
    return judge(your_function, trials, _reference_pair, what="differential_pair",
                 hints=hints, success="your pair equals (1 - λ_init) RMSNorm((a1 - λ "
                                      "a2) v) with λ re-parameterised.")


# Exercise 6 ---------------------------------------------------------------------------

def _mixtures(n_layers, step, only):
    dense = qwen3_moe_dense_layers(n_layers, step, only)
    return [i for i in range(n_layers) if i not in dense]


def _whole(value):
    return (isinstance(value, (int, np.integer))
            and not isinstance(value, (bool, np.bool_)))


_LAYOUT_MISTAKES = [
    (lambda n, s, o: ([i for i in range(n) if i not in o] if o
                      else _mixtures(n, s, [])),
     "with mlp_only_layers set, the step was ignored; Hugging Face's code applies "
     "both rules at once: the step, and then the list"),
    (lambda n, s, o: _mixtures(n, s, []),
     "mlp_only_layers was ignored: a layer it lists keeps a dense MLP even where the "
     "step gives it the experts"),
    (lambda n, s, o: [i for i in range(n) if i % s == 0 and i not in o],
     "the step was counted from layer 0; layer i has the experts when i + 1 is a "
     "multiple of the step (step 2: layers 1, 3, 5, ...)"),
    (lambda n, s, o: [i for i in range(n) if i not in _mixtures(n, s, o)],
     "those are the dense layers; return the layers with the mixture"),
    (lambda n, s, o: [i for i in range(n + 1) if (i + 1) % s == 0 and i not in o],
     "a layer past the last layer was listed; the layers are 0 .. n_layers - 1"),
]


def _compare_layers(result, expected, trial):
    if isinstance(result, np.ndarray) and result.ndim == 1:
        result = result.tolist()
    if not isinstance(result, (list, tuple)) or not all(_whole(i) for i in result):
        return (f"mixture_layers returned {type(result).__name__}; return a list of "
                "layer indices (integers)")
    got = [int(i) for i in result]
    if got == expected:
        return None
    for wrong, message in _LAYOUT_MISTAKES:
        if wrong(*trial.args) == got:
            return message
    return f"the layers with the mixture are {expected}, got {got}"


def check_mixture_layers(your_function):
    """Exercise 6: your_function(n_layers, decoder_sparse_step, mlp_only_layers) =
    the layers with the mixture, as Hugging Face's Qwen3-MoE builds them."""
    rng = fresh_rng()
    pair = sorted(int(i) for i in rng.choice(np.arange(1, 8), 2, replace=False))
    odd = int(rng.choice([1, 3, 5, 7]))      # a layer that step 2 makes sparse
    past = int(rng.integers(9, 30))          # a number that names no layer
    trials = [Trial("8 layers, decoder_sparse_step 1, 2 random layers in "
                    "mlp_only_layers", (8, 1, pair)),
              Trial("9 layers, decoder_sparse_step 2, mlp_only_layers: a random "
                    "odd layer and a number past the last layer", (9, 2, [odd, past])),
              Trial("11 layers, decoder_sparse_step 3, no mlp_only_layers",
                    (11, 3, [])),
              Trial("5 layers, decoder_sparse_step 5, no mlp_only_layers",
                    (5, 5, []))]
    problem = first_failure(your_function, trials, _mixtures, what="mixture_layers",
                            compare=_compare_layers)
    if problem:
        return verdict(False, problem)
    return verdict(True, f"on {tried(trials)} your layers are those Hugging Face's "
                         "Qwen3-MoE gives the experts.")


guard_checks(globals())
