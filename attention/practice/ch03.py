"""Self-checks for the practice exercises of chapter 3 (the transformer block).

Each check calls the reader's function on data of its own, prints one verdict ("✓ Correct:
..." or "✗ Not yet: ..." saying what is wrong) and returns True or False. A check never
raises: a reader's exception, a wrong shape or a wrong type is a verdict too.
"""

import math
from types import SimpleNamespace

import numpy as np

from attention.blocks import attention_layer, gpt2_block
from attention.feed_forward import mlp
from attention.model import ModelConfig
from attention.norms import layer_norm, rms_norm
from attention.parameters import count_parameters
from attention.practice.verdict import call, guard_checks, verdict


def _array(result, what, shape):
    """(array, None) or (None, a failure line)."""
    if result is None:
        return None, f"{what} returned None; return a NumPy array"
    try:
        result = np.asarray(result, dtype=np.float64)
    except (TypeError, ValueError):
        return None, f"{what} returned {type(result).__name__}, not an array of numbers"
    if result.shape != shape:
        return None, f"{what} should have shape {shape}, got {result.shape}"
    return result, None


def _close(a, b):
    return bool(np.allclose(a, b, rtol=1e-9, atol=1e-12))


# Exercise 1: RMSNorm from its formula ----------------------------------------------------

def check_rms_norm(your_function):
    """Exercise 1: your_function(x, weight, eps) = x / sqrt(mean(x²) + eps) * weight."""
    try:
        return _check_rms_norm(your_function)
    except Exception as error:  # a check never raises
        return verdict(False, f"the check could not use your answer: {type(error).__name__}: {error}")


def _check_rms_norm(your_function):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(3, 8)) * np.array([[1.0], [5.0], [1e-3]])  # row 2: tiny values
    x[1] += 2.0  # row 1: a mean far from zero
    weight = 1.0 + 0.5 * rng.normal(size=8)
    eps = 1e-6
    got, problem = call(your_function, x, weight, eps)
    if problem is None:
        got, problem = _array(got, "rms_norm_from_formula(x, weight, eps)", x.shape)
    if problem:
        return verdict(False, problem)
    if _close(got, rms_norm(x, weight, eps=eps)):
        return verdict(True, "your RMSNorm equals the package's (and nn.RMSNorm's) on every row, the tiny one included.")
    wrong = [
        (x * weight,
         "nothing is normalised yet: divide each row by its root mean square, sqrt(mean(x²) + eps)"),
        (rms_norm(x, weight, eps=0.0),
         "row 2 (values near 1e-3) is off: eps is missing; add it to the mean of squares, inside the square root"),
        (x / (np.sqrt((x * x).mean(-1, keepdims=True)) + eps) * weight,
         "row 2 (values near 1e-3) is off: eps belongs inside the square root, sqrt(mean(x²) + eps), not added after it"),
        (rms_norm(x, np.ones(8), eps=eps),
         "the rows have root mean square 1, but the gain is missing: multiply by weight"),
        (layer_norm(x, weight, eps=eps),
         "you subtracted the mean: that is LayerNorm; RMSNorm divides x itself by its root mean square"),
        (x / np.sqrt((x * x).mean(0, keepdims=True) + eps) * weight,
         "you averaged over the tokens (axis 0); average each token's own features, the last axis"),
    ]
    for answer, message in wrong:
        if _close(got, answer):
            return verdict(False, message)
    expected = rms_norm(x, weight, eps=eps)
    return verdict(False, f"row 0 should be {np.round(expected[0], 3)}, got {np.round(got[0], 3)}")


# Exercise 2: RoPE for one pair --------------------------------------------------------------

_PAIR_CASES = [(0.8, -0.3, 7, 0, 8), (0.8, -0.3, 7, 3, 8), (1.0, 0.0, 100, 1, 4),
               (-0.4, 0.9, 2500, 5, 16)]


def _rotate(a, b, position, i, d_head, base=10000.0, sign=1.0, two=2):
    angle = sign * position * base ** (-two * i / d_head)
    return a * math.cos(angle) - b * math.sin(angle), a * math.sin(angle) + b * math.cos(angle)


def check_rotate_pair(your_function):
    """Exercise 2: your_function(a, b, position, i, d_head) rotates pair i by position·θ_i."""
    try:
        return _check_rotate_pair(your_function)
    except Exception as error:
        return verdict(False, f"the check could not use your answer: {type(error).__name__}: {error}")


def _check_rotate_pair(your_function):
    for a, b, position, i, d_head in _PAIR_CASES:
        what = f"rotate_pair({a}, {b}, position={position}, i={i}, d_head={d_head})"
        got, problem = call(your_function, a, b, position, i, d_head)
        if problem:
            return verdict(False, problem)
        try:
            ga, gb = (float(v) for v in got)
        except (TypeError, ValueError):
            return verdict(False, f"{what} should return two numbers (a', b'), got {got!r}")
        expected = _rotate(a, b, position, i, d_head)
        if np.allclose((ga, gb), expected, rtol=1e-9, atol=1e-12):
            continue
        if position and np.allclose((ga, gb), (a, b)):
            return verdict(False, f"{what} returned the pair unchanged: rotate it by the angle position · base^(-2i/d_head)")
        if np.allclose((ga, gb), _rotate(a, b, position, i, d_head, sign=-1.0)):
            return verdict(False, f"{what} rotates the wrong way: a' = a cos − b sin, b' = a sin + b cos")
        if np.allclose((ga, gb), _rotate(a, b, position, i, d_head, two=1)):
            return verdict(False, f"{what}: the frequency of pair i is base^(-2i/d_head); you used base^(-i/d_head)")
        if np.allclose((ga, gb), _rotate(a, b, position, -i, d_head)):
            return verdict(False, f"{what}: the exponent is negative, θ_i = base^(-2i/d_head): later pairs turn slower")
        return verdict(False, f"{what} should be ({expected[0]:.4f}, {expected[1]:.4f}), got ({ga:.4f}, {gb:.4f})")
    return verdict(True, "each pair turns by position · base^(-2i/d_head), in the direction RoPE uses.")


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


def _check_llama_count(your_function):
    for c in _COUNT_CONFIGS:
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
    return verdict(True, f"Llama 3 8B has {count_parameters(_COUNT_CONFIGS[0])['total']:,} parameters, and your count agrees on all three configurations.")


# Exercise 4: find the bug in a block --------------------------------------------------------

def _block_case():
    rng = np.random.default_rng(4)
    d, n_heads, d_ff, n = 16, 4, 64, 6
    p = {}
    for name in ("q", "k", "v", "o"):
        p[f"attn.W_{name}"] = rng.normal(size=(d, d)) / math.sqrt(d)
        p[f"attn.b_{name}"] = 0.1 * rng.normal(size=d)
    p["mlp.W_in"], p["mlp.b_in"] = rng.normal(size=(d, d_ff)) / 4, 0.1 * rng.normal(size=d_ff)
    p["mlp.W_out"], p["mlp.b_out"] = rng.normal(size=(d_ff, d)) / 8, 0.1 * rng.normal(size=d)
    for i in (1, 2):
        p[f"norm{i}.weight"] = 1 + 0.3 * rng.normal(size=d)
        p[f"norm{i}.bias"] = 0.3 * rng.normal(size=d)
    x = 3.0 * rng.normal(size=(2, n, d)) + 1.0  # (batch, n, d_model): not normalised
    return x, p, n_heads


def _wrong_blocks(x, p, n_heads):
    """Plausible wrong blocks, and what each one gets wrong."""
    def ln(h, i):
        return layer_norm(h, p[f"norm{i}.weight"], p[f"norm{i}.bias"])

    def attn(h):
        return attention_layer(h, p, n_heads=n_heads)

    def ff(h):
        return mlp(h, p["mlp.W_in"], p["mlp.b_in"], p["mlp.W_out"], p["mlp.b_out"],
                   activation="gelu_tanh")

    h = ln(x, 1)
    from_norm = h + attn(h)
    yield (from_norm + ff(ln(from_norm, 2)),
           "the first residual adds the attention output to layer_norm(x), not to x: the stream must carry x itself")
    both = ln(from_norm, 2)
    yield (both + ff(both),
           "both residuals add to a normalised copy: the stream must carry x itself, the branches read the norm")
    post = ln(x + attn(x), 1)
    yield (ln(post + ff(post), 2),
           "that is a post-LN block, norm(x + f(x)); GPT-2 is pre-LN: x + f(norm(x))")
    mid = x + attn(h)
    yield (ff(ln(mid, 2)),
           "the MLP's residual is missing: add its output to the stream")


def check_block(your_function):
    """Exercise 4: your_function(x, p, n_heads) = GPT-2's pre-LN block."""
    try:
        return _check_block(your_function)
    except Exception as error:
        return verdict(False, f"the check could not use your answer: {type(error).__name__}: {error}")


def _check_block(your_function):
    x, p, n_heads = _block_case()
    config = SimpleNamespace(n_heads=n_heads, norm_eps=1e-5)
    expected = gpt2_block(x, p, config, None)
    got, problem = call(your_function, x, p, n_heads)
    if problem is None:
        got, problem = _array(got, "block(x, p, n_heads)", x.shape)
    if problem:
        return verdict(False, problem)
    if _close(got, expected):
        return verdict(True, "the residual stream now carries x itself; each branch reads a normalised copy and adds its result.")
    for answer, message in _wrong_blocks(x, p, n_heads):
        if _close(got, answer):
            return verdict(False, message)
    # Causality: changing the last token must not change the earlier outputs.
    changed = x.copy()
    changed[:, -1] = changed[:, -1, ::-1]  # a different last token (not a shift: LN removes it)
    got2, problem = call(your_function, changed, p, n_heads)
    if problem is None and np.shape(got2) == x.shape:
        if not _close(np.asarray(got2)[:, :-1], got[:, :-1]):
            return verdict(False, "changing the last token changes the outputs of earlier tokens: the attention must be causal")
    scale = np.abs(expected).max()
    diff = np.abs(got - expected).max()
    return verdict(False, f"your block's output is off by up to {diff:.2f} (outputs are of size {scale:.1f}): "
                          "follow one token's path from x to the output; what does the residual connection add the branch to?")


guard_checks(globals())  # no check raises, whatever the answer (verdict.py)
