"""Cross-layer KV sharing (Gemma 4's ``num_kv_shared_layers``): late layers reuse keys.

Hugging Face's ``Gemma4TextAttention`` (transformers 5.23; Gemma 3n's is the same): the
last ``num_kv_shared_layers`` layers compute queries only. Each attends to the keys and
values of the last earlier layer of its own kind (sliding or full) that computes its
own, so those layers have no W_k, W_v and the cache keeps nothing for them: a model of
L layers, s of them shared, caches L - s layers' keys and values.

Gemma 4's attention layer, the part the sharing sits in:
- each query head and each key head is RMS-normalised with a gain (the plain weight,
  not Gemma 2's 1 + weight), each value head without one;
- RoPE turns q and k after the norm; a full-attention layer may turn only a share of
  its frequencies (Hugging Face's "proportional" RoPE: the first share of the usual
  frequencies, the rest zero, so those features never turn);
- the scores are not scaled (scale 1): the norms already fix the size of q and k;
- sliding layers see the last ``window`` positions, full layers all of them.

Only this layer is built here, not the whole Gemma 4 text model (its per-layer input
embeddings, mixture of experts, keys that double as values, ...): the tests check it
against Hugging Face's attention layers inside a whole tiny model.
"""

# --8<-- [start:imports]
from dataclasses import dataclass

import numpy as np

from attention.blocks import scores_to_output
from attention.kv_cache import window_mask
from attention.norms import rms_norm
from attention.positions import rope
# --8<-- [end:imports]


# --8<-- [start:kv_sources]
def kv_sources(layer_types, n_shared):
    """For each layer, the layer whose keys and values it attends to.

    layer_types: one kind per layer ("sliding", "full", ...); the last
    n_shared layers read the last earlier unshared layer of their kind,
    every other layer its own (Hugging Face's ``kv_sharing_modes``).
    """
    types = tuple(layer_types)
    if (isinstance(n_shared, bool) or not isinstance(n_shared, int)
            or not 0 <= n_shared < len(types)):
        raise ValueError(f"kv_sources: n_shared must be an integer in "
                         f"0..{len(types) - 1} for {len(types)} layers, "
                         f"got {n_shared!r}")
    first = len(types) - n_shared  # the first layer that shares
    sources = list(range(first))
    for i in range(first, len(types)):
        own_kind = [j for j in range(first) if types[j] == types[i]]
        if not own_kind:
            raise ValueError(f"kv_sources: layer {i} is {types[i]!r} and "
                             f"shares, but no layer before {first} is "
                             f"{types[i]!r}")
        sources.append(own_kind[-1])
    return sources
# --8<-- [end:kv_sources]


# --8<-- [start:proportional]
@dataclass(frozen=True)
class ProportionalRope:
    """RoPE that turns the first ``fraction`` of its frequencies only
    (Hugging Face's "proportional"): base ** (-2i / d_head) for
    i < fraction * d_head / 2, zero for the rest. For ``rope(scaling=)``."""
    fraction: float

    def __post_init__(self):
        f = self.fraction
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not (
                0 < f <= 1):
            raise ValueError(f"ProportionalRope: fraction must be in (0, 1], "
                             f"got {f!r}")

    def angles(self, positions, d_head, base):
        turning = int(self.fraction * d_head // 2)
        inv_freq = np.zeros(d_head // 2)
        inv_freq[:turning] = 1.0 / base ** (np.arange(0, 2 * turning, 2)
                                            / d_head)
        positions = np.asarray(positions, dtype=np.float64)
        return positions[..., None] * inv_freq, 1.0
# --8<-- [end:proportional]


# --8<-- [start:shared_attention]
def gemma4_attention(h, p, positions, shared, *, layer, source, n_heads,
                     d_head, base, scaling=None, window=None, eps=1e-6,
                     cache=None):
    """Layer ``layer``'s attention over h (batch, n, d_model), normalised.

    source == layer: compute keys and values (p: attn.W_q, W_k, W_v, W_o,
    q_norm.weight, k_norm.weight), append them to ``cache`` if given, and
    leave them in ``shared[layer]``; else (p without W_k, W_v, k_norm)
    read ``shared[source]``, filled earlier in this forward pass.
    positions: (n,) the tokens' positions (with a cache, its slots); a
    shared layer may take the last tokens only (Hugging Face's
    ``logits_to_keep``), since no later layer reads its keys. No padding.
    """
    b, n, _ = _check_inputs(h, p, positions, layer == source)

    def heads(x):  # (batch, n, heads * d_head) -> (batch, heads, n, d_head)
        return x.reshape(b, n, -1, d_head).transpose(0, 2, 1, 3)

    def turn(x):
        return rope(x, positions, base=base, scaling=scaling)
    q = turn(rms_norm(heads(h @ p["attn.W_q"]), p["attn.q_norm.weight"],
                      eps=eps))
    if source == layer:  # this layer computes (and caches) its own
        k = turn(rms_norm(heads(h @ p["attn.W_k"]), p["attn.k_norm.weight"],
                          eps=eps))
        v = rms_norm(heads(h @ p["attn.W_v"]), np.ones(d_head), eps=eps)
        if cache is None:
            shared[layer] = (k, v, positions)
        else:
            shared[layer] = cache.update(layer, k, v)[:3]
    elif source not in shared:
        raise ValueError(f"gemma4_attention: layer {layer} reads layer "
                         f"{source}'s keys, which this pass has not computed")
    keys, values, key_positions = shared[source]
    group = n_heads // keys.shape[1]
    keys, values = (np.repeat(a, group, axis=1) for a in (keys, values))
    mask = window_mask(positions, key_positions, window=window)
    out, _ = scores_to_output(q, keys, values, mask=mask, scale=1.0)
    return out.transpose(0, 2, 1, 3).reshape(b, n, -1) @ p["attn.W_o"]
# --8<-- [end:shared_attention]


def _check_inputs(h, p, positions, computes_keys):
    """gemma4_attention's h, p and positions, or a ValueError naming them."""
    if np.ndim(h) != 3:
        raise ValueError(f"gemma4_attention: h must be (batch, n, d_model), "
                         f"got shape {np.shape(h)}")
    if np.shape(positions) != (h.shape[1],):
        raise ValueError(f"gemma4_attention: positions must be ({h.shape[1]},)"
                         f", one per token of h, got shape "
                         f"{np.shape(positions)}")
    needed = ["attn.W_q", "attn.W_o", "attn.q_norm.weight"]
    if computes_keys:
        needed += ["attn.W_k", "attn.W_v", "attn.k_norm.weight"]
    missing = [name for name in needed if name not in p]
    if missing:
        raise ValueError(f"gemma4_attention: p lacks {missing}")
    return h.shape
