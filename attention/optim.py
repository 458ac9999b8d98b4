"""Optimisers over a flat dict of parameters: plain SGD and Adam.

The model's parameters are one ``dict[str, np.ndarray]`` and its gradients a
dict with the same names, so an optimiser is a loop over names that updates
each array in place.

Adam (Kingma and Ba 2015, Algorithm 1) keeps, per parameter, running averages
of the gradient (m) and of its square (v), corrects both for starting at zero,
and steps by lr · m̂ / (√v̂ + eps): each entry gets its own step size, about lr
in a direction the gradient keeps pointing. ``weight_decay`` is decoupled, as
in AdamW (Loshchilov and Hutter 2019): every step also multiplies each
parameter by (1 - lr · weight_decay). The arithmetic follows torch.optim.Adam
and AdamW (their single-tensor path) operation by operation, so the two agree
to rounding.
"""

# --8<-- [start:optim]
import math

import numpy as np


def sgd_step(params, grads, *, lr):
    """Plain gradient descent, in place: p ← p - lr · g for every parameter."""
    _check_step("sgd_step", params, grads, lr=lr)
    for name, p in params.items():
        p -= lr * grads[name]


def adam_init(params):
    """Adam's state: a step count and two zero arrays (m, v) per parameter."""
    return {"step": 0,
            "m": {name: np.zeros_like(p) for name, p in params.items()},
            "v": {name: np.zeros_like(p) for name, p in params.items()}}


def adam_step(params, grads, state, *, lr=1e-3, betas=(0.9, 0.999),
              eps=1e-8, weight_decay=0.0):
    """One Adam step (AdamW if weight_decay), in place on params and state."""
    _check_step("adam_step", params, grads, lr=lr, betas=betas, eps=eps,
                weight_decay=weight_decay, state=state)
    beta1, beta2 = betas
    state["step"] += 1
    t = state["step"]
    step_size = lr / (1 - beta1**t)  # m̂ = m / (1 - β1ᵗ), folded in
    bias_correction2_sqrt = math.sqrt(1 - beta2**t)  # v̂ = v / (1 - β2ᵗ)
    for name, p in params.items():
        g, m, v = grads[name], state["m"][name], state["v"][name]
        if weight_decay:
            p *= 1 - lr * weight_decay  # decoupled decay (AdamW)
        m += (1 - beta1) * (g - m)  # m ← β1 m + (1 - β1) g
        v *= beta2
        v += (1 - beta2) * g * g  # v ← β2 v + (1 - β2) g²
        p -= step_size * m / (np.sqrt(v) / bias_correction2_sqrt + eps)
# --8<-- [end:optim]


def _number(value):
    return (isinstance(value, (int, float, np.integer, np.floating))
            and not isinstance(value, (bool, np.bool_)))


def _check_step(fn, params, grads, *, lr, betas=(0.0, 0.0), eps=0.0,
                weight_decay=0.0, state=None):
    """The arguments of one optimiser step, or a ValueError (TypeError for
    a parameter that cannot be updated in place) naming the one at fault."""
    for name, value in (("lr", lr), ("eps", eps),
                        ("weight_decay", weight_decay)):
        if not _number(value) or not 0 <= value < math.inf:
            raise ValueError(f"{fn}: {name} must be a finite number >= 0, "
                             f"got {value!r}")
    if (not isinstance(betas, (tuple, list)) or len(betas) != 2
            or not all(_number(b) and 0 <= b < 1 for b in betas)):
        raise ValueError(f"{fn}: betas must be two numbers in [0, 1), "
                         f"got {betas!r}")
    if set(grads) != set(params):
        missing, unknown = set(params) - set(grads), set(grads) - set(params)
        raise ValueError(f"{fn}: grads must have the names of params; "
                         f"missing {sorted(missing)}, unknown "
                         f"{sorted(unknown)}")
    for name, p in params.items():
        if not isinstance(p, np.ndarray) or p.dtype.kind != "f":
            raise TypeError(f"{fn}: params[{name!r}] must be a floating NumPy "
                            f"array (it is updated in place), got "
                            f"{type(p).__name__} {getattr(p, 'dtype', '')}")
        if np.shape(grads[name]) != p.shape:
            raise ValueError(f"{fn}: grads[{name!r}] has shape "
                             f"{np.shape(grads[name])}, the parameter "
                             f"{p.shape}")
        if state is not None and np.shape(state["m"].get(name)) != p.shape:
            raise ValueError(f"{fn}: the state has no moments of shape "
                             f"{p.shape} for {name!r}: make it with "
                             f"adam_init(params)")
