"""Cross-entropy at its edges against torch.nn.functional.cross_entropy (float64):
targets outside the vocabulary, nothing counted, NaN in an ignored row."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attention.backward.model import loss_and_grads
from attention.loss import cross_entropy, cross_entropy_backward
from attention.model import ModelConfig, init_params


def torch_loss_and_grad(logits, targets):
    z = torch.tensor(logits, dtype=torch.float64, requires_grad=True)
    loss = F.cross_entropy(z.reshape(-1, z.shape[-1]), torch.tensor(targets).reshape(-1))
    loss.backward()
    return loss.item(), z.grad.numpy()


@pytest.mark.parametrize("logits,targets", [
    (np.zeros((0, 3)), np.zeros(0, dtype=np.int64)),             # empty
    (np.zeros((2, 3)), np.array([-100, -100])),                  # all ignored
    (np.array([[1.0, 2.0, 0.0], [np.nan, 0.0, 1.0]]), np.array([0, -100])),  # NaN ignored
    (np.array([[1.0, 1.0, -np.inf], [0.0, 0.0, 0.0]]), np.array([1, 2])),    # ties, -inf
])
def test_cross_entropy_equals_pytorch_at_the_edges(logits, targets):
    loss, grad = torch_loss_and_grad(logits, targets)
    ours = cross_entropy(logits, targets)
    assert (np.isnan(ours) and np.isnan(loss)) or abs(ours - loss) <= 1e-15
    np.testing.assert_allclose(cross_entropy_backward(logits, targets), grad, rtol=0, atol=1e-15)


@pytest.mark.parametrize("target", [-1, 3, -101])
def test_targets_outside_the_vocabulary_are_refused(target):
    logits, targets = np.zeros((2, 3)), np.array([0, target])
    for fn in (cross_entropy, cross_entropy_backward):
        with pytest.raises(ValueError, match=rf"targets must lie in 0\.\.2.*got {target} at \[1\]"):
            fn(logits, targets)
    config = ModelConfig(vocab_size=3, d_model=8, n_layers=1, n_heads=2)
    with pytest.raises(ValueError, match="targets must lie in"):
        loss_and_grads(init_params(config, np.random.default_rng(0)), config,
                       np.array([[0, 1]]), targets[None])


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_a_float32_model_gets_float32_gradients(arch):
    """The loss's gradient keeps the logits' dtype (an int64 count once made it float64,
    and with it the whole backward pass of a float32 model: twice the time)."""
    logits = np.random.default_rng(0).normal(size=(2, 3, 5)).astype(np.float32)
    targets = np.array([[0, 1, -100], [4, 2, 3]])
    assert cross_entropy_backward(logits, targets).dtype == np.float32
    config = ModelConfig(vocab_size=5, d_model=8, n_layers=1, n_heads=2, arch=arch,
                         d_ff=16)
    params = init_params(config, np.random.default_rng(1), dtype=np.float32)
    _, grads, _ = loss_and_grads(params, config, targets.clip(0), targets)
    assert {g.dtype for g in grads.values()} == {np.dtype(np.float32)}
