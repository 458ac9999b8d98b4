"""Multi-head latent attention (MLA): cache one small latent per token, not keys and values.

DeepSeek-AI, "DeepSeek-V2" (2024), section 2.1, and "DeepSeek-V3 Technical Report" (2024),
section 2.1.1; Hugging Face's ``DeepseekV3Attention``. Per token, with H heads:
- the keys and values come from one latent c_kv = RMSNorm(x W_dkv) of kv_lora_rank
  features: head h's key is c_kv W_uk[h] (qk_nope_head_dim) and its value c_kv W_uv[h]
  (v_head_dim);
- position enters through a separate rotated part: a key k_rope = RoPE(x W_kr) of
  qk_rope_head_dim features shared by every head, and a per-head query part RoPE(c_q W_qr);
- queries may be low-rank too: c_q = RMSNorm(x W_dq) of q_lora_rank features (else c_q = x),
  q_nope = c_q W_uq.
The cache holds c_kv and k_rope: kv_lora_rank + qk_rope_head_dim numbers per token and
layer, whatever H is.

Absorption. Head h's score is q_nope[h] . (c_kv W_uk[h]) + q_rope[h] . k_rope, and
q_nope[h] . (c_kv W_uk[h]) = (q_nope[h] W_uk[h]ᵀ) . c_kv: fold W_uk into the query and attend
over the latent itself; likewise fold W_uv into W_o. RoPE has to stay apart for this: a
rotation between q and W_uk would depend on the key's position, and no fixed matrix could
be folded.

The cache is the package's ``KVCache``: its "keys" slot holds c_kv (batch, 1, n,
kv_lora_rank) and its "values" slot k_rope (batch, 1, n, qk_rope_head_dim), as Hugging
Face's cache does; ``expand`` turns them into what attention reads.
"""

# --8<-- [start:imports]
from functools import partial

import numpy as np

from attention.blocks import attend, llama_block, record
from attention.families.llama import (llama_outer, mlp_weights,
                                      rms_final_norm)
from attention.families.moe import check_model_moe, feed_forward, ffn_shapes
from attention.families.softcap import capped_logits
from attention.family import Family, register
from attention.model import MLA_ABSORB, MLA_SIZES
from attention.multi_head import merge_heads, split_heads
from attention.norms import rms_norm
from attention.positions import rope
# --8<-- [end:imports]


# --8<-- [start:latent]
def latent_and_queries(x, p, config, positions):
    """The latent c_kv, the shared rotated key and the two query parts.

    x: (batch, n, d_model); positions (n,) or (batch, n). Returns c_kv
    (batch, 1, n, kv_lora_rank), k_rope (batch, 1, n, qk_rope_head_dim),
    q_nope (batch, H, n, qk_nope_head_dim), q_rope (batch, H, n,
    qk_rope_head_dim).
    """
    c, eps, H = config, config.norm_eps, config.n_heads
    c_q = x
    if c.q_lora_rank is not None:  # low-rank queries, normalised
        c_q = rms_norm(x @ p["attn.W_dq"], p["attn.dq_norm.weight"], eps=eps)
    q_nope = split_heads(c_q @ p["attn.W_uq"], H)   # (batch, H, n, d_nope)
    q_rope = split_heads(c_q @ p["attn.W_qr"], H)   # (batch, H, n, d_rope)
    c_kv = rms_norm(x @ p["attn.W_dkv"], p["attn.dkv_norm.weight"], eps=eps)
    c_kv = c_kv[:, None]                            # (batch, 1, n, r)
    k_rope = (x @ p["attn.W_kr"])[:, None]          # (batch, 1, n, d_rope)
    positions = np.asarray(positions)
    if positions.ndim == 2:  # (batch, n) -> (batch, 1, n): for every head
        positions = positions[:, None, :]
    rotate = dict(base=c.rope_base, layout=c.rope_layout,
                  scaling=c.rope_scaling)
    return (c_kv, rope(k_rope, positions, **rotate), q_nope,
            rope(q_rope, positions, **rotate))
# --8<-- [end:latent]


# --8<-- [start:expand]
def expand_keys_values(p, n_heads):
    """Unabsorbed: the latent cache -> every head's keys and values.

    Returns expand(c_kv, k_rope) -> (k (batch, H, n, d_nope + d_rope),
    v (batch, H, n, d_v)): k = [c_kv W_uk[h], k_rope], v = c_kv W_uv[h].
    """
    def expand(c_kv, k_rope):
        k_nope = split_heads(c_kv[:, 0] @ p["attn.W_uk"], n_heads)
        v = split_heads(c_kv[:, 0] @ p["attn.W_uv"], n_heads)
        k_rope = np.broadcast_to(k_rope, (*k_nope.shape[:-1],
                                          k_rope.shape[-1]))
        return np.concatenate([k_nope, k_rope], axis=-1), v
    return expand


def latent_keys_values(c_kv, k_rope):
    """Absorbed: attend over the latent itself, one shared head.

    k = [c_kv, k_rope] (batch, 1, n, r + d_rope); v = c_kv (batch, 1, n, r).
    """
    return np.concatenate([c_kv, k_rope], axis=-1), c_kv
# --8<-- [end:expand]


# --8<-- [start:absorb]
def absorb_key(q_nope, W_uk):
    """Fold the key up-projection into the query: q_nope[h] W_uk[h]ᵀ.

    q_nope: (batch, H, n, d_nope); W_uk: (r, H * d_nope). Returns the
    queries in latent space, (batch, H, n, r): their dot product with
    c_kv equals q_nope[h] . (c_kv W_uk[h]).
    """
    H, d_nope = q_nope.shape[-3], q_nope.shape[-1]
    W = W_uk.reshape(W_uk.shape[0], H, d_nope)      # (r, H, d_nope)
    return np.einsum("bhnd,rhd->bhnr", q_nope, W)   # (batch, H, n, r)


def absorb_value(W_uv, W_o, n_heads):
    """Fold the value up-projection into the output: W_uv[h] W_o[h].

    W_uv: (r, H * d_v); W_o: (H * d_v, d_model). Returns (H * r, d_model):
    head h's latent output times its block is its value output times W_o.
    """
    r, d_v = W_uv.shape[0], W_uv.shape[1] // n_heads
    W_uv = W_uv.reshape(r, n_heads, d_v)            # (r, H, d_v)
    W_o = W_o.reshape(n_heads, d_v, -1)             # (H, d_v, d_model)
    W = np.einsum("rhv,hvd->hrd", W_uv, W_o)        # (H, r, d_model)
    return W.reshape(n_heads * r, -1)               # (H * r, d_model)
# --8<-- [end:absorb]


# --8<-- [start:mla_attention]
def mla_attention(x, p, config, positions, *, absorbed, attend_fn=None,
                  trace=None):
    """MLA's attention branch: x (batch, n, d_model) -> (batch, n, d_model).

    absorbed: attend over the latent with W_uk folded into the queries and
    W_uv into W_o (``absorb_key``, ``absorb_value``); else expand every
    head's keys and values first. Both give the same output. attend_fn:
    as for ``attention_layer`` (a KV cache gets c_kv and k_rope).
    """
    c_kv, k_rope, q_nope, q_rope = latent_and_queries(x, p, config,
                                                      positions)
    H = config.n_heads
    if absorbed:
        q = np.concatenate([absorb_key(q_nope, p["attn.W_uk"]), q_rope],
                           axis=-1)                 # (batch, H, n, r + d_rope)
        expand, W_o = latent_keys_values, absorb_value(
            p["attn.W_uv"], p["attn.W_o"], H)
    else:
        q = np.concatenate([q_nope, q_rope], axis=-1)  # (batch, H, n, d_qk)
        expand, W_o = expand_keys_values(p, H), p["attn.W_o"]
    # The scores are q_nope . k_nope + q_rope . k_rope in both forms: scale
    # by their own size, not by the absorbed query's r + d_rope.
    scale = config.attn_scale or (config.qk_nope_head_dim
                                  + config.qk_rope_head_dim) ** -0.5
    score = dict(scale=scale, expand=expand)
    if attend_fn is None:
        out, weights = attend(q, c_kv, k_rope, **score)
    else:
        out, weights = attend_fn(q, c_kv, k_rope, None, **score)
    heads = merge_heads(out)        # (batch, n, H * (r or d_v))
    record(trace, c_kv=c_kv, k_rope=k_rope, weights=weights, heads=heads)
    return heads @ W_o
# --8<-- [end:mla_attention]


# --8<-- [start:deepseek_v3]
def latent_attention(h, p, config, positions, *, trace=None, attend_fn=None,
                     dropout=None):
    """MLA as a block's token mixer (``attention.blocks.llama_block``):
    absorbed where config.mla_absorb says, "decode" (one new token at a
    time: the cheap way to read a latent cache), "always" or "never".
    dropout: not applied (MLA's weights have no dropout here)."""
    absorbed = {"always": True, "never": False,
                "decode": h.shape[-2] == 1}[config.mla_absorb]
    return mla_attention(h, p, config, positions, absorbed=absorbed,
                         attend_fn=attend_fn, trace=trace)


def mla_shapes(c):
    """MLA's attention parameters, short names."""
    H, d, r = c.n_heads, c.d_model, c.kv_lora_rank
    d_in = d if c.q_lora_rank is None else c.q_lora_rank  # c_q's width
    shapes = {}
    if c.q_lora_rank is not None:
        shapes |= {"attn.W_dq": (d, c.q_lora_rank),
                   "attn.dq_norm.weight": (c.q_lora_rank,)}
    return shapes | {
        "attn.W_uq": (d_in, H * c.qk_nope_head_dim),
        "attn.W_qr": (d_in, H * c.qk_rope_head_dim),
        "attn.W_dkv": (d, r), "attn.dkv_norm.weight": (r,),
        "attn.W_kr": (d, c.qk_rope_head_dim),
        "attn.W_uk": (r, H * c.qk_nope_head_dim),
        "attn.W_uv": (r, H * c.v_head_dim),
        "attn.W_o": (H * c.v_head_dim, d)}


def check_mla(c):
    """MLA's sizes all set (q_lora_rank may be None), its own heads."""
    for name in MLA_SIZES + ("q_lora_rank",):
        value = getattr(c, name)
        if name == "q_lora_rank" and value is None:
            continue
        if (isinstance(value, (bool, np.bool_))
                or not isinstance(value, (int, np.integer)) or value < 1):
            raise ValueError(f"ModelConfig: {name} must be a positive "
                             f"integer for MLA, got {value!r}")
        object.__setattr__(c, name, int(value))
    if c.qk_rope_head_dim % 2:
        raise ValueError(f"ModelConfig: RoPE needs an even qk_rope_head_dim, "
                         f"got {c.qk_rope_head_dim}")
    if c.n_kv_heads != c.n_heads:
        raise ValueError(f"ModelConfig: MLA expands the latent into every "
                         f"head: n_kv_heads must equal n_heads = "
                         f"{c.n_heads}, got {c.n_kv_heads}")
    if c.mla_absorb not in MLA_ABSORB:
        raise ValueError(f"ModelConfig: mla_absorb must be one of "
                         f"{MLA_ABSORB}, got {c.mla_absorb!r}")
    if (c.head_dim is not None or c.qk_norm is not None or c.attn_sinks
            or c.attn_bias):
        raise ValueError("ModelConfig: MLA sets its own head sizes: "
                         "head_dim, qk_norm, attn_sinks and attn_bias are "
                         "not for it")
    check_model_moe(c)


def _layer_shapes(c, i):
    d = c.d_model
    return ({"norm1.weight": (d,)} | mla_shapes(c)
            | {"norm2.weight": (d,)} | ffn_shapes(c, i))


def deepseek_v3_weights(sd, i, config):
    """Block i of DeepSeek-V3: Hugging Face packs W_uq with W_qr
    (q_b_proj or q_proj), W_dkv with W_kr (kv_a_proj_with_mqa) and W_uk with
    W_uv (kv_b_proj), head by head; unpack them (chapter 9)."""
    n_heads = config.n_heads
    h, a = f"model.layers.{i}.", f"model.layers.{i}.self_attn."
    r = sd[a + "kv_a_layernorm.weight"].shape[0]
    p = {}
    if a + "q_a_proj.weight" in sd:  # low-rank queries
        p["attn.W_dq"] = sd[a + "q_a_proj.weight"].T
        p["attn.dq_norm.weight"] = sd[a + "q_a_layernorm.weight"]
        W_q = sd[a + "q_b_proj.weight"].T
    else:
        W_q = sd[a + "q_proj.weight"].T
    d_kr = sd[a + "kv_a_proj_with_mqa.weight"].shape[0] - r  # d_rope
    W_q = W_q.reshape(W_q.shape[0], n_heads, -1)  # (d_in, H, d_nope + d_rope)
    W_kv = sd[a + "kv_a_proj_with_mqa.weight"].T     # (d_model, r + d_rope)
    W_b = sd[a + "kv_b_proj.weight"].T               # (r, H * (d_nope + d_v))
    W_b = W_b.reshape(r, n_heads, -1)                # (r, H, d_nope + d_v)
    d_nope = W_q.shape[-1] - d_kr
    return p | {
        "norm1.weight": sd[h + "input_layernorm.weight"],
        "attn.W_uq": W_q[..., :d_nope].reshape(W_q.shape[0], -1),
        "attn.W_qr": W_q[..., d_nope:].reshape(W_q.shape[0], -1),
        "attn.W_dkv": W_kv[:, :r], "attn.W_kr": W_kv[:, r:],
        "attn.dkv_norm.weight": sd[a + "kv_a_layernorm.weight"],
        "attn.W_uk": W_b[..., :d_nope].reshape(r, -1),
        "attn.W_uv": W_b[..., d_nope:].reshape(r, -1),
        "attn.W_o": sd[a + "o_proj.weight"].T,
        "norm2.weight": sd[h + "post_attention_layernorm.weight"],
    } | mlp_weights(sd, h)


# DeepSeek-V3: Llama's wiring with MLA for the token mixer and its mixture
# of experts where config.moe has one for the layer.
DEEPSEEK_V3 = register(Family(
    name="deepseek_v3",
    parts={"norm": "rms_norm", "mixer": "latent", "ffn": "moe",
           "wiring": "pre_norm", "positions": "rope"},
    block=lambda config, i: partial(llama_block, mixer=latent_attention,
                                    ffn=feed_forward),
    layer_shapes=_layer_shapes,
    final_norm=rms_final_norm,
    norm_shapes=lambda c: {"weight": (c.d_model,)},
    hf_outer=llama_outer,  # Llama's names
    hf_layer=deepseek_v3_weights,
    check=check_mla,
    logits=capped_logits,
))
# --8<-- [end:deepseek_v3]
