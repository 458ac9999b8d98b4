"""The softmax's Jacobian and vector-Jacobian product against torch.autograd (float64, 1e-12)."""

import numpy as np
import torch

from attention import softmax
from attention.backward import softmax_backward, softmax_jacobian

TOL = 1e-12


def test_jacobian_equals_autograd_jacobian():
    s = np.random.default_rng(0).normal(size=6)
    ours = softmax_jacobian(softmax(s))
    theirs = torch.autograd.functional.jacobian(
        lambda t: torch.softmax(t, dim=-1), torch.tensor(s)).numpy()
    assert ours.shape == (6, 6)
    assert np.max(np.abs(ours - theirs)) <= TOL


def test_jacobian_is_symmetric_and_its_rows_sum_to_zero():
    p = softmax(np.random.default_rng(1).normal(size=(3, 5)))
    jac = softmax_jacobian(p)  # (3, 5, 5)
    assert np.allclose(jac, np.swapaxes(jac, -1, -2), atol=0)
    assert np.max(np.abs(jac.sum(axis=-1))) <= 1e-16 * 10


def test_vjp_equals_autograd_on_every_axis():
    rng = np.random.default_rng(2)
    s, g = rng.normal(size=(2, 3, 7)), rng.normal(size=(2, 3, 7))
    for axis in (-1, 0, 1):
        t = torch.tensor(s, requires_grad=True)
        torch.softmax(t, dim=axis).backward(torch.tensor(g))
        ours = softmax_backward(g, softmax(s, axis=axis), axis=axis)
        assert np.max(np.abs(ours - t.grad.numpy())) <= TOL


def test_vjp_equals_the_jacobian_product_without_forming_it():
    rng = np.random.default_rng(3)
    p, g = softmax(rng.normal(size=(4, 9))), rng.normal(size=(4, 9))
    via_jacobian = np.einsum("ri,rij->rj", g, softmax_jacobian(p))
    assert np.max(np.abs(softmax_backward(g, p) - via_jacobian)) <= TOL


def test_gradient_through_a_saturated_softmax_vanishes():
    p = softmax(np.array([50.0, 0.0, -3.0]))
    assert np.max(np.abs(softmax_backward(np.array([1.0, -2.0, 0.5]), p))) < 1e-20


def test_mismatched_shapes_name_both():
    try:
        softmax_backward(np.zeros(3), np.zeros(4))
    except ValueError as error:
        assert "(3,)" in str(error) and "(4,)" in str(error)
    else:
        raise AssertionError("no error")
