"""Self-checks for the practice exercises of chapter 12 (sparse and compressed attention).

Each check calls the reader's function on data of its own, drawn afresh at every call,
prints one verdict ("✓ Correct: ..." or "✗ Not yet: ..." saying what is wrong) and
returns True or False. References come from ``attention.sparse``, ``attention.linear.kda``
and ``attention.families``.
"""

import math

import numpy as np

from attention.families.moe import qwen3_moe_dense_layers
from attention.linear.kda import kda_step
from attention.norms import rms_norm
from attention.practice.trials import (Trial, as_array, defaulted, difference,
                                       first_failure, fresh_rng, judge, matches,
                                       redrawable, shape_text, tried)
from attention.practice.verdict import guard_checks, verdict
from attention.softmax import softmax
from attention.sparse.differential import differential_lambda, lambda_init
from attention.sparse.gated_output import output_gate, sigmoid
from attention.sparse.indexer import index_scores, top_k_keys


# Exercise 1 ---------------------------------------------------------------------------

@redrawable
def _keys_trial(rng, n_q, n_k, k, *, masked=False):
    # Small integer scores: ties everywhere, at the k-th place too.
    scores = rng.integers(0, 4, size=(n_q, n_k)).astype(np.float64)
    scores[0, :2] = scores[0, -2:] = scores[0].max()  # a tie across the row
    if n_q > 1:  # the best key of row 1 is its last: best first is not key order
        scores[1, -1] = scores[1].max() + 1
    label = f"scores {shape_text(scores.shape)} of few values (many ties), k={k}"
    if masked:  # the future of each query, as a causal mask leaves it
        scores[~np.tril(np.ones((n_q, n_k), bool), n_k - n_q)] = -np.inf
        label += ", -inf above the diagonal"
    return Trial(label, (scores, k))


def _keys(scores, k):
    return top_k_keys(scores, k)[0]


def check_choose_keys(your_function):
    """Exercise 1: your_function(scores, k) = the k best keys, ties to the earlier."""
    rng = fresh_rng()
    trials = [_keys_trial(rng, 4, 9, 3), _keys_trial(rng, 3, 6, 1),
              _keys_trial(rng, 5, 5, 2, masked=True),
              _keys_trial(rng, 2, 12, 5)]
    hints = [
        (lambda s, k: np.tile(np.arange(k), (s.shape[0], 1)),
         "these are the first k keys, whatever their scores: rank each row"),
        (lambda s, k: np.argsort(s, axis=-1, kind="stable")[:, ::-1][:, :k],
         "of two equal scores the later key comes first: reversing an ascending "
         "sort reverses the ties too; sort the negated scores instead"),
        (lambda s, k: np.argsort(s, axis=-1, kind="stable")[:, :k],
         "these are the keys with the smallest scores; take the largest"),
        (lambda s, k: np.sort(_keys(s, k), axis=-1),
         "the right keys in key order; give them best first"),
    ]
    return judge(your_function, trials, _keys, what="choose_keys", hints=hints,
                 success="your keys are the k best of each row, best first, "
                         "ties to the earlier key.")


# Exercise 2 ---------------------------------------------------------------------------

@redrawable
def _scores_trial(rng, n_q, n_k, heads, d, dtype=np.float64):
    q = rng.normal(size=(n_q, heads, d)).astype(dtype)
    w = rng.normal(size=(n_q, heads)).astype(dtype)  # negative weights too
    k = rng.normal(size=(n_k, d)).astype(dtype)
    return Trial(f"q {shape_text(q.shape)}, w {shape_text(w.shape)}, k "
                 f"{shape_text(k.shape)}, {np.dtype(dtype).name}", (q, w, k),
                 dtype=np.dtype(dtype))


def _scores(q, w, k):
    return index_scores(q[None], w[None], k[None])[0]


def _scale(q):
    return q.shape[-1] ** -0.5


def check_indexer_scores(your_function):
    """Exercise 2: your_function(q, w, k) = sum_h w * ReLU(q . k / sqrt(d))."""
    rng = fresh_rng()
    trials = [_scores_trial(rng, 4, 7, 3, 8), _scores_trial(rng, 1, 5, 2, 4),
              _scores_trial(rng, 6, 6, 5, 16, np.float32),
              _scores_trial(rng, 3, 9, 1, 6)]
    hints = [
        (lambda q, w, k: q[:, 0] @ k.T,
         "these are head 0's plain dot products: every head's, scaled by "
         "1/sqrt(d), through the ReLU, weighted by w and summed"),
        (lambda q, w, k: np.maximum(np.einsum(
            "sh,sht->st", w, np.einsum("shd,td->sht", q, k) * _scale(q)), 0),
         "the ReLU goes on each head's product, before the weights: a head "
         "with a negative weight lowers the score"),
        (lambda q, w, k: _scores(q, w, k) / _scale(q),
         "divide the products by sqrt(d), the indexer head's size"),
        (lambda q, w, k: np.maximum(np.einsum("shd,td->sht", q, k)
                                    * _scale(q), 0).sum(axis=1),
         "weight each head by w before summing over the heads"),
    ]
    return judge(your_function, trials, _scores, what="indexer_scores",
                 hints=hints, success="your scores equal the lightning "
                 "indexer's, negative weights and float32 included.")


def _axes(lead, one="one head"):
    return f"leading axes {shape_text(lead)}" if lead else one


# Exercise 3 ---------------------------------------------------------------------------

@redrawable
def _kda_trial(rng, lead, d_k, d_v, dtype=np.float64):
    """A state, a unit key, a value, decays from e^-3 to 1 that differ per channel (one
    channel at exactly 1), a write strength beta in (0.1, 1)."""
    S = rng.normal(size=(*lead, d_k, d_v)).astype(dtype)
    k = rng.normal(size=(*lead, d_k))
    k /= np.linalg.norm(k, axis=-1, keepdims=True)
    v = rng.normal(size=(*lead, d_v)).astype(dtype)
    g = -rng.uniform(0.0, 3.0, size=(*lead, d_k))
    g[..., 0] = 0.0  # a channel that keeps all it has
    beta = rng.uniform(0.1, 1.0, size=lead).astype(dtype)
    return Trial(f"S ({d_k}, {d_v}) with {_axes(lead)}, {np.dtype(dtype).name}",
                 (S, k.astype(dtype), v, g.astype(dtype), beta), {}, np.dtype(dtype))


def _write(S, k, v, beta):
    error = v - (k[..., None, :] @ S)[..., 0, :]
    return S + np.asarray(beta)[..., None, None] * (k[..., :, None] * error[..., None, :])


def _reference_step(S, k, v, g, beta):
    """KDA's new state (``kda_step`` also returns the output of a query)."""
    return kda_step(S, k, k, v, g, beta)[1]


def check_channel_decay_step(your_function):
    """Exercise 3: your_function(S, k, v, g, beta) = KDA's new state: row c of S
    faded by e^{g[c]}, then the delta rule's write."""
    rng = fresh_rng()
    trials = [_kda_trial(rng, (2, 3), 5, 5), _kda_trial(rng, (), 4, 3),
              _kda_trial(rng, (4,), 3, 6, np.float32)]
    rows = lambda g: np.exp(g)[..., :, None]  # noqa: E731
    hints = [
        (lambda S, k, v, g, beta: _write(np.exp(g.mean(axis=-1))[..., None, None] * S,
                                         k, v, beta),
         "that fades the whole state by one number (Gated DeltaNet's decay); KDA fades "
         "row c of S, what key channel c stored, by its own e^{g[c]}"),
        (lambda S, k, v, g, beta: _write(np.exp(g)[..., None, :] * S, k, v, beta),
         "the decay faded the value channels (the columns of S); it belongs to the key "
         "channels, the rows: multiply row c by e^{g[c]}"),
        (lambda S, k, v, g, beta: rows(g) * _write(S, k, v, beta),
         "the decay was applied after the write; decay first, then write"),
        (lambda S, k, v, g, beta: rows(g) * S + _write(S, k, v, beta) - S,
         "the error was measured against S before its decay; recall from the decayed "
         "state: v - k (diag(e^g) S)"),
        (lambda S, k, v, g, beta: _write(rows(g) * S, k, v, 1.0),
         "beta was ignored (a write strength of 1); multiply the write by beta"),
    ]
    return judge(your_function, trials, _reference_step,
                 what="channel_decay_step", hints=hints,
                 success="your step equals diag(e^g) S + beta kᵀ (v - k diag(e^g) S).")


# Exercise 4 ---------------------------------------------------------------------------

@redrawable
def _gate_trial(rng, lead, n_heads, d_head, d_model, dtype=np.float64, *, huge=False):
    """Heads' outputs, inputs, a gate and an output projection; ``huge``: gate logits
    spread over ±1000 (so that e^z overflows), every feature's gate its own."""
    width = n_heads * d_head
    heads = rng.normal(size=(*lead, width)).astype(dtype)
    x = rng.normal(size=(*lead, d_model)).astype(dtype)
    W_gate = rng.normal(size=(d_model, width)) * (300.0 if huge else 1.0)
    W_o = rng.normal(size=(width, d_model)) / np.sqrt(width)
    label = (f"{n_heads} heads of {d_head}, d_model {d_model}, "
             f"{_axes(lead, 'one token')}, {np.dtype(dtype).name}")
    label += ", gate logits spread over ±1000" if huge else ""
    return Trial(label, (heads, x, W_gate.astype(dtype), W_o.astype(dtype)), {},
                 np.dtype(dtype))


def _gated(heads, x, W_gate, W_o):
    return output_gate(heads, x, W_gate) @ W_o


def check_gated_output(your_function):
    """Exercise 4: your_function(heads, x, W_gate, W_o) = (heads * sigmoid(x W_gate))
    W_o, finite for any logits."""
    rng = fresh_rng()
    trials = [_gate_trial(rng, (), 2, 3, 5), _gate_trial(rng, (2, 7), 3, 4, 6),
              _gate_trial(rng, (4,), 2, 5, 3, np.float32),
              _gate_trial(rng, (3, 5), 2, 3, 4, huge=True)]
    hints = [
        (lambda h, x, Wg, Wo: h @ Wo, "no gate: that is plain attention's output"),
        (lambda h, x, Wg, Wo: (h * (x @ Wg) * sigmoid(x @ Wg)) @ Wo,
         "that gate is silu(x W_gate), which is not in (0, 1); the gate is "
         "sigmoid(x W_gate)"),
        (lambda h, x, Wg, Wo: (h * sigmoid(h)) @ Wo,
         "the gate was computed from the heads' outputs; it comes from the token's "
         "input: sigmoid(x W_gate)"),
        (lambda h, x, Wg, Wo: (h * sigmoid((x @ Wg).mean(axis=-1, keepdims=True)))
         @ Wo,
         "one gate per token for all features; every feature of every head has its own "
         "gate, x W_gate has n_heads * d_head columns"),
    ]

    def compare(result, expected, trial):
        got, problem = as_array(result, "gated_output")
        if problem is not None:
            return problem
        problem = difference(got, expected, trial.dtype, kind=False)
        if problem is None:
            return None
        if got.shape == expected.shape and not np.all(np.isfinite(got)):
            return ("some outputs are nan or inf where the answer is finite: an "
                    "exponential overflowed (the gate logits reach ±1000 here); "
                    "compute the sigmoid so that no e^z of a large z is taken")
        for wrong, message in hints:
            with np.errstate(all="ignore"):
                known = wrong(*trial.args)
            if matches(got, known, trial.dtype):
                return message
        return problem

    problem = first_failure(your_function, trials, _gated, what="gated_output",
                            compare=compare)
    if problem is not None:
        return verdict(False, problem)
    return verdict(True, f"on {tried(trials)} your output equals (heads * "
                         "sigmoid(x W_gate)) W_o, finite for gate logits up to "
                         "±1000.")


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


guard_checks(globals())  # no check raises, whatever the answer (verdict.py)
