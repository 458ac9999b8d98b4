"""MiniMax-01 (MiniMax-Text-01): lightning attention layers beside softmax attention.

MiniMax, "MiniMax-01: Scaling Foundation Models with Lightning Attention" (2025); Hugging
Face's ``MiniMaxForCausalLM``. The token mixer is chosen per layer by
``config.layer_types`` (seven lightning layers to one softmax layer in the released
model): "linear" runs ``attention.linear.lightning`` (its state kept in the cache),
"full" Llama's RoPE attention. The feed-forward is a mixture of experts with a softmax
router (Mixtral's). The wiring is its own: the residual stream carries the *normed*
input, and each branch is added with two scales, DeepNorm's form (Wang et al.,
"DeepNet", 2022):

    h = norm(x),  x' = alpha h + beta branch(h),

with (alpha, beta) per branch kind in ``config.branch_scales``: after softmax attention,
after lightning attention, after the MLP (all 1 in Hugging Face's defaults).
"""

# --8<-- [start:imports]
from functools import partial

import numpy as np

from attention.blocks import attention_shapes, record, rope_attention
from attention.families.llama import (llama_outer, mlp_weights,
                                      rms_final_norm)
from attention.families.moe import check_model_moe, feed_forward, ffn_shapes
from attention.family import Family, register
from attention.linear.lightning import (LightningConfig, lightning_layer,
                                        lightning_shapes, slopes)
from attention.norms import rms_norm
# --8<-- [end:imports]


def is_linear(c, i):
    """Whether layer i is a lightning ("linear") layer."""
    return c.layer_types is not None and c.layer_types[i] == "linear"


# --8<-- [start:block]
def lightning_mixer(h, p, config, layer, attend_fn=None):
    """Lightning attention as layer ``layer``'s mixer; attend_fn: its
    RecurrentSlot (the state S, h's padding mask)."""
    slot = attend_fn
    weights = {k[len("linear."):]: v for k, v in p.items()
               if k.startswith("linear.")}
    s = slopes(config.linear.n_heads, layer, config.n_layers)
    y, S = lightning_layer(h, weights, config.linear, s,
                           None if slot is None else slot.state,
                           valid=None if slot is None else slot.valid)
    if slot is not None:
        slot.save(S)
    return y


def minimax_block(x, p, config, positions, *, trace=None, attend_fn=None,
                  dropout=None, layer):
    """MiniMax's decoder block: each branch added to its normed input,
    alpha * h + beta * branch(h). dropout: not applied."""
    (a_full, b_full), (a_lin, b_lin), (a_mlp, b_mlp) = (
        config.branch_scales or ((1.0, 1.0),) * 3)
    eps = config.norm_eps
    h = rms_norm(x, p["norm1.weight"], eps=eps)
    if is_linear(config, layer):
        x_mid = a_lin * h + b_lin * lightning_mixer(h, p, config, layer,
                                                    attend_fn)
    else:
        x_mid = a_full * h + b_full * rope_attention(
            h, p, config, positions, trace=trace, attend_fn=attend_fn)
    h2 = rms_norm(x_mid, p["norm2.weight"], eps=eps)
    out = a_mlp * h2 + b_mlp * feed_forward(h2, p, config, trace=trace)
    record(trace, x=x, norm1=h, x_mid=x_mid, norm2=h2, out=out)
    return out
# --8<-- [end:block]


def _layer_shapes(c, i):
    d = c.d_model
    mixer = ({f"linear.{k}": s for k, s in lightning_shapes(c.linear).items()}
             if is_linear(c, i) else attention_shapes(c))
    return ({"norm1.weight": (d,)} | mixer | {"norm2.weight": (d,)}
            | ffn_shapes(c, i))


def _check(c):
    """The lightning layers' sizes: a LightningConfig of d_model."""
    if c.layer_types is not None and "linear" in c.layer_types and not (
            isinstance(c.linear, LightningConfig)
            and c.linear.d_model == c.d_model):
        raise ValueError(f"ModelConfig: the linear layers need linear = a "
                         f"LightningConfig with d_model = {c.d_model}, got "
                         f"{c.linear!r}")
    check_model_moe(c)


def _check_slopes(sd, a, config, i):
    """Hugging Face stores each lightning layer's slopes and the decays it
    derives from them; they must be the slopes this layer computes."""
    for name in ("query_decay", "key_decay", "diagonal_decay"):
        sd[a + name]  # derived from slope_rate and block_size: read
    stored = np.ravel(sd[a + "slope_rate"])
    s = slopes(config.linear.n_heads, i, config.n_layers)
    if stored.shape != s.shape or not np.allclose(stored, s, rtol=1e-6,
                                                  atol=0):
        raise ValueError(f"from_hf_state_dict: {a}slope_rate = {stored} "
                         f"is not layer {i}'s slopes {s}")


def minimax_weights(sd, i, config):
    """Layer i: Llama's names for softmax attention and the norms, the
    mixture's as Mixtral's; a lightning layer's qkv_proj holds each head's
    q, k, v side by side, its output_gate the gate."""
    h = f"model.layers.{i}."
    a = h + "self_attn."
    if not is_linear(config, i):
        mixer = {f"attn.W_{x}": sd[f"{a}{x}_proj.weight"].T for x in "qkvo"}
    else:
        _check_slopes(sd, a, config, i)
        mixer = {"linear.W_qkv": sd[a + "qkv_proj.weight"].T,
                 "linear.norm.weight": sd[a + "norm.weight"],
                 "linear.W_gate": sd[a + "output_gate.weight"].T,
                 "linear.W_o": sd[a + "out_proj.weight"].T}
    return ({"norm1.weight": sd[h + "input_layernorm.weight"],
             "norm2.weight": sd[h + "post_attention_layernorm.weight"]}
            | mixer | mlp_weights(sd, h))


MINIMAX = register(Family(
    name="minimax",
    parts={"norm": "rms_norm", "mixer": "hybrid", "ffn": "moe",
           "wiring": "scaled_residual", "positions": "rope"},
    block=lambda c, i: partial(minimax_block, layer=i),
    layer_shapes=_layer_shapes,
    final_norm=rms_final_norm,
    norm_shapes=lambda c: {"weight": (c.d_model,)},
    hf_outer=llama_outer,
    hf_layer=minimax_weights,
    check=_check,
    layer_mixer=lambda c, i: "recurrent" if is_linear(c, i) else "attention",
))
