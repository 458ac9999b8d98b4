"""Self-checks for the practice exercises of chapter 10 (linear attention, the delta rule).

Each check calls the reader's function on data of its own, drawn afresh at every call,
prints one verdict ("✓ Correct: ..." or "✗ Not yet: ..." saying what is wrong) and
returns True or False. References come from ``attention.linear``.
"""

import numpy as np

from attention.linear import chunked, decayed
from attention.linear.chunked import chunk_decays
from attention.linear.decayed import decayed_chunked, decayed_recurrent
from attention.linear.delta_rule import delta_rule_step
from attention.linear.feature_maps import elu_plus_one, l2_normalize
from attention.linear.linear_attention import (linear_attention_parallel,
                                               linear_attention_recurrent)
from attention.practice.measure import kib, peak_memory
from attention.practice.trials import (Trial, as_array, difference, first_failure,
                                       fresh_rng, matches, redrawable,
                                       shape_text, tried)
from attention.practice.verdict import guard_checks, verdict


def _features(rng, lead, n, d_k, d_v, dtype=np.float64):
    q, k = (elu_plus_one(rng.normal(size=(*lead, n, d_k))).astype(dtype)
            for _ in range(2))
    v = rng.normal(size=(*lead, n, d_v)).astype(dtype)
    return q, k, v


def _plain(q, k, v):
    return linear_attention_parallel(q, k, v, normalize=False)


def _decay_compare(what, not_finite, hints):
    """The comparison of exercises 4 and 5 (decays whose running sums reach -1500): a
    wrong value is named by its hint, and a nan or inf by the overflow behind it."""
    def compare(result, expected, trial):
        got, problem = as_array(result, what)
        if problem is not None:
            return problem
        problem = difference(got, expected, trial.dtype, kind=False)
        if problem is None:
            return None
        if got.shape == expected.shape and not np.all(np.isfinite(got)):
            return (f"{not_finite}: an exponential overflowed (the running sums of g "
                    "reach -1500 here); exponentiate only differences of them that "
                    "are <= 0")
        for wrong, message in hints:
            if matches(got, wrong(*trial.args), trial.dtype):
                return message
        return problem
    return compare


# Exercise 1 ---------------------------------------------------------------------------

@redrawable
def _linear_trial(rng, lead, n, d_k, d_v, dtype=np.float64):
    axes = f"leading axes {shape_text(lead)}" if lead else "no leading axes"
    return Trial(f"{n} tokens, d_k {d_k}, d_v {d_v}, {axes}, {np.dtype(dtype).name}",
                 _features(rng, lead, n, d_k, d_v, dtype), {}, np.dtype(dtype))


def check_causal_linear_attention(your_function):
    """Exercise 1: your_function(q, k, v) = causal linear attention without the
    normaliser, computed from a d_k x d_v state (never the n x n matrix)."""
    rng = fresh_rng()
    trials = [_linear_trial(rng, (), 7, 3, 4), _linear_trial(rng, (2, 3), 9, 4, 2),
              _linear_trial(rng, (2,), 6, 5, 3, np.float32)]
    hints = [
        (lambda q, k, v: q @ (np.swapaxes(k, -1, -2) @ v),
         "every query read the state of all n tokens; query t may read tokens up to "
         "t only: read the state right after adding token t"),
        (lambda q, k, v: _plain(q, k, v) - np.einsum(
            "...td,...td,...te->...te", q, k, v),
         "query t did not see its own token: add k_tᵀ v_t to the state before "
         "reading it"),
        (lambda q, k, v: linear_attention_parallel(q, k, v),
         "that divides by the normaliser; no normaliser here"),
    ]
    problem = first_failure(your_function, trials, _plain, what="causal_linear_attention",
                            hints=hints)
    if problem:
        return verdict(False, problem)
    # The recurrence keeps a d_k x d_v state: memory far below one n x n matrix.
    n = 512
    q, k, v = _features(rng, (2,), n, 4, 4)
    got, problem, peak = peak_memory(your_function, q, k, v)
    square = 2 * n * n * 8
    if problem is None:
        got, problem = as_array(got, "causal_linear_attention")
        problem = problem or difference(got, _plain(q, k, v))
    if problem is None and peak > square / 4:
        problem = (f"right values, but the call took {kib(peak)} for 2 heads of {n} "
                   f"tokens, at least a quarter of what the n x n matrices take "
                   f"({kib(square)}); keep a "
                   "d_k x d_v state and go through the tokens one at a time")
    if problem:
        return verdict(False, f"on {n} tokens: {problem}")
    return verdict(True, f"on {tried(trials)} and on {n} tokens, in far less memory "
                         "than the n x n matrix, your recurrence equals the masked "
                         "product (Q Kᵀ ∘ M) V.")


# Exercise 2 ---------------------------------------------------------------------------

@redrawable
def delta_decode_reference(S, q, k, v, beta, g, *, normalise=True, scale=True,
                           read_new=True):
    """Qwen3-Next's decode step (the package's ``gated_delta_rule`` with one token,
    qk_l2norm=True); the keywords leave a part out, to name a mistake."""
    if normalise:
        q, k = l2_normalize(q), l2_normalize(k)
    q = q * (1 / np.sqrt(q.shape[-1])) if scale else q
    new = delta_rule_step(S, k, v, beta, g)
    out = (q[..., None, :] @ (new if read_new else S))[..., 0, :]
    return out.astype(S.dtype), new


@redrawable
def _step_trial(rng, lead, d_k, d_v, dtype=np.float64, *, numbers=False):
    """A state, an unnormalised query and key (lengths from 0.3 to 3), gates per
    head, or ``numbers``: beta and g as Python floats."""
    S = rng.normal(size=(*lead, d_k, d_v)).astype(dtype)
    q, k = (rng.normal(size=(*lead, d_k)) * rng.uniform(0.3, 3, size=(*lead, 1))
            for _ in range(2))
    v = rng.normal(size=(*lead, d_v)).astype(dtype)
    if numbers:
        beta, g = float(rng.uniform(0.1, 1)), -float(rng.uniform(0.1, 2))
    else:
        beta = rng.uniform(0.1, 1, size=lead).astype(dtype)
        g = -rng.uniform(0.1, 2, size=lead).astype(dtype)
    axes = f"leading axes {shape_text(lead)}" if lead else "one head"
    label = f"S ({d_k}, {d_v}) with {axes}, {np.dtype(dtype).name}"
    label += ", beta and g plain numbers" if numbers else ""
    return Trial(label, (S, q.astype(dtype), k.astype(dtype), v, beta, g), {},
                 np.dtype(dtype))


def check_delta_decode(your_function):
    """Exercise 2: your_function(S, q, k, v, beta, g) = (out, new state) of one
    Gated DeltaNet decode step, q and k normalised inside."""
    rng = fresh_rng()
    trials = [_step_trial(rng, (), 4, 3), _step_trial(rng, (2, 3), 5, 2),
              _step_trial(rng, (3,), 4, 4, numbers=True),
              _step_trial(rng, (4,), 3, 6, np.float32),
              _step_trial(rng, (int(rng.integers(1, 4)),), int(rng.integers(1, 7)),
                          int(rng.integers(1, 7)))]
    a = lambda g: np.exp(g)[..., None, None]  # noqa: E731
    recall = lambda S, k: (k[..., None, :] @ S)[..., 0, :]  # noqa: E731
    beta_ = lambda beta: np.asarray(beta)[..., None, None]  # noqa: E731

    def with_state(rule):  # a wrong state rule inside the right normalise and read
        def answer(S, q, k, v, beta, g):
            q, k = l2_normalize(q), l2_normalize(k)
            new = rule(S, k, v, beta, g)
            return (q[..., None, :] @ new)[..., 0, :] / np.sqrt(q.shape[-1]), new
        return answer

    states = [
        (lambda S, k, v, beta, g: a(g) * S + beta_(beta) * _outer(k, v),
         "that adds beta kᵀ v as linear attention does; the delta rule writes the "
         "error v - k (a S), what the decayed state gets wrong"),
        (lambda S, k, v, beta, g: a(g) * S + beta_(beta) * _outer(k, v - recall(S, k)),
         "the error was measured against S before its decay; recall from the "
         "decayed state: v - k (a S)"),
        (lambda S, k, v, beta, g: a(g) * (S + beta_(beta) * _outer(k, v - recall(S, k))),
         "the decay was applied after the write; decay first, then write"),
        (lambda S, k, v, beta, g: delta_rule_step(S, k, v, 1.0, g),
         "beta was ignored (a write strength of 1); multiply the write by beta")]
    hints = [(with_state(rule), message) for rule, message in states] + [
        (lambda *args: delta_decode_reference(*args, read_new=False),
         "the query read the state before this token's update; read the new state"),
        (lambda *args: delta_decode_reference(*args, normalise=False),
         "q and k are scaled to unit length first: x / sqrt(sum(x²) + 1e-6)"),
        (lambda *args: delta_decode_reference(*args, scale=False),
         "the normalised query is scaled by 1 / sqrt(d_k) too")]

    def compare(result, expected, trial):
        if not (isinstance(result, tuple) and len(result) == 2):
            return f"return a pair (out, state), got {type(result).__name__}"
        for i, name in enumerate(("out", "the new state")):
            got, problem = as_array(result[i], name)
            problem = problem or difference(got, expected[i], trial.dtype)
            if problem is None:
                continue
            for wrong, message in hints:
                known = wrong(*trial.args)
                if matches(got, known[i], trial.dtype) and (
                        i == 1 or matches(np.asarray(result[1]), known[1], trial.dtype)):
                    return message
            return f"{name}: {problem}"
        return None

    problem = first_failure(your_function, trials, delta_decode_reference,
                            what="delta_decode", compare=compare)
    if problem is not None:
        return verdict(False, problem)
    return verdict(True, f"on {len(trials)} random steps (one head, one and two leading "
                         "axes, gates as arrays and as numbers, float32) your output "
                         "and state equal the package's gated_delta_rule with "
                         "qk_l2norm on one token.")


def _outer(k, e):
    return k[..., :, None] * e[..., None, :]


# Exercise 3 ---------------------------------------------------------------------------

@redrawable
def _merge_trial(rng, lead, n_a, n_b, d_k, d_v, dtype=np.float64, *, strong=False):
    """Two chunks of decayed linear attention, B computed alone; the answer is one
    pass over both. ``strong``: decays e^-8 to e^-3 a token (chunk B fades A's state
    to nothing), else from 0.5 to 1."""
    q, k, v = _features(rng, lead, n_a + n_b, d_k, d_v, dtype)
    g = (-rng.uniform(3.0, 8.0, (*lead, n_a + n_b)) if strong else
         -rng.uniform(0, 0.7, (*lead, n_a + n_b))).astype(dtype)
    _, S_a = decayed_recurrent(q[..., :n_a, :], k[..., :n_a, :], v[..., :n_a, :],
                               g[..., :n_a])
    out_b, S_b = decayed_recurrent(q[..., n_a:, :], k[..., n_a:, :], v[..., n_a:, :],
                                   g[..., n_a:])
    whole, S = decayed_recurrent(q, k, v, g)
    axes = f"leading axes {shape_text(lead)}" if lead else "no leading axes"
    return Trial(f"chunks of {n_a} and {n_b} tokens, d_k {d_k}, d_v {d_v}, {axes}, "
                 f"{np.dtype(dtype).name}{', strong decays' if strong else ''}",
                 (q[..., n_a:, :], g[..., n_a:], out_b, S_a, S_b), {}, np.dtype(dtype),
                 expected=(whole[..., n_a:, :].astype(dtype), S.astype(dtype)))


def check_merge_chunks(your_function):
    """Exercise 3: your_function(q_b, g_b, out_b, state_a, state_b) = (chunk B's
    outputs and the state after both chunks) of decayed linear attention, as if the
    two had been one sequence."""
    rng = fresh_rng()
    trials = [_merge_trial(rng, (), 5, 4, 3, 4), _merge_trial(rng, (2, 3), 3, 6, 4, 2),
              _merge_trial(rng, (2,), 4, 1, 3, 3),
              _merge_trial(rng, (2,), 4, 4, 5, 3, np.float32),
              _merge_trial(rng, (2,), 6, 40, 3, 2, strong=True),
              _merge_trial(rng, (int(rng.integers(1, 4)),), int(rng.integers(1, 8)),
                           int(rng.integers(1, 8)), int(rng.integers(1, 6)),
                           int(rng.integers(1, 6)))]

    def fades(g):
        G = np.cumsum(g, axis=-1)
        return np.exp(G), np.exp(G[..., -1])[..., None, None]

    def merged(q, g, o, Sa, Sb, fade, last, read=None):
        read = Sa if read is None else read
        return o + fade[..., None] * (q @ read), last * Sa + Sb

    wrong = [
        (lambda q, g, o, Sa, Sb: (o + q @ Sa, Sa + Sb),
         "nothing fades: chunk B's tokens fade the state A left, token by token"),
        (lambda q, g, o, Sa, Sb: merged(q, g, o, Sa, Sb, np.exp(np.cumsum(g, -1) - g),
                                        fades(g)[1]),
         "token t's own decay is left out: query t reads A's state after B's tokens "
         "1 to t have faded it, g_1 + ... + g_t"),
        (lambda q, g, o, Sa, Sb: (merged(q, g, o, Sa, Sb, *fades(g))[0], Sa + Sb),
         "the state A left fades through chunk B too: by the exponential of the sum "
         "of B's log decays"),
        (lambda q, g, o, Sa, Sb: merged(q, g, o, Sa, Sb,
                                        np.broadcast_to(fades(g)[1][..., 0], g.shape),
                                        fades(g)[1]),
         "each query of B reads A's state faded by the decays up to its own token, "
         "not by the whole chunk's"),
        (lambda q, g, o, Sa, Sb: merged(q, g, o, Sa, Sb, *fades(g),
                                        read=merged(q, g, o, Sa, Sb, *fades(g))[1]),
         "chunk B's queries read chunk B's whole state too; out_b already holds B's "
         "own causal part: add the faded q_b state_a only")]

    def compare(result, want, trial):
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            return f"return (out, state), got {type(result).__name__}"
        arrays, problems = [], []
        for name, got, right in zip(("out", "state"), result, want):
            got, problem = as_array(got, name)
            arrays.append(got)
            problems.append(problem or difference(got, right, trial.dtype))
        if not any(problems):
            return None
        if all(a is not None for a in arrays):
            for fn, message in wrong:
                if all(matches(a, w, trial.dtype)
                       for a, w in zip(arrays, fn(*trial.args))):
                    return message
        name = "out" if problems[0] else "state"
        return f"{name}: {problems[0] or problems[1]}"

    problem = first_failure(your_function, trials, None, what="merge_chunks",
                            compare=compare, forbidden=(decayed, chunked, chunk_decays,
                                                        decayed_recurrent,
                                                        decayed_chunked))
    if problem:
        return verdict(False, problem)
    return verdict(True, f"on {len(trials)} random pairs of chunks (no, one and two "
                         "leading axes; chunks of 1 to 40 tokens; float32; strong "
                         "decays) your merge equals one pass over both chunks.")


# Exercise 4 ---------------------------------------------------------------------------

def gla_recurrent(q, k, v, g):
    """Gated linear attention's recurrence, a decay per token and key channel:
    S_t = exp(g_t)[:, None] * S_{t-1} + k_t^T v_t, out_t = q_t S_t (the reference;
    with g equal over the channels it is ``decayed_recurrent``, tests/practice)."""
    S = np.zeros((*k.shape[:-2], k.shape[-1], v.shape[-1]), v.dtype)
    out = np.zeros(v.shape, v.dtype)
    for t in range(k.shape[-2]):
        S = np.exp(g[..., t, :, None]) * S + k[..., t, :, None] * v[..., t, None, :]
        out[..., t, :] = np.einsum("...c,...cv->...v", q[..., t, :], S)
    return out


def _summed_over_channels(q, k, v, g):
    """The mistake of summing g over the channels (its last axis), not the tokens."""
    G = np.cumsum(g, axis=-1)
    n = G.shape[-2]
    causal = np.tril(np.ones((n, n), dtype=bool))[:, :, None]
    with np.errstate(all="ignore"):
        gap = np.where(causal, G[..., :, None, :] - G[..., None, :, :], -np.inf)
        return np.einsum("...ic,...ijc,...jc->...ij", q, np.exp(gap), k) @ v


@redrawable
def _decayed_trial(rng, lead, n, d_k, d_v, dtype=np.float64, *, strong=False, zeros=False):
    """Decays a = e^g from 0.5 to 1 (g from -0.7 to 0), or, ``strong``, e^-3 to e^-8 a
    token: over 300 tokens the running sums of g reach -1500, so that e^(G_i) and
    e^(-G_j) taken apart, or e^(G_i - G_j) above the diagonal, overflow."""
    q, k, v = _features(rng, lead, n, d_k, d_v, dtype)
    shape = (*lead, n, d_k)
    g = -rng.uniform(3.0, 8.0, shape) if strong else -rng.uniform(0, 0.7, shape)
    if zeros:  # channels that fade nothing, and a token that forgets almost everything
        g[..., ::2] = 0.0
        g[..., n // 2, :] = -30.0
    axes = f"leading axes {shape_text(lead)}" if lead else "no leading axes"
    label = f"{n} tokens, d_k {d_k}, d_v {d_v}, {axes}, {np.dtype(dtype).name}"
    label += (", strong decays (g from -8 to -3)" if strong else
              ", some g = 0 and one token's -30" if zeros else "")
    return Trial(label, (q, k, v, g.astype(dtype)), {}, np.dtype(dtype))


def check_decayed_attention(your_function):
    """Exercise 4: your_function(q, k, v, g) = gated linear attention's outputs, a
    decay per token and key channel, computed in parallel (without the package's
    decays or recurrences)."""
    rng = fresh_rng()
    trials = [_decayed_trial(rng, (), 6, 3, 2), _decayed_trial(rng, (2,), 9, 4, 3),
              _decayed_trial(rng, (2, 3), 7, 2, 5), _decayed_trial(rng, (), 1, 3, 3),
              _decayed_trial(rng, (3,), 12, 4, 4, np.float32),
              _decayed_trial(rng, (2,), 10, 3, 2, zeros=True),
              _decayed_trial(rng, (2,), 300, 4, 3, strong=True),
              _decayed_trial(rng, (int(rng.integers(1, 4)),), int(rng.integers(2, 20)),
                             int(rng.integers(1, 6)), int(rng.integers(1, 6)))]
    hints = [(lambda q, k, v, g: gla_recurrent(q, k * np.exp(g), v, g),
              "each pair is faded by its own token's decay too: key j's pair is written "
              "after the state fades at step j, so channel c reaches query i faded by "
              "exp(g_{j+1}[c] + ... + g_i[c])"),
             (lambda q, k, v, g: _summed_over_channels(q, k, v, g),
              "running sums over the channels; the decay accumulates over the tokens"),
             (lambda q, k, v, g: gla_recurrent(q, k, v, g.mean(-1, keepdims=True)
                                               * np.ones_like(g)),
              "one decay per token for all channels; each channel of the state fades by "
              "its own decay"),
             (lambda q, k, v, g: _plain(q, k, v),
              "nothing fades: this is causal linear attention without the decay")]

    compare = _decay_compare("decayed_attention", "some outputs are nan or inf where "
                             "the answer is finite", hints)
    problem = first_failure(your_function, trials, gla_recurrent,
                            what="decayed_attention", compare=compare,
                            forbidden=(decayed, chunked, chunk_decays,
                                       decayed_recurrent, decayed_chunked))
    if problem is not None:
        return verdict(False, problem)
    return verdict(True, f"on {len(trials)} random inputs (no, one and two leading axes; "
                         "1 to 300 tokens; float32 and float64; decays of 1, of e^-30 "
                         "and strong ones whose running sums reach -1500; random sizes) "
                         "your outputs equal gated linear attention's recurrence, "
                         "computed in parallel.")

# Exercise 5 ---------------------------------------------------------------------------

def decayed_state_reference(k, v, g, S0):
    """The state after every token of the decayed recurrence, from S0 (the package's
    ``decayed_recurrent``, its queries unused)."""
    return decayed_recurrent(np.zeros_like(k), k, v, g, initial_state=S0)[1]


@redrawable
def _state_trial(rng, lead, n, d_k, d_v, dtype=np.float64, *, strong=False, zero=False):
    """Keys, values and a start state; decays e^g from 0.5 to 1, or ``strong`` (g from
    -8 to -3 over 300 tokens: running sums reach -1500), or ``zero`` g (no fading)."""
    _, k, v = _features(rng, lead, n, d_k, d_v, dtype)
    g = (-rng.uniform(3.0, 8.0, (*lead, n)) if strong else
         np.zeros((*lead, n)) if zero else -rng.uniform(0, 0.7, (*lead, n)))
    S0 = rng.normal(size=(*lead, d_k, d_v)).astype(dtype)
    axes = f"leading axes {shape_text(lead)}" if lead else "no leading axes"
    label = (f"{n} token{'s' * (n != 1)}, d_k {d_k}, d_v {d_v}, {axes}, "
             f"{np.dtype(dtype).name}")
    label += (", strong decays (g from -8 to -3)" if strong else
              ", g = 0 (nothing fades)" if zero else "")
    return Trial(label, (k, v, g.astype(dtype), S0), {}, np.dtype(dtype))


def check_decayed_state(your_function):
    """Exercise 5: your_function(k, v, g, S0) = the decayed recurrence's state after
    the n tokens, without a loop over them and without the package's recurrences."""
    rng = fresh_rng()
    trials = [_state_trial(rng, (), 5, 3, 2), _state_trial(rng, (2,), 8, 4, 3),
              _state_trial(rng, (2, 3), 6, 2, 4), _state_trial(rng, (), 1, 3, 3),
              _state_trial(rng, (2,), 7, 3, 2, zero=True),
              _state_trial(rng, (3,), 10, 4, 4, np.float32),
              _state_trial(rng, (2,), 300, 4, 3, strong=True),
              _state_trial(rng, (int(rng.integers(1, 4)),), int(rng.integers(1, 20)),
                           int(rng.integers(1, 6)), int(rng.integers(1, 6)))]
    hints = [(lambda k, v, g, S0: decayed_state_reference(
                  k * np.exp(g)[..., None], v, g, S0),
              "each token's pair is faded by its own decay too: token t writes after "
              "the state fades at step t, so it fades by exp(g_{t+1} + ... + g_n)"),
             (lambda k, v, g, S0: decayed_state_reference(k, v, g, np.zeros_like(S0))
              + S0, "S0 fades too: by exp(g_1 + ... + g_n), the sum of every decay"),
             (lambda k, v, g, S0: decayed_state_reference(k, v, g, np.zeros_like(S0)),
              "the start state S0 is missing: it is there before the first token, "
              "faded by every decay"),
             (lambda k, v, g, S0: S0 * np.exp(g.sum(-1))[..., None, None]
              + np.swapaxes(k, -1, -2) @ v,
              "the pairs are not faded: token t's pair fades by the decays of the "
              "tokens after it")]

    compare = _decay_compare("decayed_state", "some entries are nan or inf where "
                             "the state is finite", hints)
    problem = first_failure(your_function, trials, decayed_state_reference,
                            what="decayed_state", compare=compare,
                            forbidden=(decayed, chunked, chunk_decays,
                                       decayed_recurrent, decayed_chunked))
    if problem is not None:
        return verdict(False, problem)
    return verdict(True, f"on {len(trials)} random sequences (no, one and two leading "
                         "axes; 1 to 300 tokens; float32 and float64; no fading and "
                         "strong decays whose running sums reach -1500; random sizes) "
                         "your state equals the decayed recurrence's after its last "
                         "token.")

# Exercise 6 ---------------------------------------------------------------------------

@redrawable
def _decode_trial(rng, lead, n_before, d_k, d_v, dtype=np.float64):
    """A cache of n_before tokens (S and z their sums) and one new token; the answer
    is the last row of normalised causal linear attention over all of them."""
    q, k, v = _features(rng, lead, n_before + 1, d_k, d_v, dtype)
    S = np.swapaxes(k[..., :-1, :], -1, -2) @ v[..., :-1, :]
    z = k[..., :-1, :].sum(axis=-2)
    whole = linear_attention_recurrent(q, k, v, normalize=True)[0][..., -1, :]
    axes = f"leading axes {shape_text(lead)}" if lead else "no leading axes"
    return Trial(f"{n_before} cached tokens, d_k {d_k}, d_v {d_v}, {axes}, "
                 f"{np.dtype(dtype).name}",
                 (q[..., -1, :], k[..., -1, :], v[..., -1, :], S.astype(dtype),
                  z.astype(dtype)), {}, np.dtype(dtype),
                 expected=(whole.astype(dtype), (S + _outer(k[..., -1, :], v[..., -1, :])
                                                 ).astype(dtype),
                           (z + k[..., -1, :]).astype(dtype)))


def check_normalised_decode(your_function):
    """Exercise 6: your_function(q, k, v, S, z) = (out, S, z) of one decode step of
    normalised causal linear attention."""
    rng = fresh_rng()
    trials = [_decode_trial(rng, (), 5, 3, 4), _decode_trial(rng, (2, 3), 7, 4, 2),
              _decode_trial(rng, (2,), 0, 3, 3), _decode_trial(rng, (3,), 9, 4, 5,
                                                               np.float32),
              _decode_trial(rng, (int(rng.integers(1, 4)),), int(rng.integers(1, 12)),
                            int(rng.integers(1, 6)), int(rng.integers(1, 6)))]
    names = ("out", "S", "z")

    def compare(result, expected, trial):
        if not (isinstance(result, tuple) and len(result) == 3):
            return f"return (out, S, z), got {type(result).__name__}"
        q, k, v, S, z = trial.args
        for i, name in enumerate(names):
            got, problem = as_array(result[i], name)
            if problem is not None:
                return problem
            problem = difference(got, expected[i], trial.dtype)
            if problem is None:
                continue
            if i == 0 and matches(got, (q[..., None, :] @ S)[..., 0, :]
                                  / np.sum(q * z, axis=-1, keepdims=True), trial.dtype):
                return ("the new token read the cache before its own pair was added: "
                        "write k vᵀ into S and k into z first, then read")
            if i == 0 and matches(got, (q[..., None, :] @ expected[1])[..., 0, :],
                                  trial.dtype):
                return ("the output is not normalised: divide q S by q · z, the same "
                        "sum over the keys with a 1 for each value")
            return f"{name}: {problem}"
        return None

    problem = first_failure(your_function, trials, None, what="normalised_decode",
                            compare=compare)
    if problem is not None:
        return verdict(False, problem)
    return verdict(True, f"on {len(trials)} random caches (0 to 11 tokens before; no, "
                         "one and two leading axes; float32) your output equals the "
                         "last row of normalised causal linear attention, and S and z "
                         "carry the new token.")


guard_checks(globals())
