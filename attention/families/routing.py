"""Routing a token to k of n_experts experts: which ones, and with what weights.

Shazeer et al., "Outrageously Large Neural Networks: The Sparsely-Gated Mixture-of-Experts
Layer" (2017), section 2.1 (top-k gating); Jiang et al., "Mixtral of Experts" (2024),
section 2.1; DeepSeek-AI, "DeepSeek-V3 Technical Report" (2024), section 2.1.2 (sigmoid
affinities, a bias used only to choose, node-limited routing: groups);
OpenAI, "gpt-oss-120b & gpt-oss-20b Model Card" (2025), section 2.1 (a router with a
bias, softmax over the chosen experts).

A router is a matrix W_r (d_model, n_experts); a token's router logits are x W_r. Three
rules turn them into k expert indices and k weights:
- ``softmax_top_k`` (Mixtral, Qwen3-MoE): softmax over all experts, keep the k largest
  probabilities, renormalise them to sum to one (Qwen3-MoE only where norm_topk_prob);
- ``top_k_softmax`` (gpt-oss): keep the k largest logits, softmax over those k alone.
  The same choices and, renormalised, the same weights: the softmax's normaliser cancels;
- ``sigmoid_top_k`` (DeepSeek-V3): scores s = sigmoid(logits); choose by s + bias, only
  among the experts of the best topk_group of n_group groups; weigh by s itself,
  renormalised, times a constant.

Ties: ``top_k`` keeps the lower expert index among equal scores (a stable sort).
torch.topk's choice among equal values is not documented (PyTorch 2.13 on a CPU gives
indices 2 and 4 as the top two of [1, 2, 2, 0, 2]), so the package's choices equal Hugging
Face's only where no scores tie.
"""

# --8<-- [start:imports]
import numpy as np

from attention.softmax import softmax
# --8<-- [end:imports]


# --8<-- [start:top_k]
def top_k(scores, k):
    """Indices (..., k) of the k largest scores along the last axis,
    largest first; among equal scores the lower index comes first."""
    scores = np.asarray(scores)
    n = scores.shape[-1] if scores.ndim else 0
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not (
            1 <= k <= n):
        raise ValueError(f"top_k: k must be an integer in 1..{n} (the number "
                         f"of experts, the last axis of shape {scores.shape}),"
                         f" got {k!r}")
    # A stable sort of -scores keeps equal scores in index order.
    return np.argsort(-scores, axis=-1, kind="stable")[..., :k]


def sigmoid(x):
    """1 / (1 + exp(-x)), without overflow warnings for large -x."""
    with np.errstate(over="ignore"):  # exp(-x) = inf gives 0, as it should
        return 1.0 / (1.0 + np.exp(-x))
# --8<-- [end:top_k]


# --8<-- [start:softmax_top_k]
def softmax_top_k(logits, k, *, renormalise=True):
    """Mixtral's and Qwen3-MoE's router: logits (..., n_experts) ->
    (indices (..., k), weights (..., k)).

    Softmax over every expert, then the k most probable; renormalise:
    divide their probabilities by their sum (Mixtral always does).
    """
    p = softmax(logits, axis=-1)                    # (..., n_experts)
    chosen = top_k(p, k)                            # (..., k)
    weights = np.take_along_axis(p, chosen, axis=-1)
    if renormalise:
        weights = weights / weights.sum(axis=-1, keepdims=True)
    return chosen, weights


def top_k_softmax(logits, k):
    """gpt-oss's router: the k largest logits, a softmax over them alone."""
    chosen = top_k(logits, k)                       # (..., k)
    return chosen, softmax(np.take_along_axis(logits, chosen, axis=-1),
                           axis=-1)
# --8<-- [end:softmax_top_k]


# --8<-- [start:sigmoid_top_k]
def sigmoid_top_k(logits, k, *, bias, n_group=1, topk_group=1,
                  renormalise=True, scale=1.0):
    """DeepSeek-V3's router: logits (..., n_experts) -> (indices, weights).

    s = sigmoid(logits). The choice uses s + bias (n_experts,), a bias that
    training moves to balance the load and that never enters the weights.
    With n_group > 1 the experts form n_group equal groups; a group's score
    is the sum of its two best s + bias, and only the experts of the best
    topk_group groups may be chosen. Weights: s of the chosen, divided by
    their sum (+ 1e-20, as DeepSeek's code) if renormalise, times scale.
    """
    s = sigmoid(logits)                             # (..., n_experts)
    _check_groups(s.shape, k, bias, n_group, topk_group)
    choice = s + bias
    if n_group > 1:
        n = s.shape[-1]
        groups = choice.reshape(*s.shape[:-1], n_group, n // n_group)
        best_two = np.sort(groups, axis=-1)[..., -2:].sum(axis=-1)
        kept = np.zeros(best_two.shape, dtype=bool)  # (..., n_group)
        np.put_along_axis(kept, top_k(best_two, topk_group), True, axis=-1)
        kept = np.repeat(kept, n // n_group, axis=-1)  # (..., n_experts)
        choice = np.where(kept, choice, -np.inf)
    chosen = top_k(choice, k)                       # (..., k)
    weights = np.take_along_axis(s, chosen, axis=-1)
    if renormalise:
        weights = weights / (weights.sum(axis=-1, keepdims=True) + 1e-20)
    return chosen, weights * scale
# --8<-- [end:sigmoid_top_k]


def _whole(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _check_groups(shape, k, bias, n_group, topk_group):
    """A ValueError naming the argument of ``sigmoid_top_k`` that does not
    fit logits of ``shape``: bias (n_experts,), n_group, topk_group, k."""
    if not shape:
        raise ValueError("sigmoid_top_k: logits must have a last axis of "
                         "experts, got a scalar")
    n = shape[-1]
    if np.shape(bias) != (n,):
        raise ValueError(f"sigmoid_top_k: bias must have shape ({n},), one "
                         f"per expert of logits {shape}, got shape "
                         f"{np.shape(bias)}")
    if not _whole(n_group) or not 1 <= n_group <= n:
        raise ValueError(f"sigmoid_top_k: n_group must be an integer in "
                         f"1..{n} (the experts), got {n_group!r}")
    if n_group == 1:  # no groups: topk_group is not used
        return
    per_group, rest = divmod(n, n_group)
    if rest or per_group < 2:
        raise ValueError(f"sigmoid_top_k: n_group = {n_group} must split the "
                         f"{n} experts into equal groups of at least 2 (a "
                         f"group's score is the sum of its two best)")
    if not _whole(topk_group) or not 1 <= topk_group <= n_group:
        raise ValueError(f"sigmoid_top_k: topk_group must be an integer in "
                         f"1..{n_group} (n_group), got {topk_group!r}")
    if _whole(k) and k > topk_group * per_group:
        raise ValueError(f"sigmoid_top_k: k = {k} is more than the "
                         f"{topk_group * per_group} experts of the "
                         f"topk_group = {topk_group} groups it may use")
