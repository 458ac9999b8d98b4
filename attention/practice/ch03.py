"""Self-checks for the practice exercises of chapter 3 (the transformer block).

Each check draws random inputs at every call (batch axes, float32 and float64, rows of
tiny values, random bases and positions), calls the reader's function through
``attention.practice.verdict.call`` and compares with the package's implementation
(checked against PyTorch and Hugging Face in the tests). It prints one verdict and
returns True or False; it never raises, whatever the answer.
"""

import math

import numpy as np

from attention.feed_forward import gelu, swiglu
from attention.model import ModelConfig
from attention.norms import layer_norm, rms_norm
from attention.parameters import count_parameters
from attention.positions import rope, rope_permutation, sinusoidal_positions
from attention.practice.trials import (Trial, defaulted, fresh_rng, judge, redrawable,
                                       shape_text)
from attention.practice.verdict import call, guard_checks, verdict


@redrawable
def _norm_trial(rng, shape, dtype=np.float64, tiny=False, shift=0.0, eps=1e-5):
    x = rng.normal(size=shape) + shift
    if tiny:
        x[..., 0, :] *= 1e-3  # the first row: values near 1e-3, where eps matters
    weight = 1.0 + 0.5 * rng.normal(size=shape[-1])
    bias = 0.1 * rng.normal(size=shape[-1])
    label = f"x {shape_text(shape)} in {np.dtype(dtype).name}"
    label += ", its first row near 1e-3" if tiny else ""
    label += f", around {shift:g}" if shift else ""
    return Trial(label, (x.astype(dtype), weight.astype(dtype)), {"eps": eps},
                 np.dtype(dtype)), bias.astype(dtype)


# Exercise 1 ---------------------------------------------------------------------------

def check_rms_norm(your_function):
    """Exercise 1: your_function(x, weight, eps) = x / sqrt(mean(x²) + eps) * weight over
    the last axis, for any leading axes."""
    rng = fresh_rng()
    trials = [_norm_trial(rng, (3, 8), tiny=True)[0], _norm_trial(rng, (2, 4, 6), eps=1e-6)[0],
              _norm_trial(rng, (5, 7), np.float32)[0], _norm_trial(rng, (4, 5), shift=3.0)[0],
              _norm_trial(rng, (2, 4, 6), eps=1e-6)[0],  # shapes seen, new values
              defaulted(_norm_trial(rng, (3, 6), tiny=True, eps=1e-6)[0], "eps", 1e-6)]

    def reference(x, weight, eps=1e-6):
        return rms_norm(x, weight, eps=eps)

    ms = lambda x, axis=-1: np.mean(x * x, axis=axis, keepdims=True)  # noqa: E731
    return judge(
        your_function, trials, reference, what="rms_norm",
        success="your RMSNorm equals the package's (and nn.RMSNorm's).",
        hints=[(lambda x, weight, eps: x * weight, "nothing is normalised yet: divide each "
                "row by its root mean square, sqrt(mean(x²) + eps)"),
               (lambda x, weight, eps: rms_norm(x, weight, eps=0.0), "eps is missing: add it "
                "to the mean of squares, inside the square root"),
               (lambda x, weight, eps: x / (np.sqrt(ms(x)) + eps) * weight, "eps belongs "
                "inside the square root, sqrt(mean(x²) + eps), not added after it"),
               (lambda x, weight, eps: rms_norm(x, np.ones_like(weight), eps=eps), "the rows "
                "have root mean square 1, but the gain is missing: multiply by weight"),
               (lambda x, weight, eps: layer_norm(x, weight, eps=eps), "you subtracted the "
                "mean: that is LayerNorm; RMSNorm divides x itself by its root mean square"),
               (lambda x, weight, eps: x / np.sqrt(ms(x, 0) + eps) * weight, "you averaged "
                "over axis 0; average each token's own features, the last axis"),
               (lambda x, weight, eps: x / np.sqrt(ms(x, 1) + eps) * weight, "you averaged "
                "over axis 1; average each token's own features, the last axis")])


# Exercise 2 ---------------------------------------------------------------------------

@redrawable
def _rope_trial(rng, lead, n, d_head, dtype=np.float64, offset=0, base=10000.0):
    x = rng.normal(size=lead + (n, d_head)).astype(dtype)
    positions = np.arange(offset, offset + n)
    return Trial(f"x {shape_text(x.shape)} in {np.dtype(dtype).name}, positions {offset}.."
                 f"{offset + n - 1}, base {base:g}", (x, positions), {"base": base},
                 np.dtype(dtype))


def check_rope(your_function):
    """Exercise 2: your_function(x, positions, base) = RoPE in the split-halves layout
    (pair k = features k and k + d_head/2), over any leading axes."""
    rng = fresh_rng()
    trials = [_rope_trial(rng, (), 5, 8), _rope_trial(rng, (2, 3), 4, 16, offset=100,
                                                      base=500000.0),
              _rope_trial(rng, (2,), 6, 6, np.float32, offset=7, base=100.0),
              _rope_trial(rng, (1, 2), 3, 32, offset=4000),
              defaulted(_rope_trial(rng, (2,), 4, 8, offset=30), "base", 10000.0)]
    return judge(
        your_function, trials,
        lambda x, positions, base=10000.0: rope(x, positions, base=base),
        what="rope", success="your rotation equals the package's RoPE (Hugging Face's "
                             "rotate_half layout), for the base given.",
        hints=[(lambda x, positions, base: rope(x, positions, base=base, layout="interleaved"),
                "that is the interleaved layout, pairs (2k, 2k + 1); this one pairs feature k "
                "with feature k + d_head/2"),
               (lambda x, positions, base: rope(x, positions),
                "the angles ignore the base you are given: θ_k = base^(-2k/d_head)"),
               (lambda x, positions, base: rope(x, -positions, base=base),
                "you rotated the wrong way: (a, b) -> (a cos t - b sin t, a sin t + b cos t)"),
               (lambda x, positions, base: rope(x, positions - positions[0], base=base),
                "the positions start at 0 in your rotation; use the positions given")])


# Exercise 3: a parameter count --------------------------------------------------------------

_COUNT_CONFIGS = [
    ModelConfig(arch="llama", vocab_size=128256, d_model=4096, n_layers=32, n_heads=32,
                n_kv_heads=8, d_ff=14336, max_positions=8192, tie_embeddings=False),
    ModelConfig(arch="llama", vocab_size=1000, d_model=64, n_layers=3, n_heads=8,
                n_kv_heads=2, d_ff=176, max_positions=128, tie_embeddings=True),
    ModelConfig(arch="llama", vocab_size=500, d_model=48, n_layers=2, n_heads=4,
                n_kv_heads=4, d_ff=128, max_positions=64, tie_embeddings=False),
]


def _llama_count(c, *, gqa=True, tied_counts=False, norms=True, mlp_matrices=3):
    d, kv = c.d_model, (c.n_kv_heads if gqa else c.n_heads) * c.d_head
    block = 2 * d * d + 2 * d * kv + mlp_matrices * d * c.d_ff + (2 * d if norms else 0)
    head = 0 if c.tie_embeddings and not tied_counts else c.vocab_size * d
    return c.vocab_size * d + c.n_layers * block + (d if norms else 0) + head


def check_llama_count(your_function):
    """Exercise 3: your_function(config) = the number of parameters of a Llama config."""
    try:
        return _check_llama_count(your_function)
    except Exception as error:
        return verdict(False, f"the check could not use your answer: {type(error).__name__}: {error}")


def _random_configs(rng, count=2):
    found = []
    for _ in range(count):
        n_kv = int(rng.choice([1, 2, 4]))
        n_heads = n_kv * int(rng.choice([1, 2, 3]))
        d_model = n_heads * int(rng.choice([8, 16]))
        found.append(ModelConfig(arch="llama", vocab_size=int(rng.integers(100, 2000)),
                                 d_model=d_model, n_layers=int(rng.integers(1, 5)),
                                 n_heads=n_heads, n_kv_heads=n_kv,
                                 d_ff=int(rng.integers(2, 6)) * d_model, max_positions=64,
                                 tie_embeddings=bool(rng.random() < 0.5)))
    return found


def _check_llama_count(your_function):
    for c in _COUNT_CONFIGS + _random_configs(fresh_rng()):
        what = (f"for d_model={c.d_model}, {c.n_layers} layers, {c.n_heads} heads, "
                f"{c.n_kv_heads} KV heads, d_ff={c.d_ff}, tied={c.tie_embeddings}")
        got, problem = call(your_function, c)
        if problem:
            return verdict(False, problem)
        if isinstance(got, bool) or not isinstance(got, (int, np.integer)):
            return verdict(False, f"{what}: return an int, got {type(got).__name__} {got!r}")
        expected = count_parameters(c)["total"]
        if got == expected:
            continue
        if c.n_kv_heads != c.n_heads and got == _llama_count(c, gqa=False):
            return verdict(False, f"{what}: W_k and W_v are d_model × (n_kv_heads · d_head), not d_model × d_model")
        if c.tie_embeddings and got == _llama_count(c, tied_counts=True):
            return verdict(False, f"{what}: a tied LM head is the embedding matrix itself; count it once")
        if got == _llama_count(c, norms=False):
            return verdict(False, f"{what}: the RMSNorm gains are parameters too (2 per block, 1 at the end, d_model each)")
        if got == _llama_count(c, mlp_matrices=2):
            return verdict(False, f"{what}: SwiGLU has three matrices (W_gate, W_up, W_down), not two")
        return verdict(False, f"{what} the count is {expected:,}, got {got:,} (off by {got - expected:+,})")
    return verdict(True, f"Llama 3 8B has {count_parameters(_COUNT_CONFIGS[0])['total']:,} parameters, and your count agrees on three chosen and two random configurations.")


# Exercise 4 ---------------------------------------------------------------------------

def check_layer_norm(your_function):
    """Exercise 4: your_function(x, weight, bias, eps) = LayerNorm over the last axis, with
    the biased variance and eps inside the square root (PyTorch's nn.LayerNorm)."""
    rng = fresh_rng()
    made = [_norm_trial(rng, (3, 8), tiny=True), _norm_trial(rng, (2, 3, 5)),
            _norm_trial(rng, (4, 6), np.float32), _norm_trial(rng, (3, 4), shift=100.0),
            _norm_trial(rng, (2, 3, 5)),  # shapes seen before, new values
            _norm_trial(rng, (2, 7), tiny=True)]
    trials = []
    for trial, bias in made:
        x, weight = trial.args
        trial.args = (x, weight, bias)
        trials.append(trial)
    defaulted(trials[-1], "eps", 1e-5)

    def reference(x, weight, bias, eps=1e-5):
        return layer_norm(x, weight, bias, eps=eps)

    def bessel(x, weight, bias, eps):
        mean = x.mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(x.var(-1, ddof=1, keepdims=True) + eps) * weight + bias

    def eps_outside(x, weight, bias, eps):
        mean = x.mean(-1, keepdims=True)
        return (x - mean) / (x.std(-1, keepdims=True) + eps) * weight + bias

    return judge(
        your_function, trials, reference, what="layer_norm",
        success="your LayerNorm equals nn.LayerNorm's (biased variance, eps inside the "
                "square root).",
        hints=[(bessel, "the variance is divided by d - 1 (Bessel's correction, "
                "np.var(ddof=1) or torch.var's default); LayerNorm divides by d"),
               (eps_outside, "eps is added to the standard deviation; it belongs inside the "
                "square root, sqrt(var + eps)")])


# Exercise 5 ---------------------------------------------------------------------------

def check_gelu_tanh(your_function):
    """Exercise 5: your_function(x) = GELU's tanh approximation (GPT-2's gelu_new)."""
    rng = fresh_rng()
    trials = [Trial("x (4, 6) in float64", (rng.normal(size=(4, 6)) * 3,)),
              Trial("x (2, 3, 5) in float32", ((rng.normal(size=(2, 3, 5)) * 3).astype(
                  np.float32),), {}, np.dtype(np.float32)),
              Trial("x (7,) far from 0 (±30)", (rng.choice([-1.0, 1.0], size=7) * 30
                                                + rng.normal(size=7),)),
              Trial("x (4, 6) in float64 again, new values", (rng.normal(size=(4, 6)) * 3,))]
    return judge(
        your_function, trials, lambda x: gelu(x, approximate="tanh"), what="gelu_tanh",
        success="your GELU equals the tanh approximation GPT-2 uses (PyTorch's "
                "approximate='tanh').",
        hints=[(lambda x: gelu(x), "that is the exact GELU, x Φ(x) with erf; this one is "
                "0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))), which differs by up to about "
                "5e-4"),
               (lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * x)),
                "the cubic term 0.044715 x³ is missing inside the tanh"),
               (lambda x: x / (1 + np.exp(-1.702 * x)), "that is the sigmoid approximation "
                "x σ(1.702 x); this one uses tanh")])


# Exercise 6 ---------------------------------------------------------------------------

@redrawable
def _ffn_trial(rng, lead, d_model, d_ff, dtype=np.float64):
    x = rng.normal(size=lead + (d_model,)).astype(dtype)
    W = [(rng.normal(size=s) / math.sqrt(s[0])).astype(dtype)
         for s in ((d_model, d_ff), (d_model, d_ff), (d_ff, d_model))]
    return Trial(f"x {shape_text(x.shape)} with d_ff = {d_ff} in {np.dtype(dtype).name}",
                 (x, *W), {}, np.dtype(dtype))


@redrawable
def _fused_trial(rng, lead, d_model, d_ff, dtype=np.float64, *, loud=False):
    """x, a fused (d_model, 2 d_ff) gate-up matrix and W_down; ``loud``: gate
    pre-activations near ±1000 (silu's exp(-z) overflows to inf there, harmlessly)."""
    x = rng.normal(size=lead + (d_model,)) * (300.0 if loud else 1.0)
    W = [rng.normal(size=s) / math.sqrt(s[0]) for s in ((d_model, 2 * d_ff),
                                                         (d_ff, d_model))]
    return Trial(f"x {shape_text(x.shape)} with d_ff = {d_ff} in {np.dtype(dtype).name}"
                 + (", pre-activations near ±1000" if loud else ""),
                 tuple(a.astype(dtype) for a in (x, *W)), {}, np.dtype(dtype))


def fused_reference(x, W_gate_up, W_down):
    """The package's swiglu with the fused matrix cut in two: gate, then up."""
    d_ff = W_down.shape[0]
    return swiglu(x, W_gate_up[:, :d_ff], W_gate_up[:, d_ff:], W_down)


def check_swiglu_fused(your_function):
    """Exercise 6: your_function(x, W_gate_up, W_down) = Llama's MLP, the gate and up
    projections in one matrix, gate first."""
    rng = fresh_rng()
    trials = [_fused_trial(rng, (5,), 8, 24), _fused_trial(rng, (2, 3), 6, 16),
              _fused_trial(rng, (4,), 8, 20, np.float32),
              _fused_trial(rng, (3,), 4, 6, loud=True)]
    silu = lambda z: z / (1 + np.exp(-z))  # noqa: E731

    def halves(W, d_ff):
        return W[:, :d_ff], W[:, d_ff:]

    def swapped(x, W, dn):
        g, u = halves(W, dn.shape[0])
        return swiglu(x, u, g, dn)

    def interleaved(x, W, dn):
        return swiglu(x, W[:, 0::2], W[:, 1::2], dn)

    def silu_of_product(x, W, dn):
        g, u = halves(W, dn.shape[0])
        return silu((x @ g) * (x @ u)) @ dn

    def sigmoid_gate(x, W, dn):
        g, u = halves(W, dn.shape[0])
        return (1 / (1 + np.exp(-(x @ g))) * (x @ u)) @ dn

    return judge(
        your_function, trials, fused_reference, what="swiglu_fused",
        success="your SwiGLU equals Llama's MLP with the fused matrix cut into its gate "
                "and up halves.",
        hints=[(swapped, "the gate and the up projection are swapped: the first d_ff "
                         "columns are the gate's"),
               (interleaved, "the columns were taken interleaved (even, odd); the "
                             "matrix holds two blocks side by side, gate then up"),
               (silu_of_product, "silu applies to the gate x W_gate alone, before the "
                                 "product"),
               (sigmoid_gate, "that gates by σ(z); SwiGLU's gate is silu(z) = z σ(z)")])


# Exercise 7 ---------------------------------------------------------------------------

def check_sinusoidal(your_function):
    """Exercise 7: your_function(n, d_model, base) = the sinusoidal encodings, (n, d_model):
    sin in the even features, cos in the odd ones. (No random numbers: the inputs are
    sizes, and four sizes and bases the reader is not shown catch a hard-coded table.)"""
    cases = [(6, 8, 10000.0), (5, 10, 10000.0), (7, 12, 100.0), (9, 6, 500.0)]
    trials = [Trial(f"n = {n}, d_model = {d}, base = {b:g}", (n, d, b)) for n, d, b in cases]
    trials.append(defaulted(Trial("n = 4, d_model = 6", (4, 6, 10000.0)), "base", 10000.0))

    def halves(n, d_model, base):
        pe = sinusoidal_positions(n, d_model, base)
        return np.concatenate([pe[:, 0::2], pe[:, 1::2]], axis=-1)

    return judge(
        your_function, trials, sinusoidal_positions, what="sinusoidal",
        success="your encodings equal the package's (Vaswani et al., section 3.5).",
        hints=[(halves, "all the sines come first, then all the cosines; the paper "
                "interleaves them: sin in feature 2i, cos in feature 2i + 1"),
               (lambda n, d, b: sinusoidal_positions(n, d), "the frequencies ignore the base "
                "you are given")])


# Exercise 8 ---------------------------------------------------------------------------

def check_rope_interleaved(your_function):
    """Exercise 8: your_function(x, positions, base) = RoPE in the interleaved layout of
    GPT-J and Meta's Llama checkpoints (pair k = features 2k and 2k + 1)."""
    rng = fresh_rng()
    trials = [_rope_trial(rng, (), 5, 8), _rope_trial(rng, (2, 3), 4, 16, offset=100,
                                                      base=500000.0),
              _rope_trial(rng, (2,), 6, 6, np.float32, offset=7, base=100.0),
              _rope_trial(rng, (1, 2), 3, 32, offset=4000),
              defaulted(_rope_trial(rng, (2,), 4, 8, offset=30), "base", 10000.0)]

    def interleaved(x, positions, base=10000.0):
        return rope(x, positions, base=base, layout="interleaved")

    def halves_order(x, positions, base):  # the right pairs, written back as halves
        return interleaved(x, positions, base)[..., rope_permutation(x.shape[-1])]

    return judge(
        your_function, trials, interleaved, what="rope_interleaved",
        success="your rotation equals the package's RoPE in the interleaved layout "
                "(pairs 2k, 2k + 1), for the base given.",
        hints=[(lambda x, positions, base: rope(x, positions, base=base),
                "that is the split-halves layout, pairs (k, k + d_head/2); this "
                "checkpoint pairs features 2k and 2k + 1"),
               (halves_order, "you rotated the right pairs (2k, 2k + 1) but wrote them "
                "back as halves: rotated feature 2k goes back to index 2k, and 2k + 1 "
                "to 2k + 1"),
               (lambda x, positions, base: interleaved(x, -positions, base),
                "you rotated the wrong way: (a, b) -> (a cos t - b sin t, a sin t + b "
                "cos t)"),
               (lambda x, positions, base: interleaved(x, positions, 10000.0),
                "the angles ignore the base you are given: θ_k = base^(-2k/d_head)")])


guard_checks(globals())  # no check raises, whatever the answer (verdict.py)
