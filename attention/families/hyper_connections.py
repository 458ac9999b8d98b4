"""Manifold-constrained hyper-connections: a residual stream of several streams.

Xie et al. (2026), as DeepSeek-V4 uses them (DeepSeek-AI, "DeepSeek-V4", 2026, section
2.2; Hugging Face's ``DeepseekV4HyperConnection`` and ``DeepseekV4HyperHead``). The
residual stream is N streams, (batch, n, N, d). Around each branch (attention, the
feed-forward) a hyper-connection reads all N streams of a token (flattened,
RMS-normalised without a weight, one linear map) and gives three sets of weights:

- pre (N,): sigmoid weights that collapse the streams into the branch's input;
- post (N,): 2 sigmoid weights that spread the branch's output back over the streams;
- comb (N, N): how the streams mix on the residual path, a softmax pushed towards a
  doubly stochastic matrix (rows and columns summing to 1) by Sinkhorn-Knopp
  iterations, so that mixing neither grows nor shrinks the streams.

After the last layer a head collapses the streams with sigmoid weights of its own.
"""

import numpy as np


def unit_rms(x, eps):
    """RMSNorm without a weight, over the last axis."""
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


# --8<-- [start:hyper]
def hyper_weights(streams, p, *, iters, hc_eps, eps):
    """One hyper-connection's weights for streams (batch, n, N, d):
    (pre (batch, n, N), post (batch, n, N), comb (batch, n, N, N)).
    p: fn (N d, N (2 + N)), base (N (2 + N),), scale (3,)."""
    N = streams.shape[-2]
    flat = unit_rms(streams.reshape(*streams.shape[:2], -1), eps)
    mix = flat @ p["fn"]                              # (batch, n, N(2 + N))
    a, b, c = p["scale"]
    pre = sigmoid(mix[..., :N] * a + p["base"][:N]) + hc_eps
    post = 2 * sigmoid(mix[..., N:2 * N] * b + p["base"][N:2 * N])
    logits = (mix[..., 2 * N:] * c + p["base"][2 * N:]).reshape(
        *mix.shape[:2], N, N)
    comb = np.exp(logits - logits.max(axis=-1, keepdims=True))
    comb = comb / comb.sum(axis=-1, keepdims=True) + hc_eps
    comb = comb / (comb.sum(axis=-2, keepdims=True) + hc_eps)
    for _ in range(iters - 1):  # towards rows and columns summing to 1
        comb = comb / (comb.sum(axis=-1, keepdims=True) + hc_eps)
        comb = comb / (comb.sum(axis=-2, keepdims=True) + hc_eps)
    return pre, post, comb


def hyper_branch(streams, p, branch, **settings):
    """streams -> branch(collapsed input), spread back, plus the mixed
    streams: new_k = post_k * out + sum_j comb[j, k] streams_j.
    settings: iters, hc_eps, eps, as for ``hyper_weights``."""
    if np.ndim(streams) != 4:
        raise ValueError(f"hyper_branch: streams must be (batch, n, N, d), "
                         f"got shape {np.shape(streams)}")
    pre, post, comb = hyper_weights(streams, p, **settings)
    out = branch((pre[..., None] * streams).sum(axis=-2))  # (batch, n, d)
    mixed = np.einsum("bnjk,bnjd->bnkd", comb, streams)
    return post[..., None] * out[..., None, :] + mixed


def hyper_head(streams, p, hc_eps, eps):
    """The last collapse: streams (batch, n, N, d) -> (batch, n, d).
    p: fn (N d, N), base (N,), scale (1,)."""
    flat = unit_rms(streams.reshape(*streams.shape[:2], -1), eps)
    pre = sigmoid(flat @ p["fn"] * p["scale"] + p["base"]) + hc_eps
    return (pre[..., None] * streams).sum(axis=-2)
# --8<-- [end:hyper]
