"""Self-checks for the practice exercises of chapter 12 (sparse and compressed attention).

Each check calls the reader's function on data of its own, drawn afresh at every call,
prints one verdict ("✓ Correct: ..." or "✗ Not yet: ..." saying what is wrong) and
returns True or False. References come from ``attention.linear.kda`` and
``attention.sparse.gated_output``.
"""

import numpy as np

from attention.linear.kda import kda_step
from attention.practice.trials import (Trial, as_array, difference,
                                       first_failure, fresh_rng, judge, matches,
                                       redrawable, shape_text, tried)
from attention.practice.verdict import guard_checks, verdict
from attention.sparse.gated_output import output_gate, sigmoid


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


guard_checks(globals())
