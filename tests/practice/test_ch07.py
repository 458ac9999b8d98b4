"""Chapter 7's practice references that the package does not provide itself, checked
against PyTorch in float64."""

import math
import warnings

import numpy as np
import pytest

from attention.gpt.clipping import clip_by_global_norm
from attention.practice.ch07 import clip_reference, smoothed_reference

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("norm_type", [1.0, 2.0, 3.7, math.inf])
def test_clipping_by_any_norm_is_pytorchs(norm_type):
    rng = np.random.default_rng(0)
    grads = {"a": rng.normal(size=(3, 4)) * 100, "b": rng.normal(size=5) * 0.1}
    ours, norm = clip_reference(grads, 0.5, norm_type)
    tensors = [torch.tensor(g, requires_grad=True) for g in grads.values()]
    for t, g in zip(tensors, grads.values()):
        t.grad = torch.tensor(g)
    theirs = torch.nn.utils.clip_grad_norm_(tensors, 0.5, norm_type=norm_type)
    assert abs(norm - float(theirs)) <= 1e-12 * norm
    for got, t in zip(ours.values(), tensors):
        np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-12, atol=0)


def test_clipping_with_the_2_norm_is_the_package_s():
    rng = np.random.default_rng(1)
    grads = {"a": rng.normal(size=(4, 4)), "b": rng.normal(size=4)}
    ours, norm = clip_reference(grads, 0.3)
    assert abs(clip_by_global_norm(grads, 0.3) - norm) <= 1e-12 * norm
    for name in grads:
        np.testing.assert_allclose(ours[name], grads[name], rtol=1e-12, atol=0)


@pytest.mark.parametrize("smoothing, ignore_index", [(0.0, -100), (0.2, -1), (0.1, 0),
                                                     (1.0, -100)])
def test_smoothed_cross_entropy_is_pytorchs(smoothing, ignore_index):
    rng = np.random.default_rng(2)
    logits = rng.normal(size=(9, 6)) * 1000  # spread: a naive softmax overflows
    targets = rng.integers(0, 6, size=9)
    targets[[1, 4, 5]] = ignore_index
    theirs = torch.nn.functional.cross_entropy(
        torch.tensor(logits), torch.tensor(targets), label_smoothing=smoothing,
        ignore_index=ignore_index)
    got = smoothed_reference(logits, targets, smoothing, ignore_index)
    assert abs(got - float(theirs)) <= 1e-12 * abs(got)


def test_accumulated_gradient_is_the_mean_over_every_token():
    """Per-token gradients cut into micro-batches of 3, 0, 5 and 1 tokens: weighing
    each micro-batch's mean by its tokens gives the mean over all 9."""
    from attention.practice.ch07 import accumulate_reference

    rng = np.random.default_rng(3)
    per_token = rng.normal(size=(9, 2, 3))
    cuts = [(0, 3), (3, 3), (3, 8), (8, 9)]
    with warnings.catch_warnings():  # the empty micro-batch's mean is NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        grads = [{"W": per_token[a:b].mean(axis=0)} for a, b in cuts]
    got = accumulate_reference(grads, [b - a for a, b in cuts])["W"]
    np.testing.assert_allclose(got, per_token.mean(axis=0), rtol=1e-14, atol=1e-15)
