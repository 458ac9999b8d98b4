"""LayerNorm == torch.nn.LayerNorm and RMSNorm == torch.nn.RMSNorm, float64 (<= 1e-12)."""

import numpy as np
import pytest
import torch

from attention.norms import layer_norm, rms_norm

TOL = 1e-12  # float64, one layer


def _weights(rng, d):
    return 1.0 + 0.5 * rng.normal(size=d), rng.normal(size=d)


@pytest.mark.parametrize("eps", [1e-5, 1e-6, 0.1])
@pytest.mark.parametrize("shape", [(7, 16), (2, 5, 32), (3, 1)])
def test_layer_norm_matches_torch(shape, eps):
    rng = np.random.default_rng(0)
    x = 3.0 * rng.normal(size=shape) + 2.0
    w, b = _weights(rng, shape[-1])
    ref = torch.nn.LayerNorm(shape[-1], eps=eps, dtype=torch.float64)
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(w))
        ref.bias.copy_(torch.from_numpy(b))
        expected = ref(torch.from_numpy(x)).numpy()
    assert np.abs(layer_norm(x, w, b, eps=eps) - expected).max() <= TOL


def test_layer_norm_without_bias_matches_torch_bias_false():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(4, 8))
    w, _ = _weights(rng, 8)
    ref = torch.nn.LayerNorm(8, eps=1e-5, bias=False, dtype=torch.float64)
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(w))
        expected = ref(torch.from_numpy(x)).numpy()
    assert np.abs(layer_norm(x, w, eps=1e-5) - expected).max() <= TOL


@pytest.mark.parametrize("eps", [1e-5, 1e-6])
@pytest.mark.parametrize("shape", [(7, 16), (2, 5, 32)])
def test_rms_norm_matches_torch_with_eps_passed(shape, eps):
    rng = np.random.default_rng(2)
    x = 3.0 * rng.normal(size=shape) + 1.0
    w, _ = _weights(rng, shape[-1])
    ref = torch.nn.RMSNorm(shape[-1], eps=eps, dtype=torch.float64)
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(w))
        expected = ref(torch.from_numpy(x)).numpy()
    assert np.abs(rms_norm(x, w, eps=eps) - expected).max() <= TOL


def test_torch_rms_norm_default_eps_is_machine_epsilon_not_a_model_eps():
    # Why every comparison passes eps: nn.RMSNorm's default is finfo(dtype).eps.
    x = np.full((1, 4), 1e-4)  # tiny activations make eps visible
    ref = torch.nn.RMSNorm(4, dtype=torch.float64)
    with torch.no_grad():
        default = ref(torch.from_numpy(x)).numpy()
    ones = np.ones(4)
    assert np.abs(rms_norm(x, ones, eps=np.finfo(np.float64).eps) - default).max() <= TOL
    assert np.abs(rms_norm(x, ones, eps=1e-6) - default).max() > 1e-3


def test_normalised_tokens_have_zero_mean_unit_variance_or_unit_rms():
    x = np.random.default_rng(3).normal(size=(5, 64)) * 10 + 4
    y = layer_norm(x, np.ones(64), np.zeros(64), eps=0.0)
    np.testing.assert_allclose(y.mean(-1), 0, atol=1e-12)
    np.testing.assert_allclose(y.var(-1), 1, atol=1e-12)
    z = rms_norm(x, np.ones(64), eps=0.0)
    np.testing.assert_allclose(np.sqrt((z**2).mean(-1)), 1, atol=1e-12)


def test_norms_keep_float32():
    x = np.ones((2, 4), np.float32)
    w = np.ones(4, np.float32)
    assert layer_norm(x, w, w).dtype == np.float32
    assert rms_norm(x, w).dtype == np.float32


def test_wrong_weight_shape_names_the_shapes():
    with pytest.raises(ValueError, match=r"weight must have shape \(8,\).*\(4,\)"):
        layer_norm(np.ones((2, 8)), np.ones(4))
    with pytest.raises(ValueError, match=r"bias"):
        layer_norm(np.ones((2, 8)), np.ones(8), np.ones(3))
    with pytest.raises(ValueError, match=r"rms_norm"):
        rms_norm(np.ones((2, 8)), np.ones(7))


# --- float16 in float32, as PyTorch's CPU kernels (issue 24) ---

def test_float16_norms_match_pytorch_in_float16():
    import torch
    import torch.nn.functional as F
    x = np.array([[300, -280, 250, 10], [0, 0, 0, 0], [60000, -60000, 1, -1]], np.float16)
    w = np.array([1.0, 0.5, 2.0, -1.0], np.float16)
    b = np.array([0.0, 1.0, -1.0, 0.5], np.float16)
    t = {k: torch.from_numpy(v) for k, v in (("x", x), ("w", w), ("b", b))}
    ours = rms_norm(x, w, eps=1e-6)
    assert ours.dtype == np.float16
    np.testing.assert_array_equal(ours, F.rms_norm(t["x"], (4,), t["w"], eps=1e-6).numpy())
    ours = layer_norm(x, w, b, eps=1e-5)
    theirs = F.layer_norm(t["x"], (4,), t["w"], t["b"], eps=1e-5).numpy()
    np.testing.assert_allclose(ours.astype(float), theirs.astype(float), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(rms_norm(x[:1], np.ones(4, np.float16)).astype(float),
                               [[1.248, -1.165, 1.04, 0.0416]], rtol=1e-3)


@pytest.mark.parametrize("eps", [-1e-5, np.nan, np.inf, "1e-5", True])
def test_norms_refuse_a_bad_eps(eps):
    with pytest.raises(ValueError, match="eps must be a finite number >= 0"):
        rms_norm(np.ones((2, 4)), np.ones(4), eps=eps)
