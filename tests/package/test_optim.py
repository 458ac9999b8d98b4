"""Adam and SGD over a dict of parameters equal torch.optim's for the same gradients (1e-12)."""

import numpy as np
import pytest
import torch

from attention.optim import adam_init, adam_step, sgd_step

TOL = 1e-12


def params_and_grads(seed, steps):
    rng = np.random.default_rng(seed)
    params = {"blocks.0.attn.W_q": rng.normal(size=(4, 4)), "blocks.0.ln_1.bias": rng.normal(size=4),
              "wte": rng.normal(size=(7, 4))}
    # gradients of very different sizes, so Adam's per-parameter scaling matters
    grads = [{name: rng.normal(size=p.shape) * 10.0 ** rng.integers(-4, 3) for name, p in params.items()}
             for _ in range(steps)]
    return params, grads


def run_torch(params, grads, make_optimizer):
    tensors = {name: torch.tensor(p, requires_grad=True) for name, p in params.items()}
    optimizer = make_optimizer(list(tensors.values()))
    for step in grads:
        for name, t in tensors.items():
            t.grad = torch.tensor(step[name])
        optimizer.step()
    return {name: t.detach().numpy() for name, t in tensors.items()}


@pytest.mark.parametrize("steps", [1, 2, 25])
@pytest.mark.parametrize("weight_decay", [0.0, 0.1], ids=["adam", "adamw"])
def test_adam_equals_torch(steps, weight_decay):
    params, grads = params_and_grads(steps, steps)
    kwargs = dict(lr=3e-3, betas=(0.9, 0.98), eps=1e-8, weight_decay=weight_decay)
    optimizer = torch.optim.AdamW if weight_decay else torch.optim.Adam
    theirs = run_torch(params, grads, lambda ts: optimizer(ts, foreach=False, **kwargs))
    state = adam_init(params)
    for step in grads:
        adam_step(params, step, state, **kwargs)
    assert state["step"] == steps
    for name in params:
        assert np.max(np.abs(params[name] - theirs[name])) <= TOL


def test_adam_first_step_moves_every_entry_by_about_lr():
    params, grads = params_and_grads(0, 1)
    before = {name: p.copy() for name, p in params.items()}
    adam_step(params, grads[0], adam_init(params), lr=1e-2)
    for name in params:  # m̂/√v̂ = g/|g| on the first step: whatever the gradient's size
        assert np.allclose(np.abs(params[name] - before[name]), 1e-2, rtol=1e-4)


def test_sgd_equals_torch():
    params, grads = params_and_grads(1, 3)
    theirs = run_torch(params, grads, lambda ts: torch.optim.SGD(ts, lr=0.05))
    for step in grads:
        sgd_step(params, step, lr=0.05)
    for name in params:
        assert np.max(np.abs(params[name] - theirs[name])) <= TOL


# --- Issue 24: what an optimiser step accepts ---

@pytest.mark.parametrize("step", ["sgd", "adam"])
@pytest.mark.parametrize("params,grads,error,match", [
    ({"w": np.zeros(3)}, {"w": np.zeros(1)}, ValueError, r"grads\['w'\] has shape \(1,\)"),
    ({"w": np.zeros(3)}, {"w": np.zeros(3), "x": np.zeros(1)}, ValueError, r"unknown \['x'\]"),
    ({"w": np.zeros(3)}, {}, ValueError, r"missing \['w'\]"),
    ({"w": [0.0, 0.0]}, {"w": np.zeros(2)}, TypeError, r"params\['w'\] must be a floating NumPy"),
])
def test_a_step_refuses_gradients_that_do_not_fit(step, params, grads, error, match):
    with pytest.raises(error, match=match):
        if step == "sgd":
            sgd_step(params, grads, lr=0.1)
        else:
            adam_step(params, grads, adam_init({"w": np.zeros(np.shape(params["w"]))}))


@pytest.mark.parametrize("kwargs,match", [
    ({"lr": np.nan}, "lr must be a finite number"), ({"lr": -1.0}, "lr"),
    ({"betas": (1.0, 0.999)}, r"betas must be two numbers in \[0, 1\)"),
    ({"betas": (0.9,)}, "betas"), ({"eps": -1.0}, "eps"), ({"weight_decay": np.inf}, "weight_decay"),
])
def test_adam_refuses_bad_hyperparameters(kwargs, match):
    params = {"w": np.zeros(2)}
    with pytest.raises(ValueError, match=match):
        adam_step(params, {"w": np.ones(2)}, adam_init(params), **kwargs)
