"""Kimi Linear: KDA layers beside multi-head latent attention, and DeepSeek's experts.

Kimi Team, "Kimi Linear: An Expressive, Efficient Attention Architecture" (2025);
Hugging Face's ``KimiLinearForCausalLM``. Llama's pre-norm wiring and plain RMSNorms,
with the token mixer chosen per layer by ``config.layer_types`` (three KDA layers to
one MLA layer in the released model):
- "linear": KDA (``attention.linear.kda``), the delta rule with a decay per key
  channel, whose fixed-size state the cache keeps;
- "full": chapter 9's MLA with no position encoding at all (NoPE): the KDA layers,
  which read tokens in order, are the model's only sense of position. MLA's "rotated"
  key part is still there but never rotated; the mixer passes every token position
  0, where RoPE is the identity exactly (cos 0 = 1, sin 0 = 0); its two latent
  norms use eps 1e-6 whatever rms_norm_eps is, as Hugging Face builds them.
The feed-forward is DeepSeek-V3's mixture (sigmoid routing, groups, a shared expert,
a routed scale), dense in the first layers (Hugging Face's ``mlp_layer_types``).
"""

# --8<-- [start:imports]
import dataclasses
import functools
from functools import partial

import numpy as np

from attention.blocks import llama_block
from attention.families.llama import (llama_outer, mlp_weights,
                                      rms_final_norm)
from attention.families.mla import (check_mla, deepseek_v3_weights,
                                    latent_attention, mla_shapes)
from attention.families.moe import feed_forward, ffn_shapes
from attention.family import Family, register
from attention.linear.kda import KDAConfig, kda_layer, kda_shapes
from attention.linear.kda import params_from_hf as kda_from_hf
# --8<-- [end:imports]


# --8<-- [start:mixers]
def is_linear(c, i):
    """Whether layer i is a KDA ("linear") layer."""
    return c.layer_types is not None and c.layer_types[i] == "linear"


def kda_mixer(h, p, config, positions, *, trace=None, attend_fn=None,
              dropout=None):
    """KDA as a block's token mixer; attend_fn: the layer's RecurrentSlot
    (its state, h's padding mask: <pad> tokens enter as zeros)."""
    slot = attend_fn
    if slot is not None and slot.valid is not None:
        h = h * slot.valid[..., None]                  # (batch, n, d_model)
    weights = {k[len("linear."):]: v for k, v in p.items()
               if k.startswith("linear.")}
    y, state = kda_layer(h, weights, config.linear,
                         None if slot is None else slot.state)
    if slot is not None:
        slot.save(state)
    return y


# Hugging Face builds MLA's two latent norms with its RMSNorm's default eps,
# 1e-6, whatever rms_norm_eps the rest of the model uses.
LATENT_NORM_EPS = 1e-6


@functools.cache
def latent_config(config):
    """config with MLA's latent-norm eps in place of norm_eps."""
    return dataclasses.replace(config, norm_eps=LATENT_NORM_EPS)


def nope_latent_attention(h, p, config, positions, **kw):
    """MLA without positions: every token at position 0, no rotation."""
    return latent_attention(h, p, latent_config(config),
                            np.zeros_like(positions), **kw)
# --8<-- [end:mixers]


def _block(c, i):
    mixer = kda_mixer if is_linear(c, i) else nope_latent_attention
    return partial(llama_block, mixer=mixer, ffn=feed_forward)


def _layer_shapes(c, i):
    d = c.d_model
    mixer = ({f"linear.{k}": s for k, s in kda_shapes(c.linear).items()}
             if is_linear(c, i) else mla_shapes(c))
    return ({"norm1.weight": (d,)} | mixer | {"norm2.weight": (d,)}
            | ffn_shapes(c, i))


def _check(c):
    """MLA's rules, and the KDA layers' sizes: a KDAConfig of d_model."""
    if c.layer_types is not None and "linear" in c.layer_types and not (
            isinstance(c.linear, KDAConfig) and c.linear.d_model == c.d_model):
        raise ValueError(f"ModelConfig: the linear layers need linear = a "
                         f"KDAConfig with d_model = {c.d_model}, got "
                         f"{c.linear!r}")
    check_mla(c)


def kimi_linear_weights(sd, i, config):
    """Layer i: Hugging Face names both mixers self_attn; the MLA layers
    read as DeepSeek-V3's, the KDA layers through ``attention.linear.kda``."""
    if not is_linear(config, i):
        return deepseek_v3_weights(sd, i, config)
    h = f"model.layers.{i}."
    a = h + "self_attn."
    layer = {k[len(a):]: sd[k] for k in list(sd) if k.startswith(a)}
    return ({"norm1.weight": sd[h + "input_layernorm.weight"],
             "norm2.weight": sd[h + "post_attention_layernorm.weight"]}
            | {f"linear.{k}": v
               for k, v in kda_from_hf(layer, config.linear).items()}
            | mlp_weights(sd, h))


KIMI_LINEAR = register(Family(
    name="kimi_linear",
    # its attention layers are MLA's (the KDA layers: ``layer_mixer``)
    parts={"norm": "rms_norm", "mixer": "latent", "ffn": "moe",
           "wiring": "pre_norm", "positions": "none"},
    block=_block,
    layer_shapes=_layer_shapes,
    final_norm=rms_final_norm,
    norm_shapes=lambda c: {"weight": (c.d_model,)},
    hf_outer=llama_outer,
    hf_layer=kimi_linear_weights,
    check=_check,
    layer_mixer=lambda c, i: "recurrent" if is_linear(c, i) else "attention",
))
