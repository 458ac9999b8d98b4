"""The finite-difference checker: it passes right gradients and catches wrong ones."""

import numpy as np
import pytest

from attention import attention, softmax
from attention.backward import attention_backward, gradient_check, numerical_gradient


def test_numerical_gradient_of_a_known_function():
    x = np.array([0.5, -1.0, 2.0])
    grad = numerical_gradient(lambda a: np.sum(a**3), x)
    assert np.max(np.abs(grad - 3 * x**2)) < 1e-8
    assert np.array_equal(x, [0.5, -1.0, 2.0])  # restored


def test_passes_the_attention_backward_and_catches_a_wrong_one():
    rng = np.random.default_rng(0)
    q, k, v, d_out = (rng.normal(size=(5, 4)) for _ in range(4))

    def loss_of_q(q_):  # L = Σ dO ⊙ attention(q, k, v): its gradient in O is dO
        return np.sum(d_out * attention(q_, k, v, causal=True))

    dq, _, _ = attention_backward(d_out, q, k, v, causal=True)
    ok, error = gradient_check(loss_of_q, q, dq)
    assert ok and error < 1e-8

    wrong_scale = dq * np.sqrt(4)  # forgot the 1/√d of the scores
    ok, error = gradient_check(loss_of_q, q, wrong_scale)
    assert not ok and error == pytest.approx(0.5, abs=1e-6)  # 2x too big: off by half its size

    def backward_without_the_softmax_correction():  # dS = P ⊙ dP, no "- rowsum"
        _, p = attention(q, k, v, causal=True, return_weights=True)
        return (p * (d_out @ v.T)) @ k / 2.0

    ok, error = gradient_check(loss_of_q, q, backward_without_the_softmax_correction())
    assert not ok and error > 1e-2


def test_sampled_entries_only():
    x = np.random.default_rng(1).normal(size=(30, 30))
    grad = numerical_gradient(lambda a: np.sum(softmax(a) ** 2), x, entries=20)
    assert np.sum(~np.isnan(grad)) == 20


def test_float32_is_refused():
    with pytest.raises(TypeError, match="float64"):
        numerical_gradient(np.sum, np.ones(3, dtype=np.float32))


# --- Issue 24: NaN, inf and nothing checked are not a pass ---

@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_a_function_returning_nan_or_inf_does_not_pass(value):
    x = np.ones(3)
    with pytest.raises(ValueError, match="finite differences need finite values"):
        gradient_check(lambda a: value * a.sum(), x, np.ones(3))
    ok, error = gradient_check(lambda a: a.sum(), x, np.full(3, value))
    assert not ok


def test_checking_no_entries_is_refused():
    with pytest.raises(ValueError, match="entries must be None"):
        gradient_check(lambda a: a.sum(), np.ones(3), np.ones(3), entries=0)
