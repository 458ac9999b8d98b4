"""The position-wise feed-forward network: the same small MLP applied to every token.

References: Vaswani et al. (2017), section 3.3 (two linear layers, ReLU, 4x wider);
Hendrycks and Gimpel, "Gaussian Error Linear Units" (2016) (GELU, and its tanh
approximation that GPT-2 used); Shazeer, "GLU Variants Improve Transformer" (2020)
(SwiGLU, used by Llama).
"""

# --8<-- [start:imports]
import math

import numpy as np

# math.erf on a whole array: NumPy has no erf, and SciPy is not a dependency.
# Exact to the last bit; slow only for arrays of millions of values.
_erf = np.frompyfunc(math.erf, 1, 1)
# --8<-- [end:imports]


# --8<-- [start:activations]
def relu(x):
    """max(x, 0): the activation of the original transformer."""
    return np.maximum(x, 0)


def gelu(x, *, approximate="none"):
    """GELU, x * Phi(x), Phi the standard normal CDF.

    approximate="none": the exact form, 0.5 x (1 + erf(x / sqrt 2)).
    approximate="tanh": the approximation GPT-2 used,
    0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
    """
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)  # integers: compute in float64
    if approximate == "none":
        erf = np.asarray(_erf(x / math.sqrt(2)), dtype=x.dtype)
        return 0.5 * x * (1.0 + erf)
    if approximate == "tanh":
        # In place, one new array in all: for the large arrays of training,
        # each fresh temporary costs more than the arithmetic it holds.
        c = math.sqrt(2 / math.pi)
        y = x * x                          # x² (x**3 would call pow(): slow)
        y *= 0.044715 * c
        y += c
        y *= x                             # √(2/π) (x + 0.044715 x³)
        np.tanh(y, out=y)
        y += 1.0
        y *= x
        y *= 0.5                           # ½ x (1 + tanh(...))
        return y
    raise ValueError(
        f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def silu(x):
    """x * sigmoid(x) (also called Swish): the gate of SwiGLU."""
    with np.errstate(over="ignore"):  # exp(-x) = inf for x << 0 gives 0
        return x / (1.0 + np.exp(-x))
# --8<-- [end:activations]


# --8<-- [start:mlp]
ACTIVATIONS = {
    "relu": relu,
    "gelu": gelu,
    "gelu_tanh": lambda x: gelu(x, approximate="tanh"),
    "silu": silu,
}


def mlp(x, W_in, b_in, W_out, b_out, *, activation="gelu"):
    """Two linear layers with an activation between them, token by token.

    x: (..., d_model); W_in: (d_model, d_ff); W_out: (d_ff, d_model);
    biases (d_ff,) and (d_model,), or None. activation: a name in
    ACTIVATIONS ("relu", "gelu", "gelu_tanh", "silu") or a function.
    """
    act = activation
    if isinstance(activation, str):
        act = ACTIVATIONS.get(activation)
    if act is None:
        raise ValueError(f"mlp: unknown activation {activation!r}, "
                         f"expected one of {sorted(ACTIVATIONS)} or a function")
    h = x @ W_in if b_in is None else x @ W_in + b_in       # (..., d_ff)
    h = act(h)
    return h @ W_out if b_out is None else h @ W_out + b_out  # (..., d_model)
# --8<-- [end:mlp]


# --8<-- [start:swiglu]
def swiglu(x, W_gate, W_up, W_down):
    """SwiGLU (Llama): silu(x W_gate) * (x W_up), then W_down. No biases.

    x: (..., d_model); W_gate, W_up: (d_model, d_ff); W_down: (d_ff, d_model).
    Three matrices instead of two, so d_ff is about 8/3 d_model (not 4x) to
    keep the parameter count.
    """
    gate = silu(x @ W_gate)                                 # (..., d_ff)
    return (gate * (x @ W_up)) @ W_down                     # (..., d_model)
# --8<-- [end:swiglu]
