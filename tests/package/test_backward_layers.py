"""Backward passes of LayerNorm, RMSNorm, GELU (both forms), linear and the cross-entropy
loss: equal to torch.autograd in float64 (1e-12), and gradcheck where the
formula is ours alone (the norms, whose backward we write from two cached numbers a row)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attention.backward.feed_forward import gelu_backward, linear_backward
from attention.backward.norms import (layer_norm_backward, layer_norm_stats, rms_norm_backward,
                                      rms_norm_stats)
from attention.loss import cross_entropy, cross_entropy_backward

TOL = 1e-12


def t(a, grad=True):
    return torch.tensor(a, requires_grad=grad)


def max_diff(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b)), initial=0.0))


def draw(seed, *shapes):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=s) for s in shapes]


@pytest.mark.parametrize("eps", [1e-5, 1e-12])
def test_layer_norm_backward_equals_autograd(eps):
    x, w, b, d_y = draw(0, (2, 5, 8), (8,), (8,), (2, 5, 8))
    x = x * 3 + 1  # not already normalised
    tx, tw, tb = t(x), t(w), t(b)
    F.layer_norm(tx, (8,), tw, tb, eps=eps).backward(t(d_y, False))
    mean, rstd = layer_norm_stats(x, eps=eps)
    assert mean.shape == rstd.shape == (2, 5, 1)  # two numbers a row is all it keeps
    dx, dw, db = layer_norm_backward(d_y, x, w, mean, rstd)
    assert max_diff(dx, tx.grad) <= TOL
    assert max_diff(dw, tw.grad) <= TOL
    assert max_diff(db, tb.grad) <= TOL


def test_rms_norm_backward_equals_autograd():
    x, w, d_y = draw(1, (3, 4, 8), (8,), (3, 4, 8))
    tx, tw = t(x), t(w)
    F.rms_norm(tx, (8,), tw, eps=1e-6).backward(t(d_y, False))
    rrms = rms_norm_stats(x, eps=1e-6)
    dx, dw = rms_norm_backward(d_y, x, w, rrms)
    assert max_diff(dx, tx.grad) <= TOL
    assert max_diff(dw, tw.grad) <= TOL


def test_norm_backwards_pass_gradcheck_as_autograd_functions():
    class LayerNorm(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, b):
            mean, rstd = (torch.tensor(a) for a in layer_norm_stats(x.numpy(), eps=1e-5))
            ctx.save_for_backward(x, w, mean, rstd)
            return (x - mean) * rstd * w + b

        @staticmethod
        def backward(ctx, d_y):
            x, w, mean, rstd = (a.numpy() for a in ctx.saved_tensors)
            return tuple(torch.tensor(g) for g in layer_norm_backward(d_y.numpy(), x, w, mean, rstd))

    class RMSNorm(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            rrms = torch.tensor(rms_norm_stats(x.numpy(), eps=1e-6))
            ctx.save_for_backward(x, w, rrms)
            return x * rrms * w

        @staticmethod
        def backward(ctx, d_y):
            x, w, rrms = (a.numpy() for a in ctx.saved_tensors)
            return tuple(torch.tensor(g) for g in rms_norm_backward(d_y.numpy(), x, w, rrms))

    x, w, b = draw(2, (3, 6), (6,), (6,))
    assert torch.autograd.gradcheck(LayerNorm.apply, (t(x), t(w), t(b)))
    assert torch.autograd.gradcheck(RMSNorm.apply, (t(x), t(w)))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_backward_equals_autograd(approximate):
    x, d_y = draw(3, (4, 50), (4, 50))
    x = x * 4  # reach well into both tails
    tx = t(x)
    F.gelu(tx, approximate=approximate).backward(t(d_y, False))
    assert max_diff(gelu_backward(d_y, x, approximate=approximate), tx.grad) <= TOL


def test_gelu_forms_have_different_gradients():
    x = np.linspace(-3, 3, 61)
    ones = np.ones_like(x)
    gap = max_diff(gelu_backward(ones, x), gelu_backward(ones, x, approximate="tanh"))
    assert 1e-4 < gap < 1e-2  # close, not equal: use the form the model was trained with


def test_gelu_backward_rejects_an_unknown_form():
    with pytest.raises(ValueError, match="'sigmoid'"):
        gelu_backward(np.ones(2), np.ones(2), approximate="sigmoid")


def test_linear_backward_equals_autograd():
    x, W, b, d_y = draw(4, (2, 3, 5), (5, 7), (7,), (2, 3, 7))
    tx, tW, tb = t(x), t(W), t(b)
    (tx @ tW + tb).backward(t(d_y, False))
    dx, dW, db = linear_backward(d_y, x, W)
    for ours, theirs in ((dx, tx.grad), (dW, tW.grad), (db, tb.grad)):
        assert ours.shape == theirs.shape and max_diff(ours, theirs) <= TOL


def test_cross_entropy_and_its_gradient_equal_torch_with_ignored_targets():
    (logits,) = draw(7, (2, 5, 11))
    targets = np.random.default_rng(8).integers(0, 11, size=(2, 5))
    targets[0, :2] = -100  # e.g. the prompt half of a copy task: not scored
    tl = t(logits)
    loss = F.cross_entropy(tl.reshape(-1, 11), torch.tensor(targets).reshape(-1), ignore_index=-100)
    loss.backward()
    assert abs(cross_entropy(logits, targets) - loss.item()) <= TOL
    d_logits = cross_entropy_backward(logits, targets)
    assert max_diff(d_logits, tl.grad) <= TOL
    assert np.all(d_logits[0, :2] == 0)


def test_cross_entropy_rejects_mismatched_targets():
    with pytest.raises(ValueError, match=r"\(2, 5, 11\).*\(2, 4\)"):
        cross_entropy(np.zeros((2, 5, 11)), np.zeros((2, 4), dtype=int))
