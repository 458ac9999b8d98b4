"""Load balance: how many tokens each expert gets, capacity, and the auxiliary loss.

Lepikhin et al., "GShard" (2020), section 2.2 (expert capacity); Fedus et al., "Switch
Transformers" (2021), section 2.2, equations (4)-(6) (the auxiliary loss); DeepSeek-AI,
"DeepSeek-V3 Technical Report" (2024), section 2.1.2 (balance without the loss: a bias
moved after every step); Jiang et al.,
"Mixtral of Experts" (2024) and Hugging Face's ``load_balancing_loss_func`` (the same loss
for top-k routing, which the tests compare with); Zoph et al., "ST-MoE: Designing Stable
and Transferable Sparse Expert Models" (2022), section 3.1, equation (5) (the router
z-loss, compared with Hugging Face's Switch Transformers ``router_z_loss_func``).

With T tokens routed to k of E experts, f_e = (assignments to expert e) / T (the f sum
to k) and P_e = the mean over tokens of the router's softmax probability of e:

    loss = E * sum_e f_e P_e

A router that spreads both evenly (f_e = k / E, P_e = 1 / E) gives k. The counts f are
piecewise constant in the logits, so the gradient flows through P alone: d loss / d P_e
= E f_e, the same for every token, then back through each token's softmax. Training adds
the loss, times a small coefficient (Hugging Face's ``router_aux_loss_coef``, by default
0.001), to the language-model loss.
"""

# --8<-- [start:imports]
import math

import numpy as np

from attention.backward.softmax import softmax_backward
from attention.families.routing import top_k
from attention.softmax import logsumexp, softmax
# --8<-- [end:imports]


# --8<-- [start:capacity]
def tokens_per_expert(indices, n_experts):
    """How many (token, slot) assignments each expert got: (n_experts,)."""
    indices = np.asarray(indices)
    if indices.size and (indices.min() < 0 or indices.max() >= n_experts):
        raise ValueError(f"tokens_per_expert: indices must lie in "
                         f"0..{n_experts - 1}, got {indices.min()}.."
                         f"{indices.max()}")
    return np.bincount(indices.ravel(), minlength=n_experts)


def expert_capacity(n_tokens, top_k, n_experts, factor=1.0):
    """GShard's and Switch's fixed buffer per expert: the even share of
    the n_tokens * top_k assignments, times a capacity factor, rounded up."""
    for name, value, low in (("n_tokens", n_tokens, 0), ("top_k", top_k, 1),
                             ("n_experts", n_experts, 1)):
        if (isinstance(value, bool) or not isinstance(value, (int, np.integer))
                or value < low):
            raise ValueError(f"expert_capacity: {name} must be an integer >= "
                             f"{low}, got {value!r}")
    if (isinstance(factor, bool) or not isinstance(
            factor, (int, float, np.integer, np.floating))
            or not 0 < factor < math.inf):
        raise ValueError(f"expert_capacity: factor must be a positive finite "
                         f"number (1: the even share), got {factor!r}")
    return math.ceil(factor * n_tokens * top_k / n_experts)


def overflow(counts, capacity):
    """Assignments beyond capacity: dropped by a capacity-limited layer
    (the token then skips that expert), kept by a dropless one."""
    return int(np.maximum(np.asarray(counts) - capacity, 0).sum())
# --8<-- [end:capacity]


# --8<-- [start:loss]
def _check_logits(logits, k, what):
    logits = np.asarray(logits)
    if logits.ndim != 2 or logits.dtype.kind != "f":
        raise ValueError(f"{what}: router_logits must be floats of shape "
                         f"(tokens, n_experts), got dtype {logits.dtype} and "
                         f"shape {logits.shape}")
    return logits


def load_balancing_loss(router_logits, k):
    """E * sum_e f_e P_e for router_logits (tokens, n_experts), top-k."""
    logits = _check_logits(router_logits, k, "load_balancing_loss")
    T, E = logits.shape
    p = softmax(logits, axis=-1)                    # (tokens, n_experts)
    f = tokens_per_expert(top_k(p, k), E) / T       # (n_experts,), sums to k
    return E * float(np.sum(f * p.mean(axis=0)))


def load_balancing_loss_backward(router_logits, k):
    """d loss / d router_logits (tokens, n_experts), the counts f held
    fixed: each token's softmax backward of E f / T."""
    logits = _check_logits(router_logits, k, "load_balancing_loss_backward")
    T, E = logits.shape
    p = softmax(logits, axis=-1)                    # (tokens, n_experts)
    f = tokens_per_expert(top_k(p, k), E) / T
    d_p = np.broadcast_to(E * f / T, p.shape)       # d loss / d p
    return softmax_backward(d_p, p)
# --8<-- [end:loss]


# --8<-- [start:z_loss]
def router_z_loss(router_logits):
    """Mean over tokens of logsumexp(logits)^2: small when the router's
    logits stay near zero, whatever their ranking (ST-MoE's z-loss)."""
    logits = _check_logits(router_logits, None, "router_z_loss")
    return float(np.mean(logsumexp(logits, axis=-1) ** 2))
# --8<-- [end:z_loss]


# --8<-- [start:bias_update]
def update_selection_bias(bias, counts, rate):
    """DeepSeek-V3's balance without a loss: after a training step, lower
    the selection bias of every overloaded expert by rate and raise it for
    every underloaded one (against the mean count); only the choice moves,
    never the weights (``attention.families.routing.sigmoid_top_k``)."""
    counts = np.asarray(counts, dtype=np.float64)
    if np.shape(bias) != counts.shape:
        raise ValueError(f"update_selection_bias: bias {np.shape(bias)} and "
                         f"counts {counts.shape} must have one entry per "
                         f"expert")
    return bias + rate * np.sign(counts.mean() - counts)
# --8<-- [end:bias_update]
