"""ReLU, GELU (exact and tanh), SiLU, the MLP and SwiGLU against PyTorch, float64 (<= 1e-12)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attention.feed_forward import gelu, mlp, relu, silu, swiglu

TOL = 1e-12

X = np.concatenate([np.linspace(-12, 12, 2001), [-40.0, -800.0, 0.0, 40.0, 800.0]])


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_matches_torch(approximate):
    expected = F.gelu(torch.from_numpy(X), approximate=approximate).numpy()
    assert np.abs(gelu(X, approximate=approximate) - expected).max() <= TOL


def test_gelu_exact_and_tanh_differ_by_about_2e_4():
    # The two GELUs are not interchangeable: loading GPT-2 with the exact form is wrong.
    diff = np.abs(gelu(X) - gelu(X, approximate="tanh")).max()
    assert 1e-4 < diff < 1e-3


def test_relu_and_silu_match_torch():
    t = torch.from_numpy(X)
    assert np.abs(relu(X) - F.relu(t).numpy()).max() == 0
    with np.errstate(over="raise"):  # no overflow warning escapes for x << 0
        ours = silu(X)
    assert np.abs(ours - F.silu(t).numpy()).max() <= TOL


def test_gelu_keeps_float32_and_rejects_unknown_approximation():
    assert gelu(np.ones(3, np.float32)).dtype == np.float32
    assert gelu(np.ones(3, np.float32), approximate="tanh").dtype == np.float32
    with pytest.raises(ValueError, match="'tanh'"):
        gelu(X, approximate="fast")


@pytest.mark.parametrize("activation,ref", [
    ("relu", F.relu), ("gelu", F.gelu),
    ("gelu_tanh", lambda t: F.gelu(t, approximate="tanh")),
])
def test_mlp_matches_torch_linear_layers(activation, ref):
    rng = np.random.default_rng(0)
    d, d_ff = 16, 64
    x = rng.normal(size=(2, 5, d))
    W_in, W_out = rng.normal(size=(d, d_ff)) / 4, rng.normal(size=(d_ff, d)) / 8
    b_in, b_out = rng.normal(size=d_ff), rng.normal(size=d)
    t = torch.from_numpy
    # nn.Linear stores (d_out, d_in): F.linear(x, W.T, b) == x @ W + b.
    expected = F.linear(ref(F.linear(t(x), t(W_in.T), t(b_in))), t(W_out.T), t(b_out))
    got = mlp(x, W_in, b_in, W_out, b_out, activation=activation)
    assert np.abs(got - expected.numpy()).max() <= TOL


def test_mlp_rejects_unknown_activation():
    with pytest.raises(ValueError, match="unknown activation 'swish'"):
        mlp(np.ones((1, 2)), np.ones((2, 2)), None, np.ones((2, 2)), None,
            activation="swish")


def test_swiglu_matches_its_torch_expression():
    rng = np.random.default_rng(1)
    d, d_ff = 16, 40
    x = rng.normal(size=(3, 7, d))
    W_gate, W_up = rng.normal(size=(d, d_ff)) / 4, rng.normal(size=(d, d_ff)) / 4
    W_down = rng.normal(size=(d_ff, d)) / 6
    t = torch.from_numpy
    expected = (F.silu(t(x) @ t(W_gate)) * (t(x) @ t(W_up))) @ t(W_down)
    assert np.abs(swiglu(x, W_gate, W_up, W_down) - expected.numpy()).max() <= TOL
