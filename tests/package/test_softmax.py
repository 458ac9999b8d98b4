"""softmax: stable, any axis, dtype preserved, equal to PyTorch's."""

import numpy as np
import pytest
import torch

from attention import softmax


def test_rows_are_positive_and_sum_to_one():
    x = np.random.default_rng(0).normal(size=(4, 7))
    w = softmax(x)
    assert (w > 0).all()
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=0, atol=1e-15)


@pytest.mark.parametrize("axis", [0, 1, -1, 2])
def test_matches_torch_softmax_on_any_axis_to_1e_15(axis):
    x = np.random.default_rng(1).normal(scale=5, size=(3, 4, 5))
    expected = torch.softmax(torch.from_numpy(x), dim=axis).numpy()
    assert np.abs(softmax(x, axis=axis) - expected).max() <= 1e-15


def test_large_scores_do_not_overflow():
    w = softmax(np.array([1000.0, 999.0, -1000.0]))
    assert np.isfinite(w).all()
    np.testing.assert_allclose(w, softmax(np.array([0.0, -1.0, -2000.0])))


def test_float32_stays_float32():
    x = np.ones((2, 3), dtype=np.float32)
    assert softmax(x).dtype == np.float32


def test_integers_are_computed_in_float64():
    assert softmax(np.array([1, 2, 3])).dtype == np.float64
